#!/usr/bin/env python3
"""Does the decision hold? auto, dpas and khybrid against auto's objective, condition by condition.

The objective (the README's): the cheapest mode whose throughput is within the slack (10%) of
the fastest mode's. In each condition, one `pollwise compare` runs the four fixed modes
(interrupt, poll, hybrid, adaptive) and the three that decide (auto; dpas and khybrid, the
published rules) side by side in interleaved rounds. The fixed modes set the line: the fastest
IOPS, and the least CPU per I/O among the fixed modes within 10% of it. A deciding mode meets
the objective when its IOPS is at least 0.90x the fastest's and its CPU per I/O at most 1.10x
that cheapest mode's (the 10% is the machine's noise, measured between rounds of one mode).

Conditions (sizes scale with the cores; every command is printed):
  disk-qd1      4 KiB random O_DIRECT reads at QD1 on a file on the root filesystem's disk
                (what `pollwise compare` runs with no arguments)
  disk-qd32     the same at QD32, submitted and reaped in batches of 8
  ramloop-qd1   QD1 on a RAM-backed loop device (a /dev/shm file behind losetup): the
                device's completion needs a CPU (the loop worker), which spinning takes
  ramloop-seed  the seed's shape on the RAM loop: threads at 2x the cores they are given, on
                half the machine's cores (16 threads on 8 of 16 cores)
  contention    the disk at QD1 with threads at 4x the cores
  timers        an unmodified liburing program (bench/c/timer_waits.c) waiting on 300 ms
                timers under `pollwise exec --mode=M`: the share of a core each mode burns
                (auto and adaptive must stay at or under 0.10)

With --runs N the whole matrix runs N times; the table gives each ratio's median and range.
--brief (CI) runs each condition for a moment and checks only that every mode did I/O.

Usage:
  python3 bench/decision_matrix.py [--pollwise PATH] [--runs 3] [--brief] [--dir DIR]
                                   [--write docs/results.md] [--conditions a,b,...]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

FIXED = ["interrupt", "poll", "hybrid", "adaptive"]
DECIDING = ["auto", "dpas", "khybrid"]
SLACK = 0.10
CPU_TOLERANCE = 1.10
TIMER_CORE_BOUND = 0.10
BEGIN = "<!-- decision-matrix:begin -->"
END = "<!-- decision-matrix:end -->"


def die(msg):
    print(f"decision_matrix: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        die(f"'{' '.join(cmd)}' exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


class Loop:
    """A RAM-backed loop device: a file in /dev/shm behind losetup, removed however we end."""

    def __init__(self, size_mb):
        if os.geteuid() != 0 or not shutil.which("losetup"):
            die("the RAM loop device needs root and losetup (util-linux): run as root, or leave "
                "out ramloop-qd1 and ramloop-seed with --conditions")
        fd, self.img = tempfile.mkstemp(prefix="pollwise-ramloop-", dir="/dev/shm")
        os.ftruncate(fd, size_mb << 20)
        os.close(fd)
        # Written once, so reads find data (a sparse tmpfs file reads zero pages without I/O).
        subprocess.run(["dd", "if=/dev/urandom", f"of={self.img}", "bs=1M",
                        f"count={size_mb}", "status=none"], check=True)
        self.dev = run(["losetup", "-f", "--show", self.img]).strip()

    def close(self):
        subprocess.run(["losetup", "-d", self.dev], check=False)
        os.unlink(self.img)


def compare(pw, target, extra, brief, modes):
    rounds, runtime = ("1", "0.1s") if brief else ("3", f"{0.3 * len(modes):.1f}s")
    cmd = [pw, "compare", f"--filename={target}", f"--modes={','.join(modes)}",
           f"--rounds={rounds}", f"--runtime={runtime}", "--output-format=json"] + extra
    if brief:
        cmd.append("--warmup=0")
    v = json.loads(run(cmd))
    out = {}
    for j in v["jobs"]:
        mode = j["pollwise"]["mode"] if "mode" in j["pollwise"] else j["jobname"]
        out[j["jobname"]] = {
            "iops": j["read"]["iops"] + j["write"]["iops"],
            "ios": j["read"]["total_ios"] + j["write"]["total_ios"],
            "cpu": j["pollwise"]["cpu_us_per_io"],
            "mode": mode,
            # What auto decided, and why (its reasons' counts and its time in each mode, ms).
            "auto": {k[5:]: (v // 1_000_000 if k.endswith("_ns") else v)
                     for k, v in j["pollwise"].items()
                     if k.startswith("auto_") and isinstance(v, int) and v},
        }
    return out


def timers(pw, prog, brief, modes):
    waits, ms = ("2", "100") if brief else ("8", "300")
    out = {}
    for m in modes:
        with tempfile.TemporaryDirectory() as d:
            summary = os.path.join(d, "summary")
            text = run([pw, "exec", f"--mode={m}", f"--summary={summary}", "--", prog, waits, ms])
            try:
                taken = sum(sum(json.loads(l).get("taken", {}).values())
                            for l in open(summary) if l.strip())
            except OSError:
                taken = 0
        line = next((x for x in text.splitlines() if x.startswith("waits=")), None)
        if line is None:
            die(f"timer_waits printed no result under --mode={m}: {text[-300:]}")
        if taken == 0:
            # Every mode would then measure liburing's own wait: a figure of nothing.
            die(f"under --mode={m} no wait of {prog} was taken over (the preload library "
                "interposes the shared liburing: link timer_waits with -luring, not statically)")
        f = dict(kv.split("=") for kv in line.split())
        out[m] = {"iops": float(f["waits"]) / float(f["wall_s"]), "ios": int(f["waits"]),
                  "cpu": float(f["core"]), "mode": m}
    return out


def verdict(cond, r):
    """Each deciding mode's (throughput ratio, CPU ratio, met) against the fixed modes."""
    if cond == "timers":
        return {m: (r[m]["iops"] / max(r[x]["iops"] for x in FIXED), r[m]["cpu"],
                    r[m]["cpu"] <= TIMER_CORE_BOUND) for m in DECIDING + FIXED}
    fastest = max(r[m]["iops"] for m in FIXED)
    within = [m for m in FIXED if r[m]["iops"] >= (1 - SLACK) * fastest]
    cheapest = min(r[m]["cpu"] for m in within)
    res = {}
    for m in DECIDING + FIXED:
        t, c = r[m]["iops"] / fastest, r[m]["cpu"] / cheapest
        res[m] = (t, c, t >= 1 - SLACK and c <= CPU_TOLERANCE)
    res["_within"] = within
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pollwise", default="target/release/pollwise")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--brief", action="store_true")
    ap.add_argument("--dir", default=None, help="where the disk file goes (default: /var/tmp)")
    ap.add_argument("--write", default=None, help="put the table into this markdown file")
    ap.add_argument("--conditions", default="disk-qd1,disk-qd32,ramloop-qd1,ramloop-seed,"
                    "contention,timers")
    ap.add_argument("--timer-prog", default=None, help="a built bench/c/timer_waits")
    a = ap.parse_args()
    # A TERM or HUP (a timeout, a lease that ends) unwinds like an error: the loop device and the
    # disk file are removed on the way out (Python's default for TERM is to die where it stands).
    # timeout(1) signals its command and then its whole group, this script twice: a second signal
    # must not cut the cleanup short.
    def stop(n, _frame):
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        sys.exit(f"decision_matrix: stopped by signal {n}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    pw = os.path.abspath(a.pollwise)
    if not os.access(pw, os.X_OK):
        die(f"{pw} is not an executable pollwise: build it (cargo build --release -p "
            "pollwise-cli) or give --pollwise")
    conds = a.conditions.split(",")
    known = ["disk-qd1", "disk-qd32", "ramloop-qd1", "ramloop-seed", "contention", "timers"]
    for c in conds:
        if c not in known:
            die(f"unknown condition '{c}': use some of {','.join(known)}")
    ncpu = os.cpu_count() or 1
    work = tempfile.mkdtemp(prefix="pollwise-matrix-", dir=a.dir or "/var/tmp")
    disk = os.path.join(work, "disk.dat")
    size = "16M" if a.brief else "256M"
    prog = a.timer_prog
    if "timers" in conds and prog is None:
        prog = os.path.join(work, "timer_waits")
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", "timer_waits.c")
        if not shutil.which("cc"):
            die("the timers condition needs cc and liburing-dev to build bench/c/timer_waits.c, "
                "or a built one with --timer-prog")
        run(["cc", "-O2", "-o", prog, src, "-luring"])
    modes = FIXED + DECIDING
    loop = None
    results = {c: [] for c in conds}
    try:
        run([pw, "run", f"--filename={disk}", f"--size={size}", "--rw=write", "--bs=1M",
             "--output-format=json"])
        if any(c.startswith("ramloop") for c in conds):
            loop = Loop(64 if a.brief else 512)
        for i in range(a.runs):
            for c in conds:
                if c == "timers":
                    r = timers(pw, prog, a.brief, modes)
                else:
                    target, extra = disk, [f"--size={size}"]
                    if c.startswith("ramloop"):
                        target = loop.dev
                    if c == "disk-qd32":
                        extra += ["--iodepth=32", "--iodepth_batch_submit=8",
                                  "--iodepth_batch_complete_min=8"]
                    if c == "ramloop-seed":
                        half = max(1, ncpu // 2)
                        extra += [f"--numjobs={2 * half}", f"--cpus_allowed=0-{half - 1}",
                                  "--group_reporting"]
                    if c == "contention":
                        extra += [f"--numjobs={4 * ncpu}", "--group_reporting"]
                    r = compare(pw, target, extra, a.brief, modes)
                for m in modes:
                    if m not in r or r[m]["ios"] <= 0:
                        die(f"{c}: mode {m} did no I/O")
                results[c].append(r)
                print(f"run {i + 1} {c}: " + ", ".join(
                    f"{m} {r[m]['iops']:.0f}/s {r[m]['cpu']:.3g}" for m in modes), flush=True)
                if r["auto"].get("auto"):
                    print(f"run {i + 1} {c}: auto's decisions {r['auto']['auto']}", flush=True)
    finally:
        if loop:
            loop.close()
        shutil.rmtree(work, ignore_errors=True)
    if a.brief:
        print("decision_matrix --brief: every mode did I/O in every condition "
              f"({', '.join(conds)})")
        return
    table = render(results, a.runs, ncpu)
    print(table)
    if a.write:
        text = open(a.write).read() if os.path.exists(a.write) else ""
        block = f"{BEGIN}\n{table}\n{END}"
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text += "\n" + block + "\n"
        with open(a.write, "w") as f:
            f.write(text)


def span(v, fmt="{:.2f}"):
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}-{fmt.format(max(v))})"


