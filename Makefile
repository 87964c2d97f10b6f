# sprig: build the hypervisor image and ISO, run it, test it.
#   make            build/sprig.elf and build/sprig.iso
#   make run        boot under QEMU (SeaBIOS), console on this terminal
#   make run-uefi   the same under OVMF
#   make test       every test; ends with "N passed, N failed"
#   make bench      host MMU benchmarks (optimisations off vs on)
#   make report     benchmarks on the host, under QEMU and Bochs -> report/index.html (docs/report.md)
#   make soak       randomized VM life cycles in one QEMU boot for SOAK_SECONDS (tests/soak.py)
#   make kut        kvm-unit-tests bare under QEMU and under sprig -> build/kut/results.txt (docs/kut.md)
#   make fuzz       each fuzz target for FUZZ_SECONDS (tests/fuzz/README.md)
#   make lab-check  lab/'s LAVA jobs run (QEMU device) and validated (board) with lava-run
#   make clean
# CROSS_COMPILE=x86_64-linux-gnu- builds the image with Debian's cross tools.

CROSS_COMPILE ?=
CC      := $(CROSS_COMPILE)gcc
LD      := $(CROSS_COMPILE)ld
HOSTCC  ?= gcc
B       := build
# make run boots the default guest, prints its output and stats, then the prompt.
ARGS    ?= run="vm create hello hello -- from make run; vm run hello; stats hello"
QEMU_MEM ?= 1G

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

