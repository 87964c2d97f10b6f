# Test guests: multiboot (version 1) kernels, build/guests/NAME.elf, that boot
# bare under `qemu-system-x86_64 -kernel` and under sprig. Included by the
# top-level Makefile, which defines CC (honouring CROSS_COMPILE) and B.
#   make guests      every guest; GUEST_ELFS lists them
#
# A guest is guests/NAME.c or the sources in guests/NAME/, linked with the
# runtime in guests/rt/. Guests in GUEST_AOUT use the multiboot a.out kludge
# and stay ELF64 files; the others become ELF32 files (QEMU refuses ELF64),
# so that a loader is tested on both.

GUEST_NAMES := hello touch exec fpu misbehave balloon restore_touch churn dirty rmapfork rmapread soakg hostile apic pc lowload smp stale uart hvwrite crwin virtio_bad probe
GUEST_AOUT := touch exec misbehave
GUEST_OWN_LINK := lowload
GUEST_ELFS := $(patsubst %,$(B)/guests/%.elf,$(GUEST_NAMES))

GUEST_OBJCOPY := $(CROSS_COMPILE)objcopy
GUEST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror=implicit-function-declaration \
	-m64 -march=x86-64 -ffreestanding -fno-pic -fno-pie -mno-red-zone \
	-mgeneral-regs-only -mcmodel=small -fno-stack-protector \
	-fno-asynchronous-unwind-tables -fno-omit-frame-pointer -nostdlib \
	-fno-strict-aliasing -I. -MMD -MP
GUEST_ASFLAGS := $(GUEST_CFLAGS) -D__ASSEMBLY__
GUEST_LDFLAGS := -Wl,--build-id=none -Wl,--no-warn-rwx-segments -nostdlib -static \
	-no-pie -T guests/rt/guest.ld -z max-page-size=0x1000 -z noexecstack

GUEST_OBJ_DIR := $(B)/guests/obj
GUEST_AR := $(CROSS_COMPILE)ar
# The runtime is an archive: a guest links only the parts it uses (the APs'
# stacks, for one, only where smp_start is called).
GUEST_RT_OBJS := $(patsubst %,$(GUEST_OBJ_DIR)/rt/%.o,rt.c printf.c idt.c report.c isr.S \
	tsc.c lapic.c acpi.c smp.c ap_boot.S)
GUEST_RT_LIB := $(GUEST_OBJ_DIR)/rt/librt.a

.PHONY: guests
guests: $(GUEST_ELFS)

$(GUEST_OBJ_DIR)/%.c.o: guests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) -c $< -o $@
$(GUEST_OBJ_DIR)/%.S.o: guests/%.S
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_ASFLAGS) -c $< -o $@
$(GUEST_OBJ_DIR)/rt/entry-elf.o: guests/rt/entry.S
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_ASFLAGS) -c $< -o $@
$(GUEST_OBJ_DIR)/rt/entry-aout.o: guests/rt/entry.S
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_ASFLAGS) -DRT_AOUT_KLUDGE -c $< -o $@
$(GUEST_RT_LIB): $(GUEST_RT_OBJS)
	rm -f $@
	$(GUEST_AR) rcs $@ $^

# guest_objs NAME: the objects of one guest, without the runtime.
guest_objs = $(patsubst guests/%,$(GUEST_OBJ_DIR)/%.o,\
	$(wildcard guests/$(1).c guests/$(1)/*.c guests/$(1)/*.S))

# An a.out-kludge guest: the linked ELF64 file is the image.
define guest_aout_rule
$(B)/guests/$(1).elf: $(GUEST_OBJ_DIR)/rt/entry-aout.o $(call guest_objs,$(1)) \
		$(GUEST_RT_LIB) guests/rt/guest.ld
	$$(CC) $$(GUEST_CFLAGS) $$(GUEST_LDFLAGS) -o $$@ \
		$$(filter %.o %.a,$$^) -lgcc
endef

# An ELF guest: link ELF64, then rewrite the file as ELF32 for QEMU.
define guest_elf_rule
$(GUEST_OBJ_DIR)/$(1).elf64: $(GUEST_OBJ_DIR)/rt/entry-elf.o $(call guest_objs,$(1)) \
		$(GUEST_RT_LIB) guests/rt/guest.ld
	$$(CC) $$(GUEST_CFLAGS) $$(GUEST_LDFLAGS) -o $$@ \
		$$(filter %.o %.a,$$^) -lgcc
$(B)/guests/$(1).elf: $(GUEST_OBJ_DIR)/$(1).elf64
	$$(GUEST_OBJCOPY) -O elf32-i386 $$< $$@
endef

$(foreach g,$(filter $(GUEST_AOUT),$(GUEST_NAMES)),$(eval $(call guest_aout_rule,$(g))))
$(foreach g,$(filter-out $(GUEST_AOUT) $(GUEST_OWN_LINK),$(GUEST_NAMES)),$(eval $(call guest_elf_rule,$(g))))

# lowload: its own entry and linker script (linked at 0x8000), no runtime.
$(GUEST_OBJ_DIR)/lowload.elf64: $(call guest_objs,lowload) guests/lowload/lowload.ld
	$(CC) $(GUEST_CFLAGS) $(filter-out -T guests/rt/guest.ld,$(GUEST_LDFLAGS)) \
		-T guests/lowload/lowload.ld -o $@ $(filter %.o,$^)
$(B)/guests/lowload.elf: $(GUEST_OBJ_DIR)/lowload.elf64
	$(GUEST_OBJCOPY) -O elf32-i386 $< $@

-include $(wildcard $(GUEST_OBJ_DIR)/*.d $(GUEST_OBJ_DIR)/*/*.d)
