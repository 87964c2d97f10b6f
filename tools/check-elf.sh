#!/bin/sh
# check-elf.sh ELF: the image must be a multiboot2 kernel GRUB accepts (when
# grub-file is installed) and small enough to stay clear of firmware-reserved
# memory (OVMF reserves parts of 0x800000-0x900000).
set -eu
end=$(${NM:-nm} "$1" | awk '$3 == "__image_end" { print $1 }')
if [ $((0x$end)) -gt $((0x800000)) ]; then
	echo "check-elf: image ends at 0x$end, above 8 MiB" >&2
	exit 1
fi
if command -v grub-file >/dev/null 2>&1 && ! grub-file --is-x86-multiboot2 "$1"; then
	echo "check-elf: $1 is not a multiboot2 kernel" >&2
	exit 1
fi