KERNEL_DIRS := boot arch/x86 lib mm dev virt loader shell bench init svm vmx
KSRCS := $(foreach d,$(KERNEL_DIRS),$(wildcard $(d)/*.c $(d)/*.S))
KOBJS := $(patsubst %,$(B)/k/%.o,$(KSRCS))

KCFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wmissing-prototypes -Wcast-qual -Wwrite-strings \
	-Werror=implicit-function-declaration \
	-m64 -march=x86-64 -ffreestanding -fno-pic -fno-pie -mno-red-zone \
	-mgeneral-regs-only -mcmodel=small -fno-stack-protector \
	-fno-asynchronous-unwind-tables -fno-omit-frame-pointer -nostdlib \
	-fno-strict-aliasing -I. -MMD -MP -DSPRIG_VERSION='"$(VERSION)"'
KLDFLAGS := -Wl,--build-id=none -nostdlib -static -no-pie -T linker.ld -z max-page-size=0x1000 -z noexecstack

# Code under lib/ and mm/ (and the boot-information parser) compiles for the host
# too: unit tests, concurrency tests and benchmarks run the real code.
HOST_SRCS := $(filter-out lib/string.c,$(wildcard lib/*.c mm/*.c)) \
	$(wildcard boot/multiboot2.c svm/npt.c vmx/ept.c arch/x86/acpi.c arch/x86/lock.c loader/mb1_loader.c loader/mb1_aout.c loader/mb1_elf.c loader/bzimage_loader.c virt/pvclock.c virt/kvm_pv.c \
		   virt/msr_policy.c virt/state_check.c virt/state_record.c shell/console_line.c svm/saved_state.c \
		   vmx/saved_state.c svm/caps.c svm/tlb.c vmx/caps.c vmx/tlb.c dev/lapic.c dev/lapic_timer.c \
		   dev/lapic_ipi.c dev/lapic_regs.c dev/lapic_state.c $(wildcard virt/insn*.c) virt/guest_walk.c virt/cpuid_policy.c \
		   dev/ioapic.c dev/pic.c dev/pit.c dev/rtc.c dev/pmtimer.c dev/fwcfg.c \
		   dev/acpi_tables.c dev/pci.c dev/testdev.c virt/cpu_list.c dev/uart16550.c \
		   dev/bus.c dev/acpi_pm.c dev/firmware.c dev/guest_mem.c dev/virtqueue.c dev/virtio_pci.c dev/virtio_blk.c \
		   dev/virtio_balloon.c)
UNIT_SRCS := $(wildcard tests/unit/*.c) tests/targets.c
BENCH_SRCS := $(wildcard tests/bench/*.c) tests/targets.c tests/unit/host_env.c $(wildcard tests/unit/host_mem.c)
HOST_BASE := -std=gnu11 -g -Wall -Wextra -I. -DHOST_TEST -fno-omit-frame-pointer -pthread
HOST_ASAN := $(HOST_BASE) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
HOST_TSAN := $(HOST_BASE) -O1 -fsanitize=thread
HOST_BENCH := $(HOST_BASE) -O2 -DNDEBUG

.PHONY: all run run-uefi test unit bench report soak clean deps lab-check
all: $(B)/sprig.iso

include guests/guests.mk
include guests/linux-bench/linux-bench.mk
include guests/linux/linux.mk

deps:
	@tools/deps.sh build

$(B)/k/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -c $< -o $@
$(B)/k/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(B)/sprig.elf: $(KOBJS) linker.ld
	$(CC) $(KCFLAGS) $(KLDFLAGS) -o $@ $(KOBJS) -lgcc
	@NM=$(CROSS_COMPILE)nm tools/check-elf.sh $@

# The ISO carries every test guest as a GRUB module named after it.
$(B)/sprig.iso: $(B)/sprig.elf $(GUEST_ELFS) tools/mkiso.sh | deps
	tools/mkiso.sh $< $@ '$(ARGS)' $(GUEST_ELFS)

run: $(B)/sprig.iso
	tools/qemu.sh bios $(B)/sprig.iso

run-uefi: $(B)/sprig.iso
	tools/qemu.sh uefi $(B)/sprig.iso

# Host programs. lib/string.c is tested under renamed symbols, beside libc.
$(B)/host/unit: $(HOST_SRCS) $(UNIT_SRCS) lib/string.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_ASAN) -include tests/unit/string_rename.h -c lib/string.c -o $(B)/host/string_renamed.o
	$(HOSTCC) $(HOST_ASAN) -o $@ $(HOST_SRCS) $(UNIT_SRCS) $(B)/host/string_renamed.o -lm
$(B)/host/unit-tsan: $(HOST_SRCS) $(UNIT_SRCS) lib/string.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_TSAN) -include tests/unit/string_rename.h -c lib/string.c -o $(B)/host/string_renamed_tsan.o
	$(HOSTCC) $(HOST_TSAN) -o $@ $(HOST_SRCS) $(UNIT_SRCS) $(B)/host/string_renamed_tsan.o -lm
$(B)/host/bench: $(HOST_SRCS) $(BENCH_SRCS) $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_BENCH) -o $@ $(HOST_SRCS) $(BENCH_SRCS) -lm

# Snapshot images of a tiny guest, whole or with one field broken, for the
# restore tests (tests/e2e/e2e_input.py); built from sprig's own headers.
# What reads and writes a VM state's records: the checks and every device model.
STATE_SRCS := virt/state_check.c virt/state_record.c virt/msr_policy.c lib/print.c lib/civil.c \
	$(wildcard dev/lapic*.c) dev/ioapic.c dev/pic.c dev/pit.c dev/rtc.c dev/acpi_pm.c \
	dev/fwcfg.c dev/pci.c dev/testdev.c dev/uart16550.c
$(B)/host/mksnap: tests/e2e/mksnap.c tests/unit/flat_state.c $(STATE_SRCS) $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_BASE) -O1 -o $@ tests/e2e/mksnap.c tests/unit/flat_state.c tests/unit/host_env.c $(STATE_SRCS)

unit: $(B)/host/unit $(B)/host/unit-tsan
	$(B)/host/unit
	$(B)/host/unit-tsan conc_

bench: $(B)/host/bench
	$(B)/host/bench

# make report: the host benchmarks, the in-guest scenarios under QEMU and the
# VMX rows under Bochs, each run's @bench lines kept in report/data/, plotted
# into report/index.html and report/compare.html (docs/report.md). Debian's
# python3 runs it: python3-matplotlib installs there.
REPORT_PY ?= /usr/bin/python3
REPORT_ARGS ?=
report: | deps
	@tools/deps.sh report
	$(MAKE) $(B)/sprig.elf $(GUEST_ELFS) $(B)/host/bench linux-images
	$(REPORT_PY) -m tools.report run $(REPORT_ARGS)

# make soak: a seeded random schedule of create/run/clone/snapshot/restore/dirty/
# discard/destroy on many VMs, every guest's data and every VM's audit checked
# after each step. SOAK_SEED=N replays a schedule, SOAK_STEPS=N stops after N
# steps, SOAK_SECONDS=0 removes the time limit. SOAK_MODE=hostile-smp: hostile
# guests on several vCPUs beside keeper VMs, QEMU with 4 CPUs or, with
# SOAK_MACHINE=bochs, Bochs (VMX) with 2; a step past its limit is a hang,
# reported with every CPU's state (tests/soak_smp.py).
SOAK_SECONDS ?= 300
soak: $(B)/sprig.elf $(GUEST_ELFS) | deps
	SOAK_SECONDS='$(SOAK_SECONDS)' SOAK_SEED='$(SOAK_SEED)' SOAK_STEPS='$(SOAK_STEPS)' \
		SOAK_MODE='$(SOAK_MODE)' SOAK_MACHINE='$(SOAK_MACHINE)' python3 tests/soak.py

# make kut: kvm-unit-tests (KUT_SRC: a tarball or a checkout; default the
# shared folder's tarball), built into build/kut/ once per tarball; every test
# of x86/unittests.cfg bare under QEMU TCG and under sprig, one sprig boot for
# all. KUT_TESTS=a,b runs some; KUT_ARGS=--backend=vmx runs sprig under Bochs.
.PHONY: kut
kut: $(B)/sprig.elf | deps
	KUT_SRC='$(KUT_SRC)' KUT_TESTS='$(KUT_TESTS)' python3 tools/kut.py run $(KUT_ARGS)

test: | deps
	@tools/deps.sh test
	$(MAKE) $(B)/sprig.elf $(GUEST_ELFS) $(B)/host/unit $(B)/host/unit-tsan $(B)/host/bench \
		$(B)/host/mksnap
	python3 tests/run.py

# make lab-check: the LAVA job of lab/ for a QEMU device run locally by
# Debian's lava-dispatcher (no server), every test case checked, and the
# board's GRUB-entry job validated (tests/lab_check.py, docs/lab.md).
lab-check: $(B)/sprig.elf $(GUEST_ELFS) | deps
	@tools/deps.sh lab
	python3 tests/lab_check.py

# Fuzz targets: clang's libFuzzer with ASan and UBSan, against the real parsers.
# A target NAME is tests/fuzz/fuzz_NAME.c, plus the sources it links listed in
# FUZZ_SRCS_NAME, plus NAME in FUZZ_TARGETS (tests/fuzz/README.md).
FUZZ_TARGETS := mb1 mb2 acpi parse snapshot console insn bzimage virtq
FUZZ_SRCS_mb1 := loader/mb1_loader.c loader/mb1_aout.c loader/mb1_elf.c lib/print.c $(wildcard mm/*.c) arch/x86/lock.c svm/npt.c tests/unit/host_mem.c
FUZZ_SRCS_mb2 := boot/multiboot2.c lib/print.c
FUZZ_SRCS_acpi := arch/x86/acpi.c lib/print.c
FUZZ_SRCS_parse := lib/parse.c lib/print.c
FUZZ_SRCS_snapshot := $(STATE_SRCS) svm/saved_state.c vmx/saved_state.c tests/unit/flat_state.c
FUZZ_SRCS_console := shell/console_line.c lib/parse.c lib/print.c
FUZZ_SRCS_insn := $(wildcard virt/insn*.c) lib/print.c
FUZZ_SRCS_bzimage := loader/bzimage_loader.c lib/print.c $(wildcard mm/*.c) arch/x86/lock.c svm/npt.c tests/unit/host_mem.c
FUZZ_SRCS_virtq := dev/virtqueue.c dev/guest_mem.c lib/print.c
FUZZ_CC := clang
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -I. -DHOST_TEST -fno-omit-frame-pointer -pthread \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 120

.PHONY: fuzz fuzz-deps fuzz-targets
.SECONDEXPANSION:
$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRCS_$$*) tests/unit/host_env.c tests/fuzz/fuzz_env.c \
		$(wildcard */*.h */*/*.h) | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRCS_$*) tests/unit/host_env.c tests/fuzz/fuzz_env.c

fuzz-deps:
	@tools/deps.sh fuzz

# make fuzz: FUZZ_SECONDS of random fuzzing per target (make -j2 runs two at
# once; make fuzz-NAME one), starting from the seeds in tests/fuzz/corpus/NAME.
# New inputs go to build/fuzz/new-corpus/NAME, crashes to build/fuzz/crashes/.
fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))
fuzz-%: $(B)/fuzz/fuzz_%
	@mkdir -p $(B)/fuzz/new-corpus/$* $(B)/fuzz/crashes
	$< -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(B)/fuzz/crashes/$*- $(B)/fuzz/new-corpus/$* tests/fuzz/corpus/$*

fuzz-targets:
	@echo $(FUZZ_TARGETS)

clean:
	rm -rf $(B)

-include $(patsubst %.o,%.d,$(KOBJS))
