/* The lowload guest: a multiboot (version 1) kernel linked and loaded at
 * 0x8000, below 1 MiB, where the runtime's guests (guests/rt/, at 1 MiB)
 * never go. It stays in 32-bit protected mode, paging off, and prints over
 * COM1:
 *   lowload: image at 0x00008000, args length N, sum S, tail "XXXXXXXX"
 * N is the length of the command line after its first word (QEMU and sprig
 * pass "KERNEL ARGS"; GRUB passes only what follows the file name, so bare
 * runs give GRUB a first word to drop), S the 32-bit sum of those bytes, and the tail their
 * last 8 characters, so that tests/e2e/e2e_pc.py can check that a long
 * command line arrived whole. It exits with status 0 through port 0xf4 (the
 * isa-debug-exit device bare; sprig emulates the port too), or 0x7f when
 * the loader broke the multiboot contract.
 *
 * QEMU's own multiboot loader (-kernel) cannot boot it: it keeps the
 * multiboot information at 0x9000-0x9600 and copies the image, page-rounded,
 * with the command line after it, over that. Bare, GRUB loads it. */

#define MB1_HEADER_MAGIC 0x1badb002
#define MB1_BOOT_MAGIC 0x2badb002
#define MB1_MEMORY_INFO (1 << 1)
#define MB1_FLAGS MB1_MEMORY_INFO
#define MB1_INFO_CMDLINE (1 << 2)
#define COM1 0x3f8
#define DEBUG_EXIT_PORT 0xf4

	.section .multiboot, "a"
	.balign 4
	.globl image_start
image_start:
	.long MB1_HEADER_MAGIC
	.long MB1_FLAGS
	.long -(MB1_HEADER_MAGIC + MB1_FLAGS)

	.text
	.code32
	.globl _start
_start:
	cli
	cld
	mov $stack_top, %esp
	cmp $MB1_BOOT_MAGIC, %eax
	jne bad_boot
	/* Where the image runs: it must be where it was linked (0x8000). */
	call 1f
1:	pop %eax
	sub $1b, %eax
	add $image_start, %eax
	mov %eax, entry_seen

	/* The arguments: the command line after its first word. */
	xor %esi, %esi
	testl $MB1_INFO_CMDLINE, (%ebx)
	jz 4f
	mov 16(%ebx), %esi
	test %esi, %esi
	jz 4f
2:	cmpb $' ', (%esi)		/* leading blanks */
	jne 3f
	inc %esi
	jmp 2b
3:	movb (%esi), %al		/* the first word */
	test %al, %al
	jz 4f
	cmp $' ', %al
	je 5f
	inc %esi
	jmp 3b
5:	cmpb $' ', (%esi)		/* blanks after it */
	jne 4f
	inc %esi
	jmp 5b
4:	/* ESI: the arguments (or 0). Length and sum. */
	xor %ecx, %ecx
	xor %edx, %edx
	test %esi, %esi
	jz 7f
6:	movzbl (%esi, %ecx), %eax
	test %eax, %eax
	jz 7f
	add %eax, %edx
	inc %ecx
	jmp 6b
7:	mov %ecx, args_len
	mov %edx, args_sum
	mov %esi, args_ptr

	mov $msg_entry, %esi
	call puts
	mov entry_seen, %eax
	call puthex
	mov $msg_len, %esi
	call puts
	mov args_len, %eax
	call putdec
	mov $msg_sum, %esi
	call puts
	mov args_sum, %eax
	call putdec
	mov $msg_tail, %esi
	call puts
	/* The last 8 characters (fewer if the arguments are shorter). */
	mov args_len, %ecx
	mov args_ptr, %esi
	mov %ecx, %eax
	sub $8, %eax
	jae 8f
	xor %eax, %eax
8:	add %eax, %esi
	call puts_ptr_or_empty
	mov $msg_end, %esi
	call puts

	xor %eax, %eax
	out %al, $DEBUG_EXIT_PORT
	jmp halt

bad_boot:
	mov $0x7f, %al
	out %al, $DEBUG_EXIT_PORT
halt:	hlt
	jmp halt

/* putc: AL out of COM1. */
putc:
	push %eax
	push %edx
	mov %al, %ah
	mov $COM1 + 5, %dx
1:	in %dx, %al
	test $0x20, %al
	jz 1b
	mov $COM1, %dx
	mov %ah, %al
	out %al, %dx
	pop %edx
	pop %eax
	ret

/* puts: the NUL-terminated string at ESI. */
puts:
	push %eax
	push %esi
1:	lodsb
	test %al, %al
	jz 2f
	call putc
	jmp 1b
2:	pop %esi
	pop %eax
	ret

/* The string at ESI unless args_ptr is 0. */
puts_ptr_or_empty:
	cmpl $0, args_ptr
	je 1f
	call puts
1:	ret

/* putdec: EAX in decimal. */
putdec:
	push %eax
	push %ebx
	push %ecx
	push %edx
	mov $10, %ebx
	xor %ecx, %ecx
1:	xor %edx, %edx
	div %ebx
	push %edx
	inc %ecx
	test %eax, %eax
	jnz 1b
2:	pop %eax
	add $'0', %al
	call putc
	loop 2b
	pop %edx
	pop %ecx
	pop %ebx
	pop %eax
	ret

/* puthex: EAX as 0x and eight lowercase hex digits. */
puthex:
	push %eax
	push %ecx
	push %edx
	mov %eax, %edx
	mov $'0', %al
	call putc
	mov $'x', %al
	call putc
	mov $8, %ecx
1:	rol $4, %edx
	mov %edx, %eax
	and $0xf, %eax
	mov hexdigits(%eax), %al
	call putc
	loop 1b
	pop %edx
	pop %ecx
	pop %eax
	ret

	.section .rodata
hexdigits:	.ascii "0123456789abcdef"
msg_entry:	.asciz "lowload: image at "
msg_len:	.asciz ", args length "
msg_sum:	.asciz ", sum "
msg_tail:	.asciz ", tail \""
msg_end:	.asciz "\"\n"

	.section .bss
	.balign 16
entry_seen:	.skip 4
args_len:	.skip 4
args_sum:	.skip 4
args_ptr:	.skip 4
stack:		.skip 4096
stack_top:

	.section .note.GNU-stack, "", @progbits
