#!/usr/bin/env python3
"""pollwise beside fio, on the same file, in the same run.

Runs each case as interleaved rounds (fio, then every pollwise mode, the order rotated each
round), so drift on a shared machine hits every runner alike, and prints medians and ratios.
fio is the peer users trust: its io_uring engine at the same settings is the baseline.

    python3 bench/fio_compare.py                 # 256 MiB file in /tmp, 5 rounds of 4 s
    python3 bench/fio_compare.py --runtime 2 --rounds 3 --cases qd1
    python3 bench/fio_compare.py --filename /dev/nvme0n1 --size 1G   # a real device

Latency is fio's total latency (lat_ns, with --lat_percentiles=1: submission to completion),
which is what pollwise measures (push to reap). CPU us per I/O is the job's usr+sys CPU over its
completed I/Os; for both tools it includes the kernel's io_uring threads of the process.
Installs fio with apt-get if it is missing.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLLWISE = os.path.join(ROOT, "target", "release", "pollwise")

CASES = {
    # name: (common job options, pollwise modes)
    "qd1": (
        ["--rw=randread", "--bs=4k", "--direct=1", "--iodepth=1"],
        ["interrupt", "poll"],
    ),
    "qd128": (
        [
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--iodepth=128",
            "--iodepth_batch_submit=32",
            "--iodepth_batch_complete_min=32",
        ],
        ["interrupt", "poll"],
    ),
}


def ensure_fio():
    if shutil.which("fio"):
        return
    print("installing fio (apt-get)...", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "fio"], check=True)


def build():
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pollwise-cli"], cwd=ROOT, check=True)


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    text = out.stdout
    # fio may print notes before its JSON.
    return json.loads(text[text.index("{"):])


def figures(job, lat_key):
    r = job["read"]
    ios = r["total_ios"]
    runtime_s = r["runtime"] / 1000.0
    pct = r[lat_key]["percentile"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * runtime_s
    return {
        "iops": r["iops"],
        "p50": pct["50.000000"] / 1000.0,
        "p99": pct["99.000000"] / 1000.0,
        "p99.9": pct["99.900000"] / 1000.0,
        "cpu_us_per_io": cpu_s * 1e6 / ios if ios else 0.0,
    }


def fio_run(opts, filename, size, runtime):
    cmd = ["fio", "--name=fio", f"--filename={filename}", f"--size={size}", "--ioengine=io_uring",
           f"--runtime={runtime}", "--time_based", "--lat_percentiles=1", "--randrepeat=0",
           "--output-format=json"] + opts
    return figures(run_json(cmd)["jobs"][0], "lat_ns")


def pollwise_run(opts, mode, filename, size, runtime):
    cmd = [POLLWISE, "run", f"--filename={filename}", f"--size={size}", f"--runtime={runtime}",
           "--time_based", f"--mode={mode}", "--lat_percentiles=1", "--output-format=json"] + opts
    job = run_json(cmd)["jobs"][0]
    # Total latency beside fio's total latency (both lat_ns, fio's definition).
    f = figures(job, "lat_ns")
    # pollwise reports its own CPU per I/O directly; use it (same definition as above).
    f["cpu_us_per_io"] = job["pollwise"]["cpu_us_per_io"]
    f["enters_per_io"] = job["pollwise"]["enters_per_io"]
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filename", default="/tmp/pollwise-bench.dat")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--runtime", type=float, default=4.0, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--json-out", help="write all figures here")
    args = ap.parse_args()

    ensure_fio()
    build()
    created = not os.path.exists(args.filename)
    # Lay the file out once (pollwise fills it with random data, as fio would).
    subprocess.run([POLLWISE, "run", f"--filename={args.filename}", f"--size={args.size}",
                    "--io_size=4k"], check=True, capture_output=True)
    runtime = f"{args.runtime}s"
    results = {}
    try:
        for case in args.cases.split(","):
            opts, modes = CASES[case]
            runners = [("fio", None)] + [(f"pollwise {m}", m) for m in modes]
            rounds = {name: [] for name, _ in runners}
            for r in range(args.rounds):
                order = runners[r % len(runners):] + runners[:r % len(runners)]
                for name, mode in order:
                    if mode is None:
                        f = fio_run(opts, args.filename, args.size, runtime)
                    else:
                        f = pollwise_run(opts, mode, args.filename, args.size, runtime)
                    rounds[name].append(f)
            med = {name: {k: statistics.median(x[k] for x in rs) for k in rs[0]}
                   for name, rs in rounds.items()}
            results[case] = {"options": opts, "rounds": rounds, "median": med}
            print(f"\n## {case}: {' '.join(opts)}  ({args.rounds} rounds x {runtime}, medians)\n")
            print("| runner | IOPS | p50 us | p99 us | p99.9 us | CPU us/IO | IOPS vs fio | CPU/IO vs fio |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            base = med["fio"]
            for name, m in med.items():
                print(f"| {name} | {m['iops']:.0f} | {m['p50']:.1f} | {m['p99']:.1f} | {m['p99.9']:.1f} "
                      f"| {m['cpu_us_per_io']:.2f} | {m['iops'] / base['iops']:.3f} "
                      f"| {m['cpu_us_per_io'] / base['cpu_us_per_io']:.3f} |")
            sys.stdout.flush()
    finally:
        if created:
            os.remove(args.filename)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