def render(results, runs, ncpu):
    lines = [f"Medians over {runs} run(s) of the matrix, ranges in brackets; {ncpu} CPUs. "
             "Each cell: throughput / fastest fixed mode, CPU per I/O / cheapest fixed mode "
             "within 10% of the fastest (timers: share of a core burnt), and whether the "
             "objective was met in the median (throughput >= 0.90, CPU <= 1.10; timers: <= "
             "0.10 of a core).", "",
             "| condition | fixed modes within 10% | auto | dpas | khybrid | interrupt | poll "
             "| hybrid | adaptive |", "|---|---|---|---|---|---|---|---|---|"]
    met = {m: 0 for m in DECIDING}
    for c, rs in results.items():
        vs = [verdict(c, r) for r in rs]
        within = "-" if c == "timers" else ", ".join(vs[0]["_within"])
        cells = []
        for m in DECIDING + FIXED:
            t = [v[m][0] for v in vs]
            u = [v[m][1] for v in vs]
            if c == "timers":
                ok = statistics.median(u) <= TIMER_CORE_BOUND
                cell = f"{span(u, '{:.3f}')} core"
            else:
                ok = statistics.median(t) >= 1 - SLACK and statistics.median(u) <= CPU_TOLERANCE
                cell = f"{span(t)} / {span(u)}"
            if m in DECIDING:
                met[m] += ok
                cell += " **met**" if ok else " missed"
            cells.append(cell)
        lines.append(f"| {c} | {within} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Conditions met: " + ", ".join(f"{m} {met[m]} of {len(results)}"
                                                for m in DECIDING) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
