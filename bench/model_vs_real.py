#!/usr/bin/env python3
"""The `here` platform model against real runs on this machine.

For every case and every mode (the order rotated each round so drift on a shared machine hits
every mode alike), it calibrates this machine (`pollwise calibrate --output-format=json`: its
JSON is a file `--platform` takes, the `platform` object being the calibrated `here` model),
runs the model on that calibration (`--ioengine=sim --platform=CALIBRATION.json`, virtual
time), then the real run (`--ioengine=io_uring`, O_DIRECT 4 KiB random reads of the same file)
with the same job options, and prints medians over the rounds:

    case, mode, metric, model, real, model/real, within 15%?

Metrics: p50 = total latency's median (lat_ns, push to reap, --lat_percentiles=1), microseconds;
CPU/IO = the job's CPU per I/O (`pollwise.cpu_us_per_io`: the process's CPU for real runs, the
threads' virtual CPU for the model), microseconds; ops/s = reads per second, all threads.

Cases:
  qd1      one thread, --iodepth=1.
  threadsT T threads (2, 4, 8: on this 2-core machine 1x, 2x, 4x the cores), each at
           --iodepth=1 with its own ring: `pollwise run --numjobs=T --group_reporting`.
           This is the contention case, not `pollwise scenario hybrid-contention` itself: that
           scenario spins --thinktime between batches, which the platform model refuses
           (`--thinktime is not modelled by --platform yet`), so it cannot be compared. Threads
           that poll or spin on 2 cores while others wait for a core measure the same mechanism
           (the scheduler's time slice against polling), in a form both sides run.

    python3 bench/model_vs_real.py                      # release build, 3 rounds x 2 s
    python3 bench/model_vs_real.py --quick              # debug build, 1 round x 0.5 s, smoke test
    python3 bench/model_vs_real.py --rounds 5 --runtime 4 --json-out /tmp/mvr.json

The model is deterministic: with one calibration its figures are the same every time; they
move only with the calibration, which is taken afresh beside every real run because this
machine's disk changes speed from minute to minute. The real figures move with whatever
else runs on the machine: on a shared machine, read the real column as a noisy measurement.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fio_compare import run_json  # noqa: E402  (same directory: the shared runner)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["interrupt", "poll", "hybrid", "adaptive", "auto"]
METRICS = [("p50_us", "p50 us"), ("cpu_us_per_io", "CPU us/IO"), ("ops_per_sec", "ops/s")]
TOLERANCE = 0.15


def binary(debug):
    return os.path.join(ROOT, "target", "debug" if debug else "release", "pollwise")


def build(debug):
    cmd = ["cargo", "build", "-q", "-p", "pollwise-cli"] + ([] if debug else ["--release"])
    subprocess.run(cmd, cwd=ROOT, check=True)


def loadavg():
    """The 1-minute load average: how busy the machine was (the real runs share it)."""
    try:
        with open("/proc/loadavg") as fh:
            return fh.read().split()[0]
    except OSError:
        return "?"


def calibrate(pw, filename, path):
    cal = run_json([pw, "calibrate", f"--filename={filename}", "--output-format=json"])
    with open(path, "w") as fh:
        json.dump(cal, fh)
    return cal


def job_figures(out):
    job = out["jobs"][0]
    r = job["read"]
    return {
        "p50_us": r["lat_ns"]["percentile"]["50.000000"] / 1000.0,
        "cpu_us_per_io": job["pollwise"]["cpu_us_per_io"],
        "ops_per_sec": r["iops"],
    }


def one_run(pw, filename, size, mode, threads, runtime, platform=None):
    cmd = [pw, "run", f"--filename={filename}", f"--size={size}", "--rw=randread", "--bs=4k",
           "--direct=1", "--iodepth=1", f"--numjobs={threads}", "--group_reporting",
           f"--runtime={runtime}s", "--time_based", f"--mode={mode}", "--lat_percentiles=1",
           "--output-format=json"]
    if platform:
        cmd += ["--ioengine=sim", f"--platform={platform}"]
    return job_figures(run_json(cmd))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filename", default="/tmp/pollwise-bench.dat")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--runtime", type=float, default=2.0, help="seconds per real run")
    ap.add_argument("--model-runtime", type=float, default=0.5,
                    help="virtual seconds per model run (its figures are deterministic)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="2,4,8", help="thread counts of the contention cases")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--debug", action="store_true", help="use the debug build")
    ap.add_argument("--no-build", action="store_true", help="use the binary as it is")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: debug build, 1 round, 0.5 s real, 0.1 s model, 2 threads")
    ap.add_argument("--json-out", help="write every round's figures here")
    args = ap.parse_args()
    if args.quick:
        args.debug, args.rounds, args.runtime, args.model_runtime = True, 1, 0.5, 0.1
        args.threads = "2"
    if not args.no_build:
        build(args.debug)
    pw = binary(args.debug)
    modes = args.modes.split(",")
    cases = [("qd1", 1)] + [(f"threads{t}", int(t)) for t in args.threads.split(",") if t]

    created = not os.path.exists(args.filename)
    if created:
        # Lay the file out once (pollwise fills it with random data).
        subprocess.run([pw, "run", f"--filename={args.filename}", f"--size={args.size}",
                        "--io_size=4k"], check=True, capture_output=True)
    load_before = loadavg()
    rounds = {(c, m): {"model": [], "real": []} for c, _ in cases for m in modes}
    calibrations = []
    fd, cal_path = tempfile.mkstemp(prefix="pollwise-here-", suffix=".json")
    os.close(fd)
    try:
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
            for case, threads in cases:
                k = r % len(modes)
                for mode in modes[k:] + modes[:k]:
                    # This disk's speed drifts from minute to minute (a shared host): the
                    # model gets a calibration taken just before the real run it is set beside.
                    calibrations.append(calibrate(pw, args.filename, cal_path))
                    model = one_run(pw, args.filename, args.size, mode, threads,
                                    args.model_runtime, platform=cal_path)
                    real = one_run(pw, args.filename, args.size, mode, threads, args.runtime)
                    rounds[(case, mode)]["model"].append(model)
                    rounds[(case, mode)]["real"].append(real)
    finally:
        os.remove(cal_path)
        if created:
            os.remove(args.filename)

    load_after = loadavg()
    plat = calibrations[-1]["platform"]
    print(f"# model (`here`, calibrated before every real run) against real runs: {args.filename}, "
          f"{'debug' if args.debug else 'release'} build, {args.rounds} round(s), "
          f"real {args.runtime} s, model {args.model_runtime} virtual s, medians; "
          f"load average {load_before} before, {load_after} after ({os.cpu_count()} CPUs)\n")
    print(f"last of {len(calibrations)} calibrations' platform: " + ", ".join(
        f"{k}={plat[k]}" for k in plat if k not in ("sources", "name")) + "\n")
    print("| case | mode | metric | model | real | model/real | within 15% |")
    print("|---|---|---|---:|---:|---:|:---:|")
    misses, total = [], 0
    table = []
    for case, _ in cases:
        for mode in modes:
            rs = rounds[(case, mode)]
            for key, label in METRICS:
                mo = statistics.median(x[key] for x in rs["model"])
                re = statistics.median(x[key] for x in rs["real"])
                ratio = mo / re if re else float("inf")
                ok = abs(ratio - 1.0) <= TOLERANCE
                total += 1
                if not ok:
                    misses.append((case, mode, label, ratio))
                table.append({"case": case, "mode": mode, "metric": key, "model": mo,
                              "real": re, "ratio": ratio, "within": ok})
                fmt = "{:.0f}" if key == "ops_per_sec" else "{:.1f}" if key == "p50_us" else "{:.2f}"
                print(f"| {case} | {mode} | {label} | {fmt.format(mo)} | {fmt.format(re)} "
                      f"| {ratio:.2f} | {'yes' if ok else 'NO'} |")
    print(f"\nsummary: {total - len(misses)} of {total} figures within 15%")
    for case, mode, label, ratio in misses:
        print(f"  miss: {case} {mode} {label}: model/real {ratio:.2f}")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"table": table, "calibrations": calibrations,
                       "rounds": {f"{c}/{m}": v for (c, m), v in rounds.items()}}, fh, indent=1)


if __name__ == "__main__":
    main()
