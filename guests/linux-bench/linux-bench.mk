# sprig-bench, the benchmark workloads inside the Linux guest
# (bench/linux_guest.h): a static program for the initramfs. Included by
# the top-level Makefile before guests/linux/linux.mk.
$(B)/linux/sprig-bench: guests/linux-bench/sprig-bench.c virt/bench_port.h
	@mkdir -p $(@D)
	$(HOSTCC) -std=gnu11 -static -O2 -Wall -Wextra -I. -pthread -o $@ $<
LINUX_INITRD_BINS += $(B)/linux/sprig-bench
