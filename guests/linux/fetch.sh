#!/bin/sh
# fetch.sh DIR: Debian's stock amd64 kernel (the version linux-image-amd64
# depends on) and busybox-static, downloaded with apt-get and unpacked with
# dpkg-deb (in DIR/pkg, removed after), never installed; DIR/vmlinuz is the kernel and
# DIR/busybox the static busybox. Kept once there.
set -eu
dir=$1
rm -rf "$dir/pkg"
mkdir -p "$dir/debs" "$dir/pkg"
kernel=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
if [ -z "$kernel" ]; then
	apt-get update -qq
	kernel=$(apt-cache depends linux-image-amd64 |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
fi
[ -n "$kernel" ] || { echo "fetch.sh: no kernel package behind linux-image-amd64" >&2; exit 1; }
# apt-get download writes to the current directory (as _apt when it can).
(cd "$dir/debs" && rm -f ./*.deb && apt-get download -q "$kernel" busybox-static)
for deb in "$dir"/debs/*.deb; do
	dpkg-deb -x "$deb" "$dir/pkg"
done
cp "$dir"/pkg/boot/vmlinuz-*-amd64 "$dir/vmlinuz"
cp "$dir/pkg/bin/busybox" "$dir/busybox"
# The virtio modules the guest loads and ext4 (which mounts the ext2 example
# disk; it asks the crypto API for crc32c, which depends= does not name),
# with what they depend on (modinfo's depends=: the package has no
# modules.dep), from the same package:
# DIR/modules/NAME.ko and DIR/modules/order, dependencies first.
rm -rf "$dir/modules"
mkdir -p "$dir/modules"
: > "$dir/modules/order"
module_path() {
	find "$dir"/pkg/lib/modules -name "$1.ko" | head -n 1
}
add_module() {
	grep -qx "$1" "$dir/modules/order" && return 0
	[ -n "$(module_path "$1")" ] || { echo "fetch.sh: no module $1 in the kernel package" >&2; exit 1; }
	for dep in $(/sbin/modinfo -F depends "$(module_path "$1")" | tr , ' '); do
		add_module "$dep"
	done
	# (sh has no local variables: the path is looked up again after the recursion)
	cp "$(module_path "$1")" "$dir/modules/$1.ko"
	echo "$1" >> "$dir/modules/order"
}
for m in virtio_pci virtio_blk virtio_balloon crc32c_generic ext4; do
	add_module "$m"
done
rm -rf "$dir/pkg"
echo "fetch.sh: $kernel, $(basename "$dir"/debs/busybox-static_*.deb), modules: $(tr '\n' ' ' < "$dir/modules/order")"
