#!/usr/bin/env python3
"""fio's own job files, adapted to this machine, and what fio 3.33 does with each.

Reads fio's job files (the 86 of fio-examples in /usr/share/doc/fio/examples and the 43 of fio's
t/jobs), adapts each as a fio user would on a machine without the devices they name (the same
lines, only values changed, so file:line citations still hold), writes the adapted copies under
crates/pollwise-cli/tests/fio_jobs/, runs fio on each (`--parse-only`, then a real run with
`--output-format=json`) in a directory of its own, and writes what fio did to
crates/pollwise-cli/tests/fio_jobs/fio-3.33.json. The test tests/fio_jobfiles.rs runs pollwise on
the same copies and compares.

The adaptations (each copy keeps its line numbers):
- a filename or directory naming a device or an absolute path becomes a name in the run's
  directory (`/dev/sdb` -> `sdb`, `/scratch` -> `scratch`, created); /dev/null and /dev/zero stay;
- size, filesize, io_size (io_limit), offset and offset_increment are capped at 8 MiB (a range
  `4k-16g` at its ends), nrfiles at 16;
- runtime (timeout), ramp_time and startdelay are capped at 1 s;
- a file with no runtime anywhere gets `--runtime=5` on the command line (fio: a default the file
  does not override; pollwise: an option the file does not set), so that nothing runs for hours;
  a job that ends by its size well within it is compared by its I/O counts; a file that names a
  device or an absolute path and no size gets `--size=8m` (the device's or the file's size
  stands for it);
- ioengine stays as written, for fio and pollwise alike (pollwise has libaio, posixaio, the
  sync family, null and io_uring as its own engines);
- `${VAR}` the files name are set in the environment to a value a user would give.
A file fio's test suite runs after another (`X-post.fio` after `X-pre.fio`, t0031 after
t0031-pre) runs after it in the same directory.

Usage: scripts/fio_jobfiles.py FIO_GIT_DIR [--only NAME...]
  (FIO_GIT_DIR: a clone of github.com/axboe/fio; its t/jobs at HEAD are read)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "crates/pollwise-cli/tests/fio_jobs"
EXAMPLES = Path("/usr/share/doc/fio/examples")

CAP = 8 << 20
SIZE_KEYS = {"size", "filesize", "io_size", "io_limit", "offset", "offset_increment"}
TIME_KEYS = {"runtime", "timeout", "ramp_time", "startdelay"}
MAPPED_ENGINES = {"libaio", "sync", "psync", "vsync", "pvsync", "pvsync2", "posixaio"}
# Engines of block and file I/O (the 78): what pollwise is asked to run.
BLOCK_ENGINES = MAPPED_ENGINES | {"io_uring", "null"}
ENV = {
    "FIO_RW": "randread", "FIO_IODEPTH": "1", "FIO_BS": "4k", "FIO_DIR": "fiodir",
    "POOL": "pool", "CONT": "cont", "GPU_DEV_IDS": "0", "S3_KEY": "key", "S3_ID": "id",
    "SSE_KEY": "key", "STORAGE_CLASS": "STANDARD", "SWIFT_id": "id", "unixsocket": "sock",
}
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def size_of(v):
    """Bytes of a fio size (`8k`, `10G`, `128mb`, `4KiB`), or None if not a plain size."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(i?b)?\s*", v, re.I)
    if not m:
        return None
    return int(m.group(1)) * UNITS[m.group(2).lower()]


def cap_size(v):
    if "-" in v and not v.strip().startswith("-"):
        a, b = v.split("-", 1)
        return f"{cap_size(a)}-{cap_size(b)}"
    n = size_of(v)
    if n is None or n <= CAP:
        return v
    return "8m"


