#!/usr/bin/env python3
"""slat, clat and lat p50 of pollwise beside fio's, same job, same file, interleaved rounds.

fio's times (HOWTO, "Interpreting the output"): slat from queueing an I/O to its submission's
return, clat from there to the completion being reaped, lat the two together. pollwise reports
the same three (JSON slat_ns, clat_ns, lat_ns). This prints each runner's medians over rounds of
the p50s, their ranges over the rounds, and their ratios to fio's with a verdict: the target is
within 15% (0.85-1.15) on each of slat, clat and lat.

    python3 bench/fio_slat_clat.py                       # QD1 randread, 5 rounds of 4 s
    python3 bench/fio_slat_clat.py --rounds 3 --runtime 2 --modes interrupt,poll,hybrid
    python3 bench/fio_slat_clat.py --pollwise target/debug/pollwise --rounds 1 --runtime 1  # smoke

pollwise's `interrupt` runs once per --submit_modes (default both). With `with_wait` it submits its last batch and waits in one io_uring_enter (liburing's
io_uring_submit_and_wait): the submission returns only with a completion, so its slat ends when
that call begins and the call's submit cost (a virtio doorbell, a VM exit) falls in clat. fio's
io_uring engine submits in an io_uring_enter of its own (fio_ioring_commit: to_submit=N,
min_complete=0), stamps issue_time when it returns (slat ends there), and then waits in another
(fio_ioring_getevents: min_complete=N); `--submit_mode=separate` (pollwise's default) does the same, so slat and clat
compare like with like, at one more enter per batch. lat compares either way. The polling modes
always submit in a call of their own (the submit mode changes nothing for them), so they run once.
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
LOW, HIGH = 0.85, 1.15


def p50s(job):
    """The p50s in us, IOPS and CPU us per I/O (the same formula for fio and pollwise)."""
    r = job["read"]
    out = {}
    for k in KINDS:
        pct = r[f"{k}_ns"].get("percentile") or {}
        out[k] = pct.get("50.000000", 0) / 1000.0
    out["iops"] = r["iops"]
    ios = r["total_ios"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * r["runtime"] / 1000.0
    out["cpu"] = cpu_s * 1e6 / ios if ios else 0.0
    pw = job.get("pollwise") or {}
    out["enters"] = pw.get("enters_per_io", float("nan"))
    return out


def fio_run(opts, filename, size, runtime):
    cmd = ["fio", "--name=fio", f"--filename={filename}", f"--size={size}", "--ioengine=io_uring",
           f"--runtime={runtime}", "--time_based", "--randrepeat=0", "--output-format=json"]
    return p50s(fio_compare.run_json(cmd + PCT + opts)["jobs"][0])


def pollwise_run(binary, opts, mode, submit, filename, size, runtime):
    cmd = [binary, "run", f"--filename={filename}", f"--size={size}", f"--runtime={runtime}",
           "--time_based", f"--mode={mode}", f"--submit_mode={submit}", "--output-format=json"]
    job = fio_compare.run_json(cmd + PCT + opts)["jobs"][0]
    not_measured = job["pollwise"].get("not_measured")
    if not_measured:
        sys.exit(f"pollwise {mode} did not measure {not_measured}: slat/clat cannot be compared")
    return p50s(job)


def runners(modes, submit_modes):
    """(name, mode, submit mode); fio first (mode None)."""
    out = [("fio", None, None)]
    for m in modes:
        for s in (submit_modes if m == "interrupt" else ["with_wait"]):
            out.append((f"pollwise {m}" + (f" {s}" if m == "interrupt" else ""), m, s))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filename", default="/tmp/pollwise-bench.dat")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--runtime", type=float, default=4.0, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", default="interrupt,poll", help="pollwise modes, comma-separated")
    ap.add_argument("--submit_modes", default="with_wait,separate",
                    help="pollwise interrupt's --submit_mode values to run, comma-separated")
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
    order0 = runners(args.modes.split(","), args.submit_modes.split(","))
    rounds = {name: [] for name, _, _ in order0}
    try:
        for r in range(args.rounds):
            order = order0[r % len(order0):] + order0[:r % len(order0)]
            for name, mode, submit in order:
                if mode is None:
                    f = fio_run(opts, args.filename, args.size, runtime)
                else:
                    f = pollwise_run(binary, opts, mode, submit, args.filename, args.size, runtime)
                rounds[name].append(f)
    finally:
        if created:
            os.remove(args.filename)
    med = {n: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for n, rs in rounds.items()}
    rng = {n: {k: (min(x[k] for x in rs), max(x[k] for x in rs)) for k in KINDS}
           for n, rs in rounds.items()}
    base = med["fio"]
    print(f"\n## {' '.join(opts)}: p50 in us, medians over {args.rounds} rounds x {runtime} "
          "[min-max over the rounds]\n")
    print("| runner | IOPS | CPU us/IO | enters/IO | slat p50 | clat p50 | lat p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def cell(n, k):
        lo, hi = rng[n][k]
        return f"{med[n][k]:.2f} [{lo:.2f}-{hi:.2f}]"

    for n, m in med.items():
        enters = "2 (by its code)" if n == "fio" and args.iodepth == 1 else (
            "-" if m["enters"] != m["enters"] else f"{m['enters']:.2f}")
        print(f"| {n} | {m['iops']:.0f} | {m['cpu']:.1f} | {enters} | {cell(n, 'slat')} "
              f"| {cell(n, 'clat')} | {cell(n, 'lat')} |")

    def ratio(m, k):
        if base[k] <= 0:
            return None
        return m[k] / base[k]

    print(f"\n### ratios to fio's p50 (within 15%: {LOW}-{HIGH})\n")
    print("| runner | slat | clat | lat | all three within 15% |")
    print("|---|---:|---:|---:|---|")
    for n, m in med.items():
        if n == "fio":
            continue
        rs = [ratio(m, k) for k in KINDS]
        cells = ["n/a" if x is None else f"{x:.2f} {'ok' if LOW <= x <= HIGH else 'OUT'}" for x in rs]
        verdict = "yes" if all(x is not None and LOW <= x <= HIGH for x in rs) else "no"
        print(f"| {n} | {' | '.join(cells)} | {verdict} |")
    print("\nCPU us/IO: (usr_cpu + sys_cpu) x runtime / I/Os from each JSON, the same formula for"
          "\nboth. pollwise interrupt with_wait's slat ends where its submit-and-wait call begins;"
          "\nwith --submit_mode=separate it submits in a call of its own, as fio (see the header).")


if __name__ == "__main__":
    main()
