#!/usr/bin/env python3
"""slat, clat and lat p50 of pollwise beside fio's, same job, same file, interleaved rounds.

fio's times (HOWTO, "Interpreting the output"): slat from queueing an I/O to its submission's
return, clat from there to the completion being reaped, lat the two together. pollwise reports
the same three (JSON slat_ns, clat_ns, lat_ns). This prints each runner's medians over rounds of
the p50s and their ratios to fio's; the target is within 15% (0.85-1.15).

    python3 bench/fio_slat_clat.py                       # QD1 randread, 5 rounds of 4 s
    python3 bench/fio_slat_clat.py --rounds 3 --runtime 2 --modes interrupt,poll,hybrid
    python3 bench/fio_slat_clat.py --pollwise target/debug/pollwise --rounds 1 --runtime 1  # smoke

One definitional difference shows in slat and clat, not lat: pollwise's `interrupt` mode submits
its last batch and waits in one io_uring_enter (liburing's io_uring_submit_and_wait), so the
submission returns only with a completion. Its slat ends when that call begins (the request was
handed to the kernel then) and the system call's submit cost falls in clat; fio's io_uring engine
submits in one io_uring_enter and waits in another, so its slat includes the submit cost. Expect
pollwise interrupt's slat well under fio's and its clat above by about the same; lat compares
like with like. The polling modes submit in a call of its own, as fio does.
"""

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fio_compare  # noqa: E402  (same directory: shared runners)

KINDS = ("slat", "clat", "lat")
PCT = ["--slat_percentiles=1", "--clat_percentiles=1", "--lat_percentiles=1"]


def p50s(job):
    r = job["read"]
    out = {}
    for k in KINDS:
        pct = r[f"{k}_ns"].get("percentile") or {}
        out[k] = pct.get("50.000000", 0) / 1000.0
    out["iops"] = r["iops"]
    return out


def fio_run(opts, filename, size, runtime):
    cmd = ["fio", "--name=fio", f"--filename={filename}", f"--size={size}", "--ioengine=io_uring",
           f"--runtime={runtime}", "--time_based", "--randrepeat=0", "--output-format=json"]
    return p50s(fio_compare.run_json(cmd + PCT + opts)["jobs"][0])


def pollwise_run(binary, opts, mode, filename, size, runtime):
    cmd = [binary, "run", f"--filename={filename}", f"--size={size}", f"--runtime={runtime}",
           "--time_based", f"--mode={mode}", "--output-format=json"]
    job = fio_compare.run_json(cmd + PCT + opts)["jobs"][0]
    not_measured = job["pollwise"].get("not_measured")
    if not_measured:
        sys.exit(f"pollwise {mode} did not measure {not_measured}: slat/clat cannot be compared")
    return p50s(job)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filename", default="/tmp/pollwise-bench.dat")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--runtime", type=float, default=4.0, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", default="interrupt,poll", help="pollwise modes, comma-separated")
    ap.add_argument("--iodepth", type=int, default=1)
    ap.add_argument("--pollwise", help="the pollwise binary (default: build and use the release one)")
    args = ap.parse_args()

    fio_compare.ensure_fio()
    binary = args.pollwise
    if binary is None:
        fio_compare.build()
        binary = fio_compare.POLLWISE
    opts = ["--rw=randread", "--bs=4k", "--direct=1", f"--iodepth={args.iodepth}"]
    created = not os.path.exists(args.filename)
    subprocess.run([binary, "run", f"--filename={args.filename}", f"--size={args.size}",
                    "--io_size=4k"], check=True, capture_output=True)
    runtime = f"{args.runtime}s"
    runners = [("fio", None)] + [(f"pollwise {m}", m) for m in args.modes.split(",")]
    rounds = {name: [] for name, _ in runners}
    try:
        for r in range(args.rounds):
            order = runners[r % len(runners):] + runners[:r % len(runners)]
            for name, mode in order:
                if mode is None:
                    f = fio_run(opts, args.filename, args.size, runtime)
                else:
                    f = pollwise_run(binary, opts, mode, args.filename, args.size, runtime)
                rounds[name].append(f)
    finally:
        if created:
            os.remove(args.filename)
    med = {n: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for n, rs in rounds.items()}
    base = med["fio"]
    print(f"\n## {' '.join(opts)}: p50 in us, medians over {args.rounds} rounds x {runtime}\n")
    print("| runner | IOPS | slat p50 | clat p50 | lat p50 | slat vs fio | clat vs fio | lat vs fio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def ratio(m, k):
        if base[k] <= 0:
            return "n/a"
        x = m[k] / base[k]
        return f"{x:.2f}" + ("" if 0.85 <= x <= 1.15 else " (!)")

    for name, m in med.items():
        print(f"| {name} | {m['iops']:.0f} | {m['slat']:.2f} | {m['clat']:.2f} | {m['lat']:.2f} "
              f"| {ratio(m, 'slat')} | {ratio(m, 'clat')} | {ratio(m, 'lat')} |")
    print("\n(!) outside 0.85-1.15 of fio's. pollwise interrupt's slat ends where its submit-and-wait"
          "\ncall begins; fio's slat includes its submit call (see this script's header).")


if __name__ == "__main__":
    main()
