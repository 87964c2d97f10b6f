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


if __name__ == "__main__":
    main()
