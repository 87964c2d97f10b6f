#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/NAME/: small valid and
near-valid inputs, built like the unit tests' fixtures (tests/unit/test_*.c).
Run it again after changing an input format; it rewrites the files it makes
and leaves others (e.g. inputs saved from a fuzzing run) alone.

  tests/fuzz/make_corpus.py [--guest build/guests/hello.elf]

--guest adds a real multiboot kernel, stripped, to the mb1 corpus."""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v)


def put(buf, off, data):
    buf[off:off + len(data)] = data


# ---- mb1: multiboot v1 kernels (tests/unit/test_mb1_loader.c) ----
MB1_MAGIC = 0x1BADB002
MB1_MARKER = b"\nMB1-ARGS\n"


def mb_header(flags):
    return u32(MB1_MAGIC) + u32(flags) + u32(-(MB1_MAGIC + flags))


def pattern(n):
    return bytearray((i * 7 + 3) & 0xff for i in range(n))


def phdr(ptype, off, vaddr, paddr, filesz, memsz, flags):
    return (u32(ptype) + u32(off) + u32(vaddr) + u32(paddr) + u32(filesz) + u32(memsz)
            + u32(flags) + u32(0x1000))


def elf_image(text_vaddr=0x100000, entry=0x100100, phdrs=None):
    im = pattern(0x300)
    im[0:128 + 12] = bytes(128 + 12)
    put(im, 0, b"\x7fELF\x01\x01\x01")
    put(im, 16, u16(2) + u16(3) + u32(1) + u32(entry) + u32(52))
    put(im, 40, u16(52) + u16(32))
    if phdrs is None:
        phdrs = [phdr(1, 0, text_vaddr, 0x100000, 0x200, 0x200, 5),
                 phdr(1, 0x200, 0x102000, 0x102000, 0x100, 0x3000, 6)]
    put(im, 44, u16(len(phdrs)))
    for i, p in enumerate(phdrs):
        put(im, 52 + 32 * i, p)
    put(im, 128, mb_header(3))
    return im


def aout_image(load_end=0x100180, bss_end=0x102000, entry=0x100080):
    im = pattern(0x180)
    put(im, 0x40, mb_header(1 << 16 | 3))
    put(im, 0x40 + 12, u32(0x100040) + u32(0x100000) + u32(load_end) + u32(bss_end) + u32(entry))
    return im


def mb1_args(mem, mod_sizes, strings):
    return (MB1_MARKER + bytes([mem, len(mod_sizes)]) + b"".join(u32(s) for s in mod_sizes)
            + b"\0".join(s.encode() for s in strings))


def mb1(guest):
    write("mb1", "elf", elf_image())
    write("mb1", "elf_modules", elf_image() + mb1_args(0, [13, 5000], ["console=com1", "mod0 arg"]))
    write("mb1", "elf_small_guest", elf_image() + mb1_args(4, [4096], ["x"]))
    write("mb1", "elf_4g_guest", elf_image() + mb1_args(7, [1 << 20] * 3, ["big", "a", "b", "c"]))
    write("mb1", "elf_higher_half", elf_image(0xc0100000, 0xc0100100))
    write("mb1", "elf_overlap", elf_image(phdrs=[phdr(1, 0, 0x100000, 0x100000, 0x200, 0x200, 5),
                                                 phdr(1, 0x200, 0x100100, 0x100100, 0x100, 0x200, 6)]))
    elf64 = elf_image()
    elf64[4] = 2
    write("mb1", "elf64_refused", elf64)
    write("mb1", "elf_truncated", elf_image()[:0x280])
    bad = elf_image()
    bad[136] ^= 1
    write("mb1", "bad_checksum", bad)
    write("mb1", "aout", aout_image())
    write("mb1", "aout_whole_file", aout_image(load_end=0) + mb1_args(3, [100], ["", "initrd"]))
    write("mb1", "aout_entry_outside", aout_image(entry=0x100200))
    if guest:
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "g")
            subprocess.run(["strip", "-o", out, guest], check=True)
            with open(out, "rb") as f:
                write("mb1", "guest_" + os.path.basename(guest).split(".")[0], f.read())


# ---- mb2: multiboot2 boot information (tests/unit/test_multiboot2.c) ----
def tag(ttype, payload):
    t = u32(ttype) + u32(8 + len(payload)) + payload
    return t + bytes(-len(t) % 8)


def info(*tags, total=None, end=True):
    body = b"".join(tags) + (tag(0, b"") if end else b"")
    return u32(total if total is not None else 8 + len(body)) + u32(0) + body


def bios_map(entries, esize=24):
    return tag(6, u32(esize) + u32(0) + b"".join(
        u64(b) + u64(l) + u32(t) + bytes(esize - 20) for b, l, t in entries))


def efi_map(entries):
    return tag(17, u32(48) + u32(1) + b"".join(
        u32(t) + u32(0) + u64(phys) + u64(0) + u64(pages) + u64(0xf) + u64(0)
        for t, phys, pages in entries))


def module(start, end, name):
    return tag(3, u32(start) + u32(end) + name + b"\0")


RSDP_V1 = b"RSD PTR \x00OEMID \x00\x00\xe0\x0f\x00"
RSDP_V2 = b"RSD PTR \x00OEMID \x02\x00\xe0\x0f\x00\x24" + bytes(15)

BIOS_ENTRIES = [(0, 0x9fc00, 1), (0x9fc00, 0x400, 2), (0xf0000, 0x10000, 2),
                (0x100000, 0x3fee0000 - 0x100000, 1), (0x3fee0000, 0x20000, 3),
                (0xfffc0000, 0x40000, 2), (0x100000000, 0x40000000, 1), (0x140000000, 0, 1)]


def mb2():
    bios = [tag(1, b'"run=mem; cpus" leaf_hint=off\0'), tag(2, b"GRUB 2.06\0"),
            tag(4, u32(639) + u32(1047424)), bios_map(BIOS_ENTRIES),
            module(0x200000, 0x201000, b"guest1 arg"), module(0x300000, 0x300000, b""),
            tag(14, RSDP_V1)]
    write("mb2", "bios", info(*bios))
    uefi = [tag(1, b"\0"), tag(12, u64(0x7fe00000)),
            efi_map([(7, 0, 0x9f), (2, 0x100000, 0x700), (4, 0x800000, 0x100), (9, 0x7f000000, 0x10),
                     (10, 0x7f010000, 0x10), (0, 0x7f020000, 0x10), (11, 0xffc00000, 0x400)]),
            bios_map(BIOS_ENTRIES[:4]), tag(14, RSDP_V1), tag(15, RSDP_V2),
            module(0x400000, 0x480000, b"hello")]
    write("mb2", "uefi", info(*uefi))
    write("mb2", "overlapping_map", info(bios_map(
        [(0, 0x100000, 1), (0x80000, 0x100000, 2), (0x90000, 0x1000, 5), (0xfff000, 0x2000, 3),
         (0x1000, 0x2000, 1), (0xffffffffffff0000, 0x20000, 1)])))
    # More ranges than the map holds (128), then ranges that split them.
    many = [(0x10000 * i, 0x8000, 1 + i % 5) for i in range(140)]
    many += [(0x10000 * i + 0x4000, 0x1000, 5) for i in range(0, 140, 7)]
    write("mb2", "map_full", info(bios_map(many)))
    # More modules and a longer command line than boot_info holds (64, 4 KiB).
    write("mb2", "many_modules_long_strings", info(
        tag(1, b"c" * 4200 + b"\0"), *[module(0x1000 * i, 0x1000 * i + 5, b"m%d " % i + b"s" * (i % 3 * 70))
                                         for i in range(70)]))
    write("mb2", "efi_types", info(efi_map([(t, 0x1000 * t, 1) for t in range(16)] +
                                           [(7, 0x100000, 1 << 53)])))
    write("mb2", "map_entry_size_32", info(bios_map(BIOS_ENTRIES[:3], esize=32)))
    write("mb2", "duplicates", info(tag(1, b"a\0"), tag(1, b"b\0"), tag(4, u32(1)),
                                    tag(4, u32(1) + u32(2)), tag(14, RSDP_V1[:12]), tag(14, RSDP_V1),
                                    module(5, 4, b"backwards"), tag(3, b"")))
    write("mb2", "no_end_tag", info(tag(1, b"x\0"), end=False))
    write("mb2", "total_too_big", info(tag(1, b"x\0"), total=4096))
    write("mb2", "cmdline_unterminated", info(tag(1, b"abc")))


# ---- acpi: RSDP and tables (tests/unit/test_acpi.c), in fuzz_acpi.c's format ----
# Pointer fields hold table numbers (1 = the first table); the harness makes
# them addresses. Flags bit 0: fix the tables' checksums, bit 1: the RSDP's.
def sdt(sig, body, revision=1):
    return sig + u32(36 + len(body)) + bytes([revision, 0]) + b"SPRIG " + bytes(8) + bytes(12) + body


def rsdp(revision, rsdt, xsdt):
    r = bytearray(36 if revision >= 2 else 20)
    put(r, 0, b"RSD PTR ")
    put(r, 9, b"SPRIG ")
    r[15] = revision
    put(r, 16, u32(rsdt))
    if revision >= 2:
        put(r, 20, u32(36) + u64(xsdt))
    return bytes(r)


def gas(space, width, addr):
    return bytes([space, width, 0, 1]) + u64(addr)


def fadt(v1, dsdt):
    t = bytearray(sdt(b"FACP", bytes((116 if v1 else 276) - 36)))
    put(t, 40, u32(dsdt))
    put(t, 48, u32(0xb2))
    t[52] = 0xf1
    put(t, 64, u32(0x604))
    put(t, 76, u32(0x608))
    t[91] = 4
    if not v1:
        put(t, 112, u32(1 << 10 | 1 << 8))
        put(t, 116, gas(1, 8, 0xcf9))
        t[128] = 6
        put(t, 140, u64(dsdt))
        put(t, 172, gas(1, 16, 0x1004))
        put(t, 184, gas(1, 16, 0x2004))
        put(t, 208, gas(1, 32, 0x1008))
        put(t, 40, u32(0))
    return bytes(t)


def madt():
    e = b""
    for apic, flags in [(0, 1), (1, 1), (2, 0), (3, 2), (0xff, 1)]:
        e += bytes([0, 8, apic, apic]) + u32(flags)
    e += bytes([1, 12, 0, 0]) + u32(0xfec00000) + u32(0)
    e += bytes([9, 16, 0, 0]) + u32(1) + u32(1) + u32(1)
    e += bytes([9, 16, 0, 0]) + u32(300) + u32(1) + u32(300)
    e += bytes([5, 12, 0, 0]) + u64(0xfee00000)
    return sdt(b"APIC", u32(0xfee00000) + u32(1) + e)


S5_AML = bytes([0x10, 0x05]) + b"_SB_" + bytes([0x08]) + b"_S5_" + bytes(
    [0x12, 0x08, 0x04, 0x0a, 0x05, 0x0a, 0x07, 0x00, 0x00])
# Package with a two-byte PkgLength (13) and word and dword elements.
S5_AML_WIDE = b"\x08_S5_\x12\x4d\x00\x04\x0b\x05\x00\x0c\x07\x00\x00\x00\x00\x00" + bytes(8)


def acpi_input(flags, chunks):
    return bytes([flags]) + b"".join(u16(len(c)) + c for c in chunks)


def acpi():
    # tables: 1 XSDT, 2 FADT, 3 MADT, 4 DSDT, 5 RSDT
    tables = [sdt(b"XSDT", u64(2) + u64(3)), fadt(False, 4), madt(), sdt(b"DSDT", S5_AML),
              sdt(b"RSDT", u32(3) + u32(2))]
    write("acpi", "xsdt_full", acpi_input(3, [rsdp(2, 5, 1)] + tables))
    write("acpi", "rsdt_rev0", acpi_input(3, [rsdp(0, 2, 0), madt(), sdt(b"RSDT", u32(1) + u32(3)),
                                              fadt(True, 4), sdt(b"DSDT", S5_AML_WIDE)]))
    write("acpi", "xsdt_bad_sums", acpi_input(0, [rsdp(2, 5, 1)] + tables))
    write("acpi", "tables_bad_sums", acpi_input(2, [rsdp(2, 5, 1)] + tables))
    write("acpi", "short_tables", acpi_input(3, [rsdp(2, 0, 1), sdt(b"XSDT", u64(2) + u64(3) + u64(0)),
                                                 sdt(b"FACP", b""), sdt(b"APIC", u32(0))[:40]]))
    bad_madt = sdt(b"APIC", u32(0xfee00000) + u32(0) + bytes([0, 8, 0, 0]) + u32(1) + bytes([0, 0, 1, 1]))
    write("acpi", "madt_zero_entry", acpi_input(3, [rsdp(0, 1, 0), sdt(b"RSDT", u32(2)), bad_madt]))
    # For acpi_find_rsdp, which scans the raw input on 16-byte boundaries.
    r = bytearray(rsdp(0, 0x12345678, 0))
    r[8] = -sum(r) & 0xff
    write("acpi", "rsdp_scan", bytes(16) + bytes(r) + b"junk")


# ---- parse: lib/parse.c, one string ----
PARSE_SEEDS = {
    "cmdline": b'"run=vm create t touch -- mib=64; vm run t; stats t" leaf_hint=off prefetch=both',
    "quotes": b"a=\"b c\" 'd e'=f \\\"g h\\\\ i\\ j run=\"x;\\\"y\\\"; z\"",
    "number": b"0x7fffffffffffffff",
    "number_max": b"18446744073709551615",
    "size": b"64MiB",
    "size_hex": b"0x10kb",
    "commands": b" mem ;; cpus ;\tvm list;   ",
    "words": b"vm create NAME MODULE mem=128M backing=eager -- ARGS mem",
}


def parse():
    for name, data in PARSE_SEEDS.items():
        write("parse", name, data)


# ---- insn: instruction bytes (16-byte window), then the emulation state
# (tests/fuzz/fuzz_insn.c): per segment base and per register a flag byte,
# odd = 8 bytes follow, else (registers) 1; then RIP, RFLAGS, fail_at, salt;
# then (mode) the stack's width flag, CR0, CR4, six selectors, CPL, long
# mode, GDT base and limit, LDT base, limit and usable.
def insn_state(regs=None, segs=None, rip=0x1000, rflags=2, fail_at=0, salt=0x1234, mode=b""):
    out = b""
    for i in range(6):
        base = (segs or {}).get(i, 0)
        out += b"\x01" + u64(base) if base else b"\x00"
    for i in range(16):
        v = (regs or {}).get(i, 0x10 * i)
        out += b"\x01" + u64(v) if v > 0xff else b"\x00" + bytes([v])
    return out + u64(rip) + u64(rflags) + bytes([fail_at]) + u64(salt) + mode


def insn_mode(stack32=1, cr0=0x80000011, cr4=0x20, sels=(0x10, 0x8, 0x10, 0x10, 0, 0), cpl=0,
              long_mode=1, gdt=(0x2000, 0x3f), ldt=(0, 0, 0)):
    return (bytes([stack32]) + u64(cr0) + u64(cr4) + b"".join(struct.pack("<H", x) for x in sels) +
            bytes([cpl, long_mode]) + u64(gdt[0]) + struct.pack("<H", gdt[1]) + u64(ldt[0]) +
            struct.pack("<H", ldt[1]) + bytes([ldt[2]]))


INSN_SEEDS = {
    "mov_store_disp8": b"\x89\x48\x20",
    "mov_store_rex_w": b"\x48\x89\x48\x20",
    "mov_store_spl": b"\x40\x88\x60\x20",
    "mov_store_ah": b"\x88\x60\x20",
    "mov_sib_r12": b"\x4a\x89\x0c\xe0",
    "mov_rip_rel": b"\x89\x05\x10\x00\x00\x00",
    "mov_eip_rel": b"\x67\x89\x05\x10\x00\x00\x00",
    "mov_load_abs": b"\x8b\x04\x25\x00\x00\xe0\xfe",
    "mov_fs": b"\x64\x8b\x04\x25\x10\x00\x00\x00",
    "mov_imm_eoi": b"\xc7\x80\xb0\x00\x00\x00\x00\x00\x00\x00",
    "mov_imm64": b"\x48\xc7\x03\xff\xff\xff\xff",
    "moffs64": b"\xa1\x20\x00\xe0\xfe\x00\x00\x00\x00",
    "moffs_67": b"\x67\xa3\x20\x00\xe0\xfe",
    "movzx": b"\x0f\xb6\x03",
    "movsx_w": b"\x48\x0f\xbf\x03",
    "movsxd": b"\x48\x63\x03",
    "add_mem_reg": b"\x01\x03",
    "sub_reg_mem": b"\x2b\x03",
    "cmp_imm8": b"\x48\x83\x3b\x80",
    "and_imm32": b"\x81\x23\x00\xff\xff\xff",
    "lock_or": b"\xf0\x83\x0b\x01",
    "adc_byte": b"\x80\x13\x7f",
    "test_imm": b"\xf7\x03\x00\x00\x01\x00",
    "xchg": b"\x87\x03",
    "neg": b"\xf6\x1b",
    "lock_inc": b"\xf0\x48\xff\x03",
    "rep_movsd": b"\xf3\xa5",
    "rep_stosq": b"\xf3\x48\xab",
    "lodsb_fs": b"\x64\xac",
    "rep_movsb_67": b"\x67\xf3\xa4",
    "bx_si_16": b"\x89\x00",
    "bp_disp_16": b"\x89\x46\x02",
    "abs16": b"\x89\x06\x34\x12",
    "data16_addr32": b"\x67\x66\x89\x44\x8b\x10",
    "prefixes_15": b"\x66" * 13 + b"\x89\x03",
    "prefixes_16": b"\x67" * 10 + b"\xc7\x03\x00\x00\x00\x00",
    "rex_then_legacy": b"\x48\x66\x89\x03",
    "vex": b"\xc5\xf8\x77",
    "truncated": b"\x89\x80\x00",
}

# The ops that need the mode part of the state: stack, segments, SSE.
INSN_MODE_SEEDS = {
    "xadd": b"\xf0\x0f\xc1\x03",
    "cmovne": b"\x0f\x45\x03",
    "btc_reg": b"\x0f\xbb\x0b",
    "bts_imm": b"\x48\x0f\xba\x2b\x3f",
    "bsr": b"\x48\x0f\xbd\x03",
    "shld_cl": b"\x0f\xa5\x0b",
    "shrd_imm": b"\x48\x0f\xac\x0b\x05",
    "imul3": b"\x69\x03\x37\x01\x00\x00",
    "div": b"\x48\xf7\x33",
    "idiv_byte": b"\xf6\x3b",
    "smsw": b"\x0f\x01\x23",
    "mov_from_ss": b"\x8c\x13",
    "push_mem": b"\xff\x33",
    "pop_mem_rsp": b"\x8f\x44\x24\x08",
    "push16": b"\x66\xff\x33",
    "call_mem": b"\xff\x13",
    "jmp_mem": b"\xff\x23",
    "ret_imm": b"\xc2\x10\x00",
    "leave": b"\xc9",
    "enter1": b"\xc8\x20\x00\x01",
    "rep_insb": b"\xf3\x6c",
    "rep_outsw": b"\xf3\x66\x6f",
    "movups_load": b"\x0f\x10\x03",
    "movaps_store": b"\x0f\x29\x03",
    "movq_mmx": b"\x0f\x7f\x03",
    "movd_rexw": b"\x66\x48\x0f\x6e\x03",
    "mov_ss": b"\x8e\x13",
    "mov_ds_ldt": b"\x8e\x1b",
    "ltr": b"\x0f\x00\x1b",
    "jmp_far_rexw": b"\x48\xff\x2b",
}


def insn():
    for name, code in INSN_SEEDS.items():
        window = code.ljust(16, b"\x90")[:16]
        regs = {3: 0x1100, 6: 0x1200, 7: 0x1300, 1: 3}
        write("insn", name, window + insn_state(regs=regs, segs={4: 0x7000}))
    # REP with a count that wraps, DF set, segment bases near 4 GiB, a failing write
    write("insn", "rep_movs_df_fault", b"\xf3\x66\xa5".ljust(16, b"\x90") +
          insn_state(regs={1: 0x10000, 6: 0xffff}, segs={3: 0xfffff000, 0: 0xffff0000},
                     rflags=0x402, fail_at=2))
    write("insn", "wrap_rip16", b"\x8b\x47\x00".ljust(16, b"\x90") +
          insn_state(regs={3: 0xffff, 7: 0xff}, rip=0xfffe, fail_at=0))
    for name, code in INSN_MODE_SEEDS.items():
        window = code.ljust(16, b"\x90")[:16]
        regs = {3: 0x1100, 6: 0x1200, 7: 0x1300, 1: 3, 4: 0x1f00, 5: 0x1f80}
        write("insn", name, window + insn_state(regs=regs, segs={4: 0x7000}, mode=insn_mode()))


# ---- snapshot: images and patches to the flat VM's records (tests/fuzz/fuzz_snapshot.c) ----
# The images come from mksnap (tests/e2e/mksnap.c), which builds them from
# sprig's own headers: `make build/host/mksnap` first. 4 KiB of memory each;
# some with one record broken (a field of the APIC, a device, the stream).
# The patches overwrite the records of a VM of two vCPUs, the AP waiting for
# its SIPI; with none, the flat VM itself.
MKSNAP = os.path.join(HERE, "..", "..", "build", "host", "mksnap")
SNAPSHOT_AREA = 832            # fuzz_snapshot.c's AREA, the FPU area it accepts


def patch(backend, *records):
    return bytes([backend]) + b"".join(u16(off) + bytes([len(data)]) + data for off, data in records)


def snapshot():
    if not os.path.exists(MKSNAP):
        print("make_corpus: no build/host/mksnap (make build/host/mksnap): "
              "snapshot images left as they are", file=sys.stderr)
    else:
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "image")
            for backend in ("svm", "vmx"):
                for suffix, fault, vcpus in (("", "none", 1), ("_apic_base", "apic_base", 1),
                                             ("_2vcpus", "none", 2), ("_pic", "pic_state", 1),
                                             ("_pit", "pit_count", 1),
                                             ("_record", "record_version", 1)):
                    subprocess.run([MKSNAP, out, backend, str(SNAPSHOT_AREA), fault, "4096",
                                    str(vcpus)], check=True)
                    with open(out, "rb") as f:
                        write("snapshot", "image_" + backend + suffix, f.read())
    write("snapshot", "patch_svm_none", patch(0))
    write("snapshot", "patch_vmx_none", patch(1))


# The setup header of Debian 6.1's vmlinuz (protocol 2.15), as in
# tests/unit/test_bzimage_loader.c.
DEBIAN_HDR = bytes.fromhex(
    "27010020d807000000ffff000055aaeb6a486472530f02000000000010c0420001008000001000"
    "000000000000000000000000e05b000000000000ffffff7f0000200001157f00ff0700000000000000"
    "00000000000000cc020000e4ef7b00000000000000000000000001000000000080f903208d7c00fc567d00")


def bz_image(setup_sects=3, kernel=0x2000, patches=()):
    img = bytearray((i * 7 + 3) & 0xff for i in range((setup_sects + 1) * 512 + kernel))
    put(img, 0x1f1, DEBIAN_HDR)
    img[0x1f1] = setup_sects
    put(img, 0x1f4, u32(kernel // 16))
    for off, data in patches:
        put(img, off, data)
    return bytes(img)


def bz_input(mem, initrd_units, cmdline, image):
    return bytes([mem]) + u16(initrd_units) + bytes([len(cmdline)]) + cmdline + image


def bzimage():
    cmd = b"console=ttyS0 sprig.run=\"uname -a\""
    write("bzimage", "debian_128m", bz_input(0, 20, cmd, bz_image()))
    write("bzimage", "debian_81m_initrd", bz_input(4, 4096, b"", bz_image()))
    write("bzimage", "debian_16m_refused", bz_input(2, 0, b"x", bz_image()))
    write("bzimage", "not_relocatable", bz_input(0, 1, b"", bz_image(patches=((0x234, b"\0"),))))
    write("bzimage", "old_protocol", bz_input(0, 0, b"", bz_image(patches=((0x206, u16(0x0209)),))))
    # initrd_addr_max one page above the kernel's init_size: 8 KiB do not fit.
    write("bzimage", "initrd_addr_max_low", bz_input(5, 32, b"", bz_image(
        patches=((0x22c, u32(0x4f98fff)),))))


def virtq_input(log2_size, features, desc, avail, used, pokes):
    """fuzz_virtq.c's input: the queue, then guest RAM with pokes (offset, bytes)."""
    ram = bytearray(0x4000)
    for off, data in pokes:
        put(ram, off, data)
    return bytes([log2_size, features]) + u16(desc // 2) + u16(avail // 2) + u16(used // 2) + bytes(ram)


def vdesc(table, i, addr, length, flags, nxt):
    return (table + 16 * i, struct.pack("<QIHH", addr, length, flags, nxt))


def virtq():
    """Rings at desc 0x0, avail 0x800, used 0x1000; buffers from 0x2000."""
    avail = lambda idx, *heads: (0x800, u16(0) + u16(idx) + b"".join(u16(h) for h in heads))
    write("virtq", "chain_out_in", virtq_input(3, 0, 0, 0x800, 0x1000, [
        vdesc(0, 0, 0x2000, 16, 1, 1), vdesc(0, 1, 0x2100, 512, 3, 2), vdesc(0, 2, 0x2400, 1, 2, 0),
        avail(1, 0)]))
    write("virtq", "indirect_event_idx", virtq_input(2, 3, 0, 0x800, 0x1000, [
        vdesc(0, 1, 0x3000, 48, 4, 0), vdesc(0x3000, 0, 0x2000, 16, 1, 1),
        vdesc(0x3000, 1, 0x2100, 16, 3, 2), vdesc(0x3000, 2, 0x2200, 1, 2, 0), avail(2, 1, 1)]))
    write("virtq", "loop", virtq_input(3, 0, 0, 0x800, 0x1000, [
        vdesc(0, 0, 0x2000, 8, 1, 1), vdesc(0, 1, 0x2000, 8, 1, 0), avail(1, 0)]))
    write("virtq", "wrap", virtq_input(1, 0, 0, 0x800, 0x1000, [
        vdesc(0, 0, 0x2000, 8, 2, 0), vdesc(0, 1, 0x2000, 8, 0, 0), avail(1, 0, 1)]))


def main():
    guest = None
    if len(sys.argv) == 3 and sys.argv[1] == "--guest":
        guest = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit(__doc__)
    mb1(guest)
    mb2()
    acpi()
    parse()
    insn()
    snapshot()
    bzimage()
    virtq()


if __name__ == "__main__":
    main()
