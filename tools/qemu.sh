#!/bin/sh
# qemu.sh bios|uefi ISO [extra QEMU args]: boot a sprig ISO under QEMU's software
# emulation (SVM with nested paging), COM1 on this terminal. Ctrl-A X quits.
set -eu
fw=$1 iso=$2
shift 2
mem=${QEMU_MEM:-1G}
set -- -accel tcg -cpu max -m "$mem" -display none -serial mon:stdio -no-reboot \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -cdrom "$iso" "$@"
if [ "$fw" = uefi ]; then
	vars=$(mktemp)
	trap 'rm -f "$vars"' EXIT
	cp /usr/share/OVMF/OVMF_VARS_4M.fd "$vars"
	set -- -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
		-drive if=pflash,format=raw,unit=1,file="$vars" "$@"
fi
exec qemu-system-x86_64 "$@"
