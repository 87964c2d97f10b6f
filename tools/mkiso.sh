#!/bin/sh
# mkiso.sh ELF ISO "KERNEL ARGS" [MODULE...]: a hybrid BIOS/UEFI GRUB rescue ISO
# that boots ELF with multiboot2, console on COM1; each MODULE's string is its
# file name without .elf. Words of ARGS are passed as
# written in grub.cfg (GRUB strips quotes and re-quotes words with spaces).
# Video: GRUB under UEFI hands over the GOP framebuffer (all_video finds it);
# under BIOS it keeps VGA text mode, sprig's header asking for no framebuffer.
# mkiso.sh --cfg GRUB_CFG ELF ISO: the same image, GRUB_CFG its grub.cfg in
# place of the one written here (tests boot README.md's entry so).
set -eu
cfg=
if [ "$1" = --cfg ]; then
	cfg=$2
	shift 2
fi
elf=$1 iso=$2 args=${3:-}
shift $(($# < 3 ? $# : 3))
dir=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$dir" "$log"' EXIT
mkdir -p "$dir/boot/grub"
cp "$elf" "$dir/boot/sprig.elf"
{
	echo 'set timeout=0'
	echo 'insmod all_video'
	echo 'serial --unit=0 --speed=115200'
	echo 'terminal_input serial console'
	echo 'terminal_output serial console'
	echo "menuentry sprig {"
	echo "  multiboot2 /boot/sprig.elf $args"
	n=0
	for m in "$@"; do
		cp "$m" "$dir/boot/mod$n"
		name=$(basename "$m")
		echo "  module2 /boot/mod$n ${name%.elf}"
		n=$((n + 1))
	done
	echo "  boot"
	echo "}"
} > "$dir/boot/grub/grub.cfg"
if [ -n "$cfg" ]; then
	cp "$cfg" "$dir/boot/grub/grub.cfg"
fi
grub-mkrescue -o "$iso" "$dir" >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
