#!/usr/bin/env python3
"""make lab-check: the LAVA jobs of lab/ run and validated locally, with
Debian's lava-dispatcher and no server (docs/lab.md).

lava-server is never installed: its package is fetched with `apt-get
download` and unpacked with `dpkg-deb -x` into build/lava-server/ (kept
there) for the device-type templates the device dictionaries extend. The
lab ISO (build/lab/sprig-lab.iso: build/sprig.elf with every guest of
build/guests/ as a module) runs job (a) on the QEMU device with lava-run;
every test case is read from the "results" records of its log, and every
case the job names must be there and pass. The board's pre-installed-GRUB
job (minimal boot) is then checked with `lava-run --validate`. The TFTP job
needs a TFTP daemon for lava-run; its GRUB commands run instead under QEMU
with OVMF, whose user network has a TFTP server of its own.

As a tests/run.py module: SCENARIOS, each LAVA case one check. Alone:
`python3 tests/lab_check.py` prints each case and exits 1 on any failed or
missing one."""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

import jinja2
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e"))
from machine import PROMPT, Machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(ROOT, "lab")
OUT = os.path.join(ROOT, "build", "lab")
SERVER = os.path.join(ROOT, "build", "lava-server")
TEMPLATES = os.path.join(SERVER, "usr", "share", "lava-server", "device-types")
# lava-run's scratch directory is fixed: each run gets a private tmpfs there.
LAVA_TMP = "/var/lib/lava/dispatcher/tmp"
# The lab ISO's kernel arguments: a hang becomes a reset the lab sees.
LAB_ARGS = "watchdog=300 panic=reboot"

SCENARIOS = ["lava_jobs"]


def server_templates():
    """lava-server's device-type templates, fetched and unpacked once."""
    if os.path.isfile(os.path.join(TEMPLATES, "qemu.jinja2")):
        return TEMPLATES
    os.makedirs(SERVER, exist_ok=True)
    for old in glob.glob(os.path.join(SERVER, "*.deb")):
        os.remove(old)
    subprocess.run(["apt-get", "download", "-q", "lava-server"], cwd=SERVER, check=True,
                   stdout=subprocess.DEVNULL)
    deb = glob.glob(os.path.join(SERVER, "lava-server_*.deb"))[0]
    subprocess.run(["dpkg-deb", "-x", deb, SERVER], check=True)
    return TEMPLATES


