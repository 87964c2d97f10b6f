"""The GRUB entry README.md tells users to add, booted exactly as written:
the menuentry block is read from README.md itself, so that a change there is
what gets tested. grub.cfg holds that block and `set timeout=0` (GRUB's menu
then boots it at once) and nothing else, no terminal or video settings;
sprig's console is COM1 either way. One boot each under QEMU's SeaBIOS,
QEMU's OVMF and Bochs' BIOS, to sprig's prompt and one command. Under BIOS
the screen must stay in VGA text mode: sprig asks GRUB for no graphics mode
(GRUB's VBE mode set crashed under Bochs' BIOS)."""
import os
import re
import subprocess
import tempfile

from machine import PROMPT, ROOT, BochsConsole, Machine, Timeout, iso_path, scenario_main

SCENARIOS = ["readme_entry_seabios", "readme_entry_ovmf", "readme_entry_bochs"]

# The screen line sprig prints when GRUB left VGA text mode alone (BIOS).
VGA_TEXT_LINE = re.compile(r"console: screen VGA text 80x25 at 0xb8000")


def readme_entry():
    """The indented `menuentry sprig { ... }` block of README.md's section
    'Boot it on a real machine', dedented; None if it is not there."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.partition("## Boot it on a real machine")[2].partition("\n## ")[0]
    m = re.search(r"^( +)menuentry sprig \{\n(?:\1 .*\n|\n)*?\1\}$", section, re.M)
    if not m:
        return None
    indent = len(m.group(1))
    return "\n".join(line[indent:] for line in m.group(0).splitlines()) + "\n"


def entry_iso(entry):
    """build/e2e/grub-entry.iso: build/sprig.elf at /boot/sprig.elf, grub.cfg
    `set timeout=0` and ENTRY."""
    iso = iso_path("grub-entry")
    with tempfile.NamedTemporaryFile("w", suffix=".cfg") as cfg:
        cfg.write("set timeout=0\n" + entry)
        cfg.flush()
        subprocess.run([os.path.join(ROOT, "tools", "mkiso.sh"), "--cfg", cfg.name,
                        os.path.join(ROOT, "build", "sprig.elf"), iso], check=True)
    return iso


def boot_entry(check, name, console, prompt_timeout, bios):
    """Wait on CONSOLE for sprig's prompt and run `version`; under BIOS the
    screen must be VGA text."""
    try:
        try:
            boot = console.expect(PROMPT, timeout=prompt_timeout)
        except Timeout as e:
            check(name + "/prompt", False, "GRUB did not start sprig, or sprig stopped: %s" % e)
            return
        check(name + "/prompt", "sprig " in boot, boot[-1500:])
        screen = re.search(r"console: screen .*", boot)
        screen = screen.group(0) if screen else "no 'console: screen' line"
        if bios:
            check(name + "/vga-text-kept", VGA_TEXT_LINE.search(boot) is not None, screen)
        out = console.command("version", timeout=60)
        check(name + "/version", out.startswith("sprig "), out)
    finally:
        console.close()


def entry_or_fail(check, name):
    entry = readme_entry()
    check(name + "/readme-has-entry", entry is not None,
          "no indented 'menuentry sprig { ... }' in README.md's 'Boot it on a real machine'")
    return entry


def readme_entry_seabios(check):
    entry = entry_or_fail(check, "grub-entry/seabios")
    if entry:
        boot_entry(check, "grub-entry/seabios", Machine(entry_iso(entry)), 60, bios=True)


def readme_entry_ovmf(check):
    entry = entry_or_fail(check, "grub-entry/ovmf")
    if entry:
        boot_entry(check, "grub-entry/ovmf", Machine(entry_iso(entry), firmware="uefi"), 180,
                   bios=False)


def readme_entry_bochs(check):
    entry = entry_or_fail(check, "grub-entry/bochs")
    if entry:
        boot_entry(check, "grub-entry/bochs", BochsConsole(entry_iso(entry)), 600, bios=True)


if __name__ == "__main__":
    scenario_main(globals(), "readme_entry_seabios")
