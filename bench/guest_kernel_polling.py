#!/usr/bin/env python3
"""Kernel polled I/O beside pollwise's waits, and the kernel's and DPAS's rules beside pollwise's.

Three platforms, one table form (4 KiB random reads at queue depth 1, interleaved rounds, the
median of each figure over the rounds with its [min-max]):

    python3 bench/guest_kernel_polling.py guest   # boots the guest (scripts/guest/boot.sh)
    python3 bench/guest_kernel_polling.py disk    # this machine's disk (a 256 MiB file in /tmp)
    python3 bench/guest_kernel_polling.py model   # the bare-metal model (--platform=nvme-baremetal)

`guest` runs inside the guest (an emulated NVMe with a poll queue, /dev/nvme0n1), each round in
a rotated order:
  - `pollwise compare --rounds=1` over the user-space modes on a plain ring and the kernel's
    polled I/O (`iopoll`: an IOPOLL ring waited on by io_uring_enter; `hybrid_iopoll`:
    IOPOLL | HYBRID_IOPOLL);
  - `pollwise compare --rounds=1 --hipri` over the user-space modes on an IOPOLL ring;
  - fio 3.33's io_uring engine with and without `--hipri`, the peer. fio 3.33 has no option
    for HYBRID_IOPOLL, so the kernel's hybrid polling has no fio row.
`disk` and `model` run the user-space modes only (this disk has no poll queues; the model has
no HYBRID_IOPOLL, and its IOPOLL cost here is an estimate, marked so).

Every figure under TCG (the guest) is inflated: QEMU emulates the CPU, so an io_uring nop round
trip costs 1.75 us against 0.55 on the host, a 20 us sleep wakes after about 65 us, and the
emulated NVMe's latency is QEMU's own work on a host core. Ratios between rows of one run say
more than any microsecond figure. The model is deterministic: its rounds are identical.

Verdicts (pollwise's `hybrid` and `auto` against `khybrid` and `dpas`, on p50, p99 and CPU
us/IO): "wins" when pollwise's worst round beats the other's best, "loses" the other way
round, "ties" when the ranges overlap (the model: within 2%).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLLWISE = os.path.join(ROOT, "target", "release", "pollwise")
USER_MODES = ["interrupt", "poll", "hybrid", "auto", "khybrid", "dpas"]
KERNEL = ["iopoll", "hybrid_iopoll"]
FIGS = [("p50", "p50 us", 1), ("p99", "p99 us", 1), ("cpu", "CPU us/IO", 2),
        ("iops", "IOPS", 0), ("enters", "enters/IO", 2)]
TCG_CAVEAT = ("TCG caveat: QEMU emulates the guest's CPU (KVM does not work on these machines): "
              "an io_uring nop round trip costs 1.75 us against 0.55 on the host, a 20 us sleep "
              "wakes after about 65 us, and the emulated NVMe's latency is QEMU's work on a host "
              "core; every figure is inflated, compare rows of one run, not microseconds with "
              "real hardware.")


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    text = out.stdout
    return json.loads(text[text.index("{"):])


def compare(common, modes, extra=()):
    """One round of `pollwise compare` over `modes`: {variant: figures}."""
    cmd = [POLLWISE, "compare", f"--modes={','.join(modes)}", "--rounds=1", "--warmup=200ms",
           "--output-format=json"] + common + list(extra)
    out = {}
    for job in run_json(cmd)["jobs"]:
        r, pw = job["read"], job["pollwise"]
        pct = r["lat_ns"]["percentile"]
        out[job["jobname"]] = {
            "p50": pct["50.000000"] / 1e3, "p99": pct["99.000000"] / 1e3,
            "cpu": pw["cpu_us_per_io"], "iops": r["iops"], "enters": pw["enters_per_io"],
        }
    return out


def fio(filename, size, runtime, hipri):
    cmd = ["fio", "--name=fio", f"--filename={filename}", f"--size={size}", "--ioengine=io_uring",
           "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1", f"--runtime={runtime}",
           "--time_based", "--lat_percentiles=1", "--randrepeat=0", "--output-format=json"]
    if hipri:
        cmd.append("--hipri")
    job = run_json(cmd)["jobs"][0]
    r = job["read"]
    pct = r["lat_ns"]["percentile"]
    secs = r["runtime"] / 1e3
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * secs
    return {"p50": pct["50.000000"] / 1e3, "p99": pct["99.000000"] / 1e3,
            "cpu": cpu_s * 1e6 / r["total_ios"] if r["total_ios"] else 0.0,
            "iops": r["iops"], "enters": float("nan")}


def rounds_of(runners, n):
    """Runs every runner once per round, the order rotated each round: {row: [figures]}."""
    rows = {}
    for r in range(n):
        order = runners[r % len(runners):] + runners[:r % len(runners)]
        for name, fn in order:
            for row, f in fn(r).items():
                rows.setdefault(row, []).append(f)
        print(f"  round {r + 1}/{n} done", file=sys.stderr, flush=True)
    return rows


def summary(rows):
    out = {}
    for row, rs in rows.items():
        out[row] = {k: (statistics.median(x[k] for x in rs), min(x[k] for x in rs),
                        max(x[k] for x in rs)) for k, _, _ in FIGS}
    return out


def table(s, title):
    print(f"\n{title}\n")
    print("| row | " + " | ".join(h for _, h, _ in FIGS) + " |")
    print("|---|" + "---:|" * len(FIGS))
    for row, f in s.items():
        cells = []
        for k, _, d in FIGS:
            med, lo, hi = f[k]
            if med != med:  # nan: not measured
                cells.append("-")
            elif lo == hi:
                cells.append(f"{med:.{d}f}")
            else:
                cells.append(f"{med:.{d}f} [{lo:.{d}f}-{hi:.{d}f}]")
        print(f"| {row} | " + " | ".join(cells) + " |")


def verdicts(s, deterministic, suffix=""):
    print(f"\nverdicts{suffix} (lower is better; win: pollwise's worst round beats the other's best;"
          f" {'tie within 2%' if deterministic else 'tie: the ranges overlap'}):\n")
    print("| pollwise | against | p50 | p99 | CPU us/IO |")
    print("|---|---|---|---|---|")
    for ours in ["hybrid", "auto"]:
        for theirs in ["khybrid", "dpas"]:
            a, b = s.get(ours + suffix), s.get(theirs + suffix)
            if not a or not b:
                continue
            v = []
            for k in ["p50", "p99", "cpu"]:
                (am, alo, ahi), (bm, blo, bhi) = a[k], b[k]
                if deterministic:
                    verdict = "ties" if abs(am - bm) <= 0.02 * max(am, bm) else (
                        "wins" if am < bm else "loses")
                else:
                    verdict = "wins" if ahi < blo else ("loses" if alo > bhi else "ties")
                v.append(f"{verdict} ({am:.{2 if k == 'cpu' else 1}f} vs {bm:.{2 if k == 'cpu' else 1}f})")
            print(f"| {ours} | {theirs} | " + " | ".join(v) + " |")


def in_guest(a):
    dev = "/dev/nvme0n1"
    common = [f"--filename={dev}", f"--size={a.size}", "--iodepth=1", "--bs=4k",
              "--rw=randread", f"--runtime={a.runtime * len(USER_MODES + KERNEL)}s"]
    hipri_common = common[:-1] + [f"--runtime={a.runtime * len(USER_MODES)}s"]
    print(f"# guest: {open('/proc/version').read().split()[2]}, {dev} io_poll="
          f"{open('/sys/block/nvme0n1/queue/io_poll').read().strip()}, nvme poll_queues="
          f"{open('/sys/module/nvme/parameters/poll_queues').read().strip()}, {a.rounds} rounds of "
          f"{a.runtime}s per row")
    print(TCG_CAVEAT)

    def plain(r):
        modes = USER_MODES + KERNEL
        k = r % len(modes)
        return compare(common, modes[k:] + modes[:k])

    def polled(r):
        k = r % len(USER_MODES)
        got = compare(hipri_common, USER_MODES[k:] + USER_MODES[:k], ["--hipri=1"])
        return {f"{m} (IOPOLL ring)": f for m, f in got.items()}

    runners = [("plain", plain), ("polled", polled),
               ("fio", lambda r: {"fio io_uring": fio(dev, a.size, f"{a.runtime}s", False)}),
               ("fio hipri", lambda r: {"fio io_uring --hipri": fio(dev, a.size, f"{a.runtime}s", True)})]
    s = summary(rounds_of(runners, a.rounds))
    table(s, "QD1 4 KiB randread on the guest's emulated NVMe (pollwise compare --rounds=1 per round, "
             "fio beside it; medians [min-max] over rounds)")
    verdicts(s, False)
    verdicts(s, False, " (IOPOLL ring)")
    print("\nfio 3.33 has no option for HYBRID_IOPOLL: the kernel's hybrid polling has no fio row.")


def on_host_disk(a):
    fn = a.filename
    made = not os.path.exists(fn)
    subprocess.run([POLLWISE, "run", f"--filename={fn}", f"--size={a.size}", "--io_size=4k"],
                   check=True, capture_output=True)
    try:
        common = [f"--filename={fn}", f"--size={a.size}", "--iodepth=1", "--bs=4k",
                  "--rw=randread", f"--runtime={a.runtime * len(USER_MODES)}s"]
        print(f"# this machine's disk: {fn} ({a.size}), {a.rounds} rounds of {a.runtime}s per mode")

        def plain(r):
            k = r % len(USER_MODES)
            return compare(common, USER_MODES[k:] + USER_MODES[:k])
        s = summary(rounds_of([("plain", plain)], a.rounds))
        table(s, "QD1 4 KiB randread on this machine's disk (virtio-blk, no poll queues)")
        verdicts(s, False)
    finally:
        if made:
            os.remove(fn)


def on_model(a):
    # The preset with an estimated cost of one reaping IOPOLL enter (a system call, 100 ns,
    # and one check of the poll queue): an estimate, not a measurement.
    src = os.path.join(ROOT, "crates", "pollwise-cli", "presets", "nvme-baremetal.json")
    p = json.load(open(src))
    p["iopoll_ns"] = 200
    p.setdefault("sources", {})["iopoll_ns"] = "estimate: a system call (100 ns) and one poll of the NVMe completion queue"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(p, fh)
        plat = fh.name
    try:
        common = ["--ioengine=sim", f"--platform={plat}", "--iodepth=1", "--bs=4k",
                  "--rw=randread", f"--runtime={a.runtime * len(USER_MODES)}s"]
        print(f"# the bare-metal model (nvme-baremetal, iopoll_ns=200 estimated), virtual time, "
              f"{a.rounds} rounds of {a.runtime}s per mode (identical: the model is deterministic)")

        def plain(r):
            k = r % len(USER_MODES)
            return compare(common, USER_MODES[k:] + USER_MODES[:k] + ["iopoll"])

        def polled(r):
            got = compare(common, USER_MODES, ["--hipri=1"])
            return {f"{m} (IOPOLL ring)": f for m, f in got.items()}
        s = summary(rounds_of([("plain", plain), ("polled", polled)], a.rounds))
        table(s, "QD1 4 KiB randread on the bare-metal model (virtual time)")
        verdicts(s, True)
        verdicts(s, True, " (IOPOLL ring)")
    finally:
        os.remove(plat)


def guest(a):
    here = os.path.join(ROOT, "bench", "guest_kernel_polling.py")
    cmd = ["bash", os.path.join(ROOT, "scripts", "guest", "boot.sh"), "/usr/bin/python3", here,
           "in-guest", f"--rounds={a.rounds}", f"--runtime={a.runtime}", f"--size={a.size}"]
    env = dict(os.environ, GUEST_TIMEOUT=os.environ.get("GUEST_TIMEOUT", "2400"))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    sys.stderr.write(out.stderr[-3000:])
    print(out.stdout, end="")
    if out.returncode != 0:
        sys.exit(f"the guest run failed ({out.returncode})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("where", choices=["guest", "disk", "model", "in-guest"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=float, default=2.0, help="seconds per row per round")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--filename", default="/tmp/pollwise-bench.dat", help="disk: the file")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if a.where != "in-guest" and not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "pollwise-cli"], cwd=ROOT, check=True)
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: "
          f"python3 bench/guest_kernel_polling.py {' '.join(sys.argv[1:])}")
    {"guest": guest, "disk": on_host_disk, "model": on_model, "in-guest": in_guest}[a.where](a)


if __name__ == "__main__":
    main()
