#!/bin/sh
# deps.sh build|test|fuzz|report|lab|linux: install the Debian packages sprig needs when they are
# missing (as root, with apt-get), so that README's commands work on a fresh
# Debian 12 machine.
set -eu
need=""
want() { # want PACKAGE PATH: the package is needed if PATH does not exist
	[ -e "$2" ] || need="$need $1"
}
want_cmd() {
	command -v "$2" >/dev/null 2>&1 || need="$need $1"
}
want_cmd gcc gcc
want_cmd make make
want_cmd python3 python3
want_cmd grub-common grub-mkrescue
want grub-pc-bin /usr/lib/grub/i386-pc/multiboot2.mod
want grub-efi-amd64-bin /usr/lib/grub/x86_64-efi/multiboot2.mod
want_cmd xorriso xorriso
want_cmd mtools mformat
want_cmd qemu-system-x86 qemu-system-x86_64
want ovmf /usr/share/OVMF/OVMF_CODE_4M.fd
# The fuzz targets (make fuzz, and make test's fuzz suite): clang 14 with its
# libFuzzer runtime.
case "${1:-build}" in test | fuzz)
	want_cmd clang clang
	for f in /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a; do
		want libclang-rt-14-dev "$f"
	done ;;
esac
if [ "${1:-build}" = test ]; then
	want_cmd bochs bochs
	# bochs needs some display plugin; the terminal one is the lightest
	# (the tests use bochs' own rfb display, headless).
	want bochs-term /usr/lib/x86_64-linux-gnu/bochs/plugins/libbx_term_gui.so
	want bochsbios /usr/share/bochs/BIOS-bochs-latest
	want vgabios /usr/share/vgabios/vgabios.bin
	want_cmd valgrind valgrind
	# the report suite renders a recorded run with matplotlib
	want python3-matplotlib /usr/lib/python3/dist-packages/matplotlib/__init__.py
fi
# make lab-check (and make test's lab module): LAVA's dispatcher, which
# brings python3-jinja2 and python3-yaml, and telnet, the board device's
# serial connection command that lava-run --validate looks for.
case "${1:-build}" in test | lab)
	want lava-dispatcher /usr/bin/lava-run
	want_cmd telnet telnet ;;
esac
# The Linux guest's initramfs (guests/linux/linux.mk) is a cpio archive;
# its example disk an ext2 file system.
if [ "${1:-build}" = linux ] || [ "${1:-build}" = test ]; then
	want_cmd cpio cpio
	want_cmd e2fsprogs mke2fs
fi
# make report: Bochs for its VMX rows, and matplotlib for its plots.
if [ "${1:-build}" = report ]; then
	want_cmd bochs bochs
	want bochs-term /usr/lib/x86_64-linux-gnu/bochs/plugins/libbx_term_gui.so
	want bochsbios /usr/share/bochs/BIOS-bochs-latest
	want vgabios /usr/share/vgabios/vgabios.bin
	want python3-matplotlib /usr/lib/python3/dist-packages/matplotlib/__init__.py
fi
[ -z "$need" ] && exit 0
echo "deps: installing$need"
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$need; run as root or install them with apt-get" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $need >/dev/null
