# The Linux guest: Debian's stock kernel and an initramfs of busybox-static
# with guests/linux/init, both from Debian's packages (guests/linux/fetch.sh
# unpacks them into build/linux/, never installs them). Included by the
# top-level Makefile; only run-linux and the Linux test use them, so no other
# target fetches the kernel.
#   build/linux/vmlinuz   the stock kernel (a bzImage)
#   build/linux/initrd    gzip'd newc cpio: busybox, its applets' links, /init,
#                         memsum and LINUX_INITRD_BINS in /bin, the virtio
#                         modules in /lib/modules (loaded by /init in order)
#   build/linux/disk.img  an ext2 file system holding docs/virtio.md, the
#                         example disk of run-linux and the virtio test
# LINUX_INITRD_BINS: more static programs to put in the initramfs's /bin.

LINUX_DIR := $(B)/linux
LINUX_INITRD_BINS ?=

# memsum (guests/linux/memsum.c): the memory and clock workload that the
# snapshot and clone tests leave running across a pause.
$(LINUX_DIR)/memsum: guests/linux/memsum.c
	@mkdir -p $(@D)
	$(HOSTCC) -std=gnu11 -static -O2 -Wall -Wextra -o $@ $<
LINUX_INITRD_BINS += $(LINUX_DIR)/memsum

# One fetch makes them all (grouped: make -j must not run it twice at once).
$(LINUX_DIR)/vmlinuz $(LINUX_DIR)/busybox $(LINUX_DIR)/modules/order &: guests/linux/fetch.sh
	guests/linux/fetch.sh $(LINUX_DIR)
	@touch $(LINUX_DIR)/vmlinuz $(LINUX_DIR)/busybox $(LINUX_DIR)/modules/order

# The applets' links come from busybox itself (--list-full).
$(LINUX_DIR)/initrd: $(LINUX_DIR)/busybox $(LINUX_DIR)/modules/order guests/linux/init $(LINUX_INITRD_BINS)
	@tools/deps.sh linux
	rm -rf $(LINUX_DIR)/root
	mkdir -p $(LINUX_DIR)/root/bin $(LINUX_DIR)/root/sbin $(LINUX_DIR)/root/usr/bin \
		$(LINUX_DIR)/root/usr/sbin $(LINUX_DIR)/root/proc $(LINUX_DIR)/root/sys \
		$(LINUX_DIR)/root/dev $(LINUX_DIR)/root/tmp $(LINUX_DIR)/root/mnt
	cp $(LINUX_DIR)/busybox $(LINUX_DIR)/root/bin/busybox
	cp guests/linux/init $(LINUX_DIR)/root/init
	mkdir -p $(LINUX_DIR)/root/lib/modules
	cp $(LINUX_DIR)/modules/* $(LINUX_DIR)/root/lib/modules/
	for a in $$($(LINUX_DIR)/busybox --list-full); do \
		[ -e $(LINUX_DIR)/root/$$a ] || ln -s /bin/busybox $(LINUX_DIR)/root/$$a; done
	$(if $(LINUX_INITRD_BINS),cp $(LINUX_INITRD_BINS) $(LINUX_DIR)/root/bin/)
	cd $(LINUX_DIR)/root && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | \
		gzip -9 > ../initrd.tmp
	mv $(LINUX_DIR)/initrd.tmp $@

# sprig's ISO with the test guests, vmlinuz and initrd; LINUX_ARGS boots
# straight into the Linux guest's shell (vm console: Ctrl-] detaches, `exit`
# powers the guest off).
LINUX_ARGS ?= run="vm create linux vmlinuz initrd=initrd disk=disk balloon=on vcpus=2 mem=512M -- console=ttyS0 quiet; vm console linux timeout=86400"
# LINUX_ARGS as the ISO has them: rewritten (and the ISO rebuilt) when they change.
$(LINUX_DIR)/args: linux-args
	@mkdir -p $(LINUX_DIR)
	@echo '$(LINUX_ARGS)' | cmp -s - $@ || echo '$(LINUX_ARGS)' > $@
$(B)/sprig-linux.iso: $(B)/sprig.elf $(GUEST_ELFS) $(LINUX_DIR)/vmlinuz $(LINUX_DIR)/initrd \
		$(LINUX_DIR)/disk.img $(LINUX_DIR)/args tools/mkiso.sh | deps
	cp $(LINUX_DIR)/disk.img $(LINUX_DIR)/disk
	tools/mkiso.sh $< $@ '$(LINUX_ARGS)' $(GUEST_ELFS) $(LINUX_DIR)/vmlinuz $(LINUX_DIR)/initrd \
		$(LINUX_DIR)/disk

# The example disk: 4 MiB of ext2 (1 KiB blocks) with docs/virtio.md in it,
# read-only under run-linux (mount -o ro /dev/vda /mnt).
$(LINUX_DIR)/disk.img: docs/virtio.md
	@tools/deps.sh linux
	rm -rf $(LINUX_DIR)/disk.d && mkdir -p $(LINUX_DIR)/disk.d
	cp docs/virtio.md $(LINUX_DIR)/disk.d/
	mke2fs -q -F -t ext2 -b 1024 -L sprig -d $(LINUX_DIR)/disk.d $@.tmp 4M >/dev/null
	mv $@.tmp $@

# make run-linux: sprig under QEMU with 2 CPUs, booting the Linux guest.
.PHONY: run-linux linux-images linux-args
linux-images: $(LINUX_DIR)/vmlinuz $(LINUX_DIR)/initrd $(LINUX_DIR)/disk.img
run-linux: $(B)/sprig-linux.iso
	QEMU_MEM=2G tools/qemu.sh bios $< -smp 2
