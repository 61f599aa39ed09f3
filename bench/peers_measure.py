#!/usr/bin/env python3
"""bench/peers.sh's measurements and table.

  peers_measure.py KIND CMD...            run CMD, print "IOPS CPU_NS_PER_IO"
  peers_measure.py --table RESULTS ROUNDS RUNTIME LOAD
  peers_measure.py --write DOC TABLE      put TABLE under the benchmark's heading in DOC

CPU per I/O is the whole process's user + system time (every thread, setup included: the
rusage of the child) over the I/Os it reports. fio and pollwise report their I/Os in JSON
(read + write total_ios of every job). t/io_uring prints one IOPS line a second and not the
last partial second: its I/Os are the mean of its lines times its wall time, and its IOPS that
mean.
"""
import json
import re
import resource
import statistics
import subprocess
import sys
import time

HEADING = "## Beside fio and t/io_uring (bench/peers.sh)"


def run(kind, cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:] + p.stdout[-2000:])
        sys.exit(1)
    if kind == "t_io_uring":
        rates = []
        for m in re.finditer(r"^IOPS=([0-9.]+)([MK]?),", p.stdout, re.M):
            rates.append(float(m.group(1)) * {"M": 1e6, "K": 1e3, "": 1}[m.group(2)])
        if not rates:
            sys.stderr.write(p.stdout[-2000:])
            sys.exit(1)
        iops = statistics.mean(rates)
        ios = iops * wall
    else:
        # fio prints notes before its JSON on some setups: the JSON is from the first '{'.
        v = json.loads(p.stdout[p.stdout.index("{"):])
        ios = sum(j[d]["total_ios"] for j in v["jobs"] for d in ("read", "write"))
        # Each direction's runtime (ms): a reported group's is its longest thread's. Not
        # job_runtime: fio sums that over a group's threads, which divided its IOPS by them.
        secs = max(j[d]["runtime"] for j in v["jobs"] for d in ("read", "write")) / 1000.0
        iops = ios / secs
    print(f"{iops:.0f} {cpu_s * 1e9 / ios:.1f}")


CASES = {
    "qd1": "QD1 4 KiB random reads, O_DIRECT, interrupt; fixed buffers + registered files (+ registered ring: t/io_uring, pollwise; pollwise --submit_mode=with_wait; O_NOATIME: t/io_uring, pollwise --noatime=1)",
    "qd128": "QD128 4 KiB random reads, batches of 32, same features",
    "qd128_lat": "the same, latencies tracked on both sides by one clock reading a batch (t/io_uring -t1; pollwise --gtod_reduce=1)",
    "null": "null engine, QD32, 512 B (pollwise in poll mode)",
    "nop": "io_uring NOPs, QD128, batches of 32, registered ring (t/io_uring -N1; pollwise --ioengine=nop, poll mode, sequential offsets: t/io_uring draws none for NOPs)",
    "nop_gtod": "the same, pollwise with --gtod_reduce=1 (one clock reading a batch; t/io_uring reads none per I/O without -t1)",
}
SIDES = ["t_io_uring", "fio", "pollwise"]


def fmt_range(vals, unit):
    med = statistics.median(vals)
    lo, hi = min(vals), max(vals)
    if unit == "iops":
        f = lambda x: f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k"
    else:
        f = lambda x: f"{x / 1e3:.2f}"
    return med, f"{f(med)} ({f(lo)}-{f(hi)})"


def table(results, rounds, runtime, load):
    rows = {}
    for line in open(results):
        c, t, kind, iops, cpu = line.split()
        rows.setdefault((c, int(t)), {}).setdefault(kind, []).append((float(iops), float(cpu)))
    out = [
        f"{rounds} interleaved rounds of {runtime} s each; median (min-max) over the rounds. "
        f"IOPS, and CPU per I/O in us (user + system of the whole process / I/Os). "
        f"Load average at the end: {load}.",
        "",
        "| case | threads | t/io_uring | fio | pollwise | pollwise / best peer |",
        "|---|---|---|---|---|---|",
    ]
    order = list(CASES)
    for (c, t) in sorted(rows, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1])):
        sides = rows[(c, t)]
        cells = []
        meds = {}
        for s in SIDES:
            if s not in sides:
                cells.append("")
                continue
            mi, si = fmt_range([x[0] for x in sides[s]], "iops")
            mc, sc = fmt_range([x[1] for x in sides[s]], "cpu")
            meds[s] = (mi, mc)
            cells.append(f"{si} IOPS, {sc} us/IO")
        ratio = ""
        if "pollwise" in meds:
            peers = [meds[s] for s in ("t_io_uring", "fio") if s in meds]
            if peers:
                best_iops = max(p[0] for p in peers)
                best_cpu = min(p[1] for p in peers)
                ratio = f"{meds['pollwise'][0] / best_iops:.2f}x IOPS, {meds['pollwise'][1] / best_cpu:.2f}x CPU/IO"
        out.append(f"| {CASES.get(c, c)} | {t} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(out)


def write(doc, tbl):
    # A new OUT file starts empty (the table is its first section).
    try:
        text = open(doc).read()
    except FileNotFoundError:
        text = ""
    section = (
        f"{HEADING}\n\n"
        "`bash bench/peers.sh` (fio 3.33 and t/io_uring built statically from Debian bookworm's `fio` "
        "source package), on this machine, "
        f"{time.strftime('%Y-%m-%d')}:\n\n{tbl}\n\n"
        "On a machine shared with other work a process gets what CPU it is given: IOPS then "
        "follow the share, and CPU per I/O is the steadier figure. The goals: null engine IOPS "
        ">= 1.5x fio's on one core; NOPs >= 0.5x t/io_uring -N1's on one core; reads <= 1.05x "
        "t/io_uring's CPU per I/O at QD1 and QD128.\n"
    )
    if HEADING in text:
        a = text.index(HEADING)
        nxt = text.find("\n## ", a + len(HEADING))
        text = text[:a] + section + ("" if nxt < 0 else text[nxt:])
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(doc, "w").write(text)


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(table(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]))
    elif sys.argv[1] == "--write":
        write(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[1], sys.argv[2:])