def seconds_of(v):
    m = re.fullmatch(r"\s*(\d+)\s*(us|ms|s|m|h|d)?\s*", v, re.I)
    if not m:
        return None
    mult = {None: 1, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return int(m.group(1)) * mult[(m.group(2) or "").lower() or None]


def local_name(p):
    """A device or absolute path as a name in the run's directory."""
    if p in ("/dev/null", "/dev/zero"):
        return p
    if p.startswith("/"):
        return p.rstrip("/").split("/")[-1] or "root"
    return p


def adapt(text):
    """(adapted text, directories to create, the options to add on the command line)."""
    out, dirs, has_runtime, has_size, device = [], [], False, False, False
    for line in text.split("\n"):
        m = re.match(r"^(\s*)([A-Za-z_][\w-]*)(\s*=\s*)([^;#\n]*?)(\s*([;#].*)?)$", line)
        if not m or line.lstrip().startswith("["):
            out.append(line)
            continue
        ind, key, eq, val, rest = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        k = key.lower().replace("-", "_")
        new = val
        if k in SIZE_KEYS:
            new = cap_size(val)
            if k in ("size", "filesize"):
                has_size = True
        elif k in TIME_KEYS:
            if k in ("runtime", "timeout"):
                has_runtime = True
            s = seconds_of(val)
            if s is not None and s > 1:
                new = "1"
        elif k == "nrfiles" or k == "nr_files":
            if val.strip().isdigit() and int(val) > 16:
                new = "16"
        elif k == "filename":
            if "${" not in val:
                names = re.split(r"(?<!\\):", val)
                device = device or any(p.startswith("/") and p not in ("/dev/null", "/dev/zero")
                                       for p in names)
                new = ":".join(local_name(p) for p in names)
        elif k == "directory":
            if "${" not in val:
                new = local_name(val)
                dirs.append(new)
        out.append(f"{ind}{key}{eq}{new}{rest}")
    extra = [] if has_runtime else ["--runtime=5"]
    if device and not has_size:
        # A device has a size; the file standing for it needs one.
        extra.append("--size=8m")
    return "\n".join(out), dirs, extra


def engines(text):
    """The engines a file's jobs use (fio 3.33's default, psync, when it names none)."""
    found = [v.strip() for v in re.findall(r"^\s*ioengine\s*=\s*([^;#\n]+)", text, re.M)]
    jobs_without = False
    glob = None
    section = None
    per_section = {}
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            section = s[1:-1]
            per_section.setdefault(section, None)
            continue
        m = re.match(r"ioengine\s*=\s*([^;#\s]+)", s)
        if m and section is not None:
            per_section[section] = m.group(1)
    glob = per_section.pop("global", None)
    for name, e in per_section.items():
        if e is None and glob is None:
            jobs_without = True
    out = sorted(set(found))
    if jobs_without:
        out.append("psync (default)")
    return out


def fio_json(stdout):
    i = stdout.find("{")
    if i < 0:
        return None
    try:
        return json.loads(stdout[i:])
    except json.JSONDecodeError:
        return None


def run_fio(dirpath, name, cmdline, env, timeout=120):
    args = ["fio", *cmdline, name]
    p = subprocess.run(["fio", "--parse-only", *cmdline, name], cwd=dirpath, env=env,
                       capture_output=True, text=True, timeout=timeout)
    parse = {"ok": p.returncode == 0, "stderr": (p.stderr + p.stdout).strip()[-400:]}
    try:
        r = subprocess.run(args + ["--output-format=json"], cwd=dirpath, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return parse, {"exit": None, "stderr": f"timed out after {timeout}s", "jobs": []}
    j = fio_json(r.stdout)
    jobs = []
    if j:
        for job in j["jobs"]:
            jobs.append({
                "jobname": job["jobname"],
                "groupid": job["groupid"],
                "error": job["error"],
                "job_runtime_ms": job["job_runtime"],
                "job_options": job.get("job options", {}),
                **{f"{d}_ios": job[d]["total_ios"] for d in ("read", "write", "trim")},
                **{f"{d}_bytes": job[d]["io_bytes"] for d in ("read", "write", "trim")},
            })
    err = "\n".join(l for l in r.stderr.splitlines() if l.strip())[-600:]
    return parse, {"exit": r.returncode, "stderr": err, "jobs": jobs,
                   "global_options": (j or {}).get("global options", {})}


def sources(fio_git):
    for f in sorted(EXAMPLES.glob("*.fio")):
        yield "examples", f.name, f.read_text()
    names = subprocess.run(["git", "-C", fio_git, "ls-tree", "--name-only", "HEAD", "t/jobs/"],
                           check=True, capture_output=True, text=True).stdout.split()
    for n in sorted(names):
        body = subprocess.run(["git", "-C", fio_git, "show", f"HEAD:{n}"], check=True,
                              capture_output=True, text=True).stdout
        yield "t", Path(n).name, body


def pre_of(name):
    if name.endswith("-post.fio"):
        return name.replace("-post.fio", "-pre.fio")
    if name == "t0031.fio":
        return "t0031-pre.fio"
    return None


def main():
    fio_git = sys.argv[1]
    only = set(sys.argv[sys.argv.index("--only") + 1:]) if "--only" in sys.argv else None
    result_path = OUT / "fio-3.33.json"
    results = json.loads(result_path.read_text()) if result_path.exists() else {}
    env = dict(os.environ, **ENV)
    files = list(sources(fio_git))
    adapted = {}
    for where, name, text in files:
        a, dirs, extra = adapt(text)
        (OUT / where).mkdir(parents=True, exist_ok=True)
        (OUT / where / name).write_text(a)
        adapted[name] = (where, dirs, extra)
        if name.endswith(".iolog"):
            continue
    for where, name, text in files:
        if not name.endswith(".fio") or (only and name not in only):
            continue
        _, dirs, cmdline = adapted[name]
        with tempfile.TemporaryDirectory(prefix="fiojob-", dir=os.environ.get("FIOJOB_TMP")) as d:
            for x in (OUT / where).iterdir():
                if not x.name.endswith(".fio"):
                    shutil.copy(x, d)
            pre = pre_of(name)
            steps = []
            for step in ([pre] if pre else []) + [name]:
                wh, sdirs, scmd = adapted[step]
                for dd in sdirs:
                    os.makedirs(os.path.join(d, dd), exist_ok=True)
                shutil.copy(OUT / wh / step, d)
                parse, run = run_fio(d, step, scmd, env)
                steps.append((step, parse, run))
            _, parse, run = steps[-1]
            results[name] = {
                "set": where,
                "engines": engines(text),
                "cmdline": cmdline,
                "mkdirs": dirs,
                "pre": pre,
                "pre_ok": None if not pre else steps[0][2]["exit"] == 0,
                "parse_ok": parse["ok"],
                "parse_stderr": parse["stderr"],
                "exit": run["exit"],
                "stderr": run["stderr"],
                "global_options": run.get("global_options", {}),
                "jobs": run["jobs"],
            }
            print(f"{name}: parse={parse['ok']} exit={run['exit']} jobs={len(run['jobs'])}",
                  flush=True)
    result_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