def render(template, dest, **context):
    """Render lab/devices/ or lab/jobs/ TEMPLATE into build/lab/DEST."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(
        [os.path.join(LAB, "devices"), os.path.join(LAB, "jobs"), server_templates()]),
        undefined=jinja2.StrictUndefined if template.endswith(".yaml.jinja2")
        else jinja2.Undefined)
    text = env.get_template(template).render(**context)
    yaml.safe_load(text)  # rendered YAML must parse
    path = os.path.join(OUT, dest)
    with open(path, "w") as f:
        f.write(text)
    return path


def grub_over_tftp(check, job):
    """The TFTP job's GRUB commands, typed by LAVA at the board's grub>, in
    a GRUB menu entry instead, under OVMF with a virtio NIC: QEMU's user
    network answers DHCP and serves sprig.elf and the guests' tar over TFTP
    from 10.0.2.2. sprig must come up with every guest of the tar as a
    module, and run one."""
    with open(job) as f:
        boot = [a["boot"] for a in yaml.safe_load(f)["actions"] if "boot" in a][0]
    subst = {"{SERVER_IP}": "10.0.2.2", "{KERNEL}": "sprig.elf", "{RAMDISK}": "sprig-guests.tar"}
    lines = []
    for cmd in boot["commands"]:
        for k, v in subst.items():
            cmd = cmd.replace(k, v)
        lines.append("  " + cmd)
    top = os.path.join(OUT, "tftp")
    for d in ("iso/boot/grub", "srv"):
        os.makedirs(os.path.join(top, d), exist_ok=True)
    with open(os.path.join(top, "iso", "boot", "grub", "grub.cfg"), "w") as f:
        f.write("\n".join(["set timeout=0", "serial --unit=0 --speed=115200",
                           "terminal_input serial console", "terminal_output serial console",
                           "menuentry tftp {"] + lines + ["}", ""]))
    shutil.copy(os.path.join(ROOT, "build", "sprig.elf"), os.path.join(top, "srv"))
    shutil.copy(os.path.join(OUT, "sprig-guests.tar"), os.path.join(top, "srv"))
    iso = os.path.join(top, "grub-tftp.iso")
    subprocess.run(["grub-mkrescue", "-o", iso, os.path.join(top, "iso")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with tarfile.open(os.path.join(OUT, "sprig-guests.tar")) as tar:
        guests = sorted(n[:-len(".elf")] for n in tar.getnames())
    m = Machine(iso, firmware="uefi",
                extra=["-netdev", "user,id=n0,tftp=" + os.path.join(top, "srv"),
                       "-device", "virtio-net-pci,netdev=n0"])
    try:
        m.expect(PROMPT, timeout=120)
        out = m.command("modules")
        loaded = sorted(line.split()[-1] for line in out.splitlines()
                        if line.startswith("module "))
        check("lava/board-tftp-grub-modules", loaded == guests,
              "loaded %s, the tar has %s" % (loaded, guests))
        m.command("vm create t hello -- over tftp")
        out = m.command("vm run t timeout=60", timeout=90)
        check("lava/board-tftp-grub-runs-guest", '[t] args: "over tftp"' in out and
              "vm t exited: status 0" in out, out)
    finally:
        m.close()


def lab_images():
    """The lab ISO (job (a), a USB stick, a GRUB entry's files) and the tar
    of the guests that the TFTP job's GRUB opens as a disk (ustar: GRUB's
    tar module reads no pax headers)."""
    iso = os.path.join(OUT, "sprig-lab.iso")
    guests = sorted(glob.glob(os.path.join(ROOT, "build", "guests", "*.elf")))
    subprocess.run([os.path.join(ROOT, "tools", "mkiso.sh"),
                    os.path.join(ROOT, "build", "sprig.elf"), iso, LAB_ARGS, *guests], check=True)
    with tarfile.open(os.path.join(OUT, "sprig-guests.tar"), "w",
                      format=tarfile.USTAR_FORMAT) as tar:
        for g in guests:
            tar.add(g, arcname=os.path.basename(g))
    return iso


def lava_run(device, job, job_id, validate=False):
    """lava-run as root in a mount namespace of its own, with a private
    tmpfs on its scratch directory; returns (exit status, log records)."""
    out = os.path.join(OUT, "job-%s" % job_id)
    os.makedirs(out, exist_ok=True)
    os.makedirs(LAVA_TMP, exist_ok=True)
    argv = ["lava-run", "--device", device, "--job-id", str(job_id), "--output-dir", out]
    if validate:
        argv.append("--validate")
    cmd = "mount -t tmpfs lava-tmp %s && exec %s" % (
        LAVA_TMP, " ".join(shlex.quote(a) for a in argv + [job]))
    p = subprocess.run(["unshare", "-m", "sh", "-c", cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    with open(os.path.join(out, "log.jsonl"), "w") as f:
        f.write(p.stderr)
    records = []
    for line in p.stderr.splitlines():
        # One JSON object per line: {"dt": ..., "lvl": ..., "msg": ...}.
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "lvl" in rec:
            records.append(rec)
    return p.returncode, records


def job_cases(job):
    """(definition, case) of every named command of the job's interactive
    tests, in order, and of every script (LAVA's own "lava" records)."""
    with open(job) as f:
        actions = yaml.safe_load(f)["actions"]
    cases, stage = [], 0
    for action in actions:
        if "test" not in action:
            continue
        # Test actions count from 0, as LAVA names their stage.
        for script in action["test"].get("interactive", []):
            for cmd in script["script"]:
                if "name" in cmd:
                    cases.append(("%d_%s" % (stage, script["name"]), cmd["name"]))
            cases.append(("lava", "%d_%s" % (stage, script["name"])))
        stage += 1
    return cases


def log_errors(records):
    """The log's errors, and the reason LAVA gives for the job's result."""
    errors = [str(r["msg"]) for r in records if r["lvl"] in ("error", "exception")]
    return errors + [r["msg"]["error_msg"] for r in records
                     if r["lvl"] == "results" and "error_msg" in r["msg"]]


def lava_jobs(check):
    """Job (a) run, every case checked; the board's minimal-boot job
    validated; the board's TFTP job's GRUB commands run."""
    os.makedirs(OUT, exist_ok=True)
    t = time.time()
    iso = lab_images()
    device = render("qemu-sprig.jinja2", "qemu-sprig.yaml")
    job = render("qemu.yaml.jinja2", "qemu.yaml", iso_url="file://" + iso)
    rc, records = lava_run(device, job, 1)
    print("  lava-run of job (a): %.0f s, exit %d; log in build/lab/job-1/log.jsonl" %
          (time.time() - t, rc))
    got = {}
    for r in records:
        if r["lvl"] == "results":
            got[(r["msg"]["definition"], r["msg"]["case"])] = r["msg"]["result"]
    want = job_cases(job)
    for definition, case in want:
        result = got.get((definition, case), "missing")
        check("lava/%s/%s" % (definition, case), result == "pass", result)
    job_result = got.get(("lava", "job"), "missing")
    check("lava/job", job_result == "pass",
          "job %s; errors: %s" % (job_result, "; ".join(log_errors(records))[-2000:]))

    board = render("board-sprig.jinja2", "board-sprig.yaml")
    minimal = render("board-grub-entry.yaml.jinja2", "board-grub-entry.yaml")
    rc, records = lava_run(board, minimal, 2, validate=True)
    check("lava/board-grub-entry-valid", rc == 0,
          "exit %d: %s" % (rc, "; ".join(log_errors(records))[-2000:]))
    tftp = render("board-tftp.yaml.jinja2", "board-tftp.yaml",
                  kernel_url="https://lab.example/sprig/sprig.elf",
                  guests_url="https://lab.example/sprig/sprig-guests.tar")
    grub_over_tftp(check, tftp)


def main():
    failed = []

    def check(name, ok, detail=""):
        print("%s %s%s" % ("ok" if ok else "FAIL", name, "" if ok else ": " + detail),
              flush=True)
        if not ok:
            failed.append(name)
    t = time.time()
    lava_jobs(check)
    print("lab-check: %s in %.0f s" % ("%d failed" % len(failed) if failed else "all passed",
                                       time.time() - t))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
