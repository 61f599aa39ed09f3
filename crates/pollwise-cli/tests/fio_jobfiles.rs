//! fio's own job files (fio-examples' 86 and fio's t/jobs' 43, adapted to this machine by
//! scripts/fio_jobfiles.py: see tests/fio_jobs/README.md), run by pollwise and compared with
//! what fio 3.33 did with the same copies (tests/fio_jobs/fio-3.33.json, written by that script).
//!
//! Every file ends one way: pollwise runs it with fio's meaning (the same jobs by name and
//! group, the same directions, the same I/O counts where fio's job ended by its size), or
//! refuses it with exit 2 and one line naming the file and line of the option and why. Running
//! it with another meaning (a silent difference) or failing otherwise fails this test. The
//! outcome of every file is the table in docs/fio-compat.md, which this test writes with
//! `POLLWISE_BLESS=1` and fails on when it is stale.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// Engines of block and file I/O: the files pollwise is asked to run.
const BLOCK_ENGINES: &[&str] = &[
    "io_uring",
    "null",
    "libaio",
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "posixaio",
    "psync (default)",
];

/// The environment variables the files name, as scripts/fio_jobfiles.py gave them to fio.
const ENV: &[(&str, &str)] = &[
    ("FIO_RW", "randread"),
    ("FIO_IODEPTH", "1"),
    ("FIO_BS", "4k"),
    ("FIO_DIR", "fiodir"),
    ("POOL", "pool"),
    ("CONT", "cont"),
    ("GPU_DEV_IDS", "0"),
    ("S3_KEY", "key"),
    ("S3_ID", "id"),
    ("SSE_KEY", "key"),
    ("STORAGE_CLASS", "STANDARD"),
    ("SWIFT_id", "id"),
    ("unixsocket", "sock"),
];

/// Files where fio 3.33 itself does not do what the file means, for a bug fio has since fixed,
/// and pollwise does what the file means: (file, fio's bug). Such a file is not counted as run
/// with fio's meaning; the test checks pollwise's counts against the I/O log it replays.
const FIO_BUGS: &[(&str, &str)] = &[(
    "t0038-397f1338.fio",
    "fio 3.33 drops an I/O log's trims when it replays one (\"bad ddir: 2\", fixed in fio 3.34 by dd6500e9) and reports 36864 bytes for the 10 writes of 4096 it issues",
)];

/// The files pollwise runs with fio's meaning, at least (a ratchet: raise it as more run).
const RUN_AT_LEAST: usize = 64;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio_jobs")
}

fn doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fio-compat.md")
}

/// What became of one file.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Run with fio's meaning.
    Same(String),
    /// Refused with exit 2 naming the file and line: the message.
    Refused(String),
    /// Refused, but without the file and line, or not with exit 2: the message.
    BadRefusal(String),
    /// Failed running, as fio fails on it: pollwise's message.
    FailsAsFio(String),
    /// Run, with another meaning: what differs.
    Differs(String),
    /// Run as the file means, where fio 3.33 has a bug (see [`FIO_BUGS`]): why they differ.
    FioBug(String),
}

impl Outcome {
    fn word(&self) -> &'static str {
        match self {
            Outcome::Same(_) => "runs",
            Outcome::Refused(_) => "refused",
            Outcome::BadRefusal(_) => "FAILS",
            Outcome::FailsAsFio(_) => "fails (as fio)",
            Outcome::Differs(_) => "DIFFERS",
            Outcome::FioBug(_) => "runs (fio 3.33's bug differs)",
        }
    }
    fn detail(&self) -> &str {
        match self {
            Outcome::Same(s)
            | Outcome::Refused(s)
            | Outcome::BadRefusal(s)
            | Outcome::FailsAsFio(s)
            | Outcome::Differs(s)
            | Outcome::FioBug(s) => s,
        }
    }
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The option `key` of a fio job as its JSON shows it: the job's own, else the global one.
fn opt<'a>(fio: &'a Value, job: &'a Value, key: &str) -> Option<&'a str> {
    job["job_options"][key]
        .as_str()
        .or_else(|| fio["global_options"][key].as_str())
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Compares pollwise's JSON report `pw` with fio's run `fio` of the same file.
fn compare(fio: &Value, pw: &Value) -> Result<String, String> {
    let fjobs = fio["jobs"].as_array().cloned().unwrap_or_default();
    let pjobs = pw["jobs"].as_array().cloned().unwrap_or_default();
    let names = |js: &[Value], key: &str| -> Vec<(String, u64)> {
        js.iter()
            .map(|j| (j[key].as_str().unwrap_or("?").to_string(), u(&j["groupid"])))
            .collect()
    };
    let (fnames, pnames) = (names(&fjobs, "jobname"), names(&pjobs, "jobname"));
    if fnames != pnames {
        return Err(format!(
            "jobs (name, group): fio {fnames:?}, pollwise {pnames:?}"
        ));
    }
    let mut counted = 0;
    for (i, (f, p)) in fjobs.iter().zip(&pjobs).enumerate() {
        let name = &fnames[i].0;
        let time_based = matches!(opt(fio, f, "time_based"), Some("1" | "true" | "on" | "yes"))
            || opt(fio, f, "time_based") == Some("");
        let random_bs = ["bssplit", "bsrange", "blocksize_range"]
            .iter()
            .any(|k| opt(fio, f, k).is_some());
        // A job that ended well within the shortest runtime the copies allow ended by its size:
        // its counts are the job's, not the clock's. Where pollwise's run of it reached the
        // runtime (a slower moment of this shared machine), both ended as the job says, and
        // only the directions are compared.
        let by_size = !time_based && u(&f["job_runtime_ms"]) < 600;
        let limit_ms = opt(fio, f, "runtime")
            .or_else(|| opt(fio, f, "timeout"))
            .and_then(|r| r.trim_end_matches('s').parse::<u64>().ok())
            .map_or(5000, |s| s * 1000);
        let pw_timed_out = u(&p["job_runtime"]) * 10 >= limit_ms * 9;
        for dir in ["read", "write", "trim"] {
            let fi = u(&f[format!("{dir}_ios")]);
            let pi = u(&p[dir]["total_ios"]);
            if (fi > 0) != (pi > 0) {
                return Err(format!(
                    "job {i} ({name}): {dir}s: fio did {fi}, pollwise {pi}"
                ));
            }
        }
        if by_size {
            counted += 1;
        }
        if by_size && !pw_timed_out {
            // Mixed patterns split at random: the sum is the job's, each direction the dice's.
            let mixed = ["read", "write", "trim"]
                .iter()
                .filter(|d| u(&f[format!("{d}_ios")]) > 0)
                .count()
                > 1;
            let total = |get: &dyn Fn(&str) -> u64| -> u64 {
                ["read", "write", "trim"].iter().map(|d| get(d)).sum()
            };
            let (fb, pb) = (
                total(&|d| u(&f[format!("{d}_bytes")])),
                total(&|d| u(&p[d]["io_bytes"])),
            );
            let (fi, pi) = (
                total(&|d| u(&f[format!("{d}_ios")])),
                total(&|d| u(&p[d]["total_ios"])),
            );
            // Without a random map, requests of random sizes overshoot the size by a random
            // part of a block, in fio as in pollwise: the totals agree within 1%.
            // (fio's JSON leaves a bare norandommap out; a distribution has no map either.)
            let no_map = matches!(opt(fio, f, "norandommap"), Some("" | "1" | "true"))
                || opt(fio, f, "random_distribution").is_some_and(|d| d != "random");
            // Without a random map, or in a mixed job (each direction with its own position
            // and its own draws of size), requests of random sizes end past the job's size by
            // what the last ones drew: within 1%.
            let close = random_bs && (no_map || mixed) && fb.abs_diff(pb) * 100 <= fb;
            // A mixed job that reads back what it writes: its reads and writes follow each
            // tool's own random draws, and every write adds a read back, so the totals differ
            // by the draws; the reads (the job's reads and one per write) are its size, in both.
            let verifies = !matches!(opt(fio, f, "verify"), None | Some("0" | "none"))
                && !matches!(opt(fio, f, "do_verify"), Some("0" | "false"));
            // With random sizes, the reads' bytes within 1% (the last requests' draws).
            if mixed && verifies && u(&f["write_ios"]) > 0 {
                let (a, b) = (u(&f["read_ios"]), u(&p["read"]["total_ios"]));
                let (ab, bb) = (u(&f["read_bytes"]), u(&p["read"]["io_bytes"]));
                let same = if random_bs {
                    ab.abs_diff(bb) * 100 <= ab
                } else {
                    a == b && ab == bb
                };
                if !same {
                    return Err(format!(
                        "job {i} ({name}) ended by its size in fio and reads back its writes: fio read {a} blocks ({ab} bytes), pollwise {b} ({bb} bytes)"
                    ));
                }
                continue;
            }
            if fb != pb && !close {
                return Err(format!(
                    "job {i} ({name}) ended by its size in fio: fio moved {fb} bytes, pollwise {pb}"
                ));
            }
            if !random_bs && fi != pi {
                return Err(format!(
                    "job {i} ({name}) ended by its size in fio: fio did {fi} I/Os, pollwise {pi}"
                ));
            }
            if !mixed && !random_bs {
                for dir in ["read", "write", "trim"] {
                    let (a, b) = (u(&f[format!("{dir}_ios")]), u(&p[dir]["total_ios"]));
                    if a != b {
                        return Err(format!(
                            "job {i} ({name}): {dir}s: fio did {a}, pollwise {b}"
                        ));
                    }
                }
            }
        }
    }
    Ok(format!(
        "{} jobs{}",
        fjobs.len(),
        if counted > 0 {
            format!(", {counted} ended by their size in fio (I/O counts compared unless pollwise reached the runtime)")
        } else {
            String::new()
        }
    ))
}

/// Copies the data files (iologs, patterns) a file may name into `dir`.
fn copy_aux(set: &Path, dir: &Path) {
    for e in std::fs::read_dir(set).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("fio") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Runs pollwise on `name` in `dir` as the test does: (exit code, stdout, stderr).
fn run_pollwise(dir: &Path, name: &str, fio: &Value) -> (i32, String, String) {
    let mut args: Vec<String> = vec!["run".into(), name.into()];
    args.extend(str_list(&fio["cmdline"]));
    args.push("--output-format=json".into());
    for d in str_list(&fio["mkdirs"]) {
        let _ = std::fs::create_dir_all(dir.join(d));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(&args)
        .current_dir(dir)
        .envs(ENV.iter().copied())
        .output()
        .expect("run pollwise");
    common::outcome(out)
}

/// The size of the tmpfs a `fill_device` file fills (pollwise fills no filesystem but one of
/// its own).
const FILL_MIB: u64 = 64;

fn outcome_of(name: &str, all: &Value) -> Outcome {
    let fio = &all[name];
    let set = data().join(fio["set"].as_str().unwrap());
    let text = std::fs::read_to_string(set.join(name)).unwrap_or_default();
    let tmpfs = text
        .contains("fill_device")
        .then(|| common::Tmpfs::mount(FILL_MIB));
    let temp;
    let d: &Path = match &tmpfs {
        Some(t) => t.path(),
        None => {
            temp = common::tempdir();
            temp.path()
        }
    };
    copy_aux(&set, d);
    if let Some(pre) = fio["pre"].as_str() {
        std::fs::copy(set.join(pre), d.join(pre)).unwrap();
        // The file fio's suite runs first; its own outcome is its own row.
        let _ = run_pollwise(d, pre, &all[pre]);
    }
    std::fs::copy(set.join(name), d.join(name)).unwrap();
    let (code, out, err) = run_pollwise(d, name, fio);
    let err = err.trim().to_string();
    let line = err.lines().last().unwrap_or("").to_string();
    let cites = cites(&line, name);
    if code == 0 {
        let pw: Value = match serde_json::from_str(&out) {
            Ok(v) => v,
            Err(e) => return Outcome::Differs(format!("exit 0 without a JSON report ({e})")),
        };
        if fio["exit"].as_i64() != Some(0) {
            return Outcome::Differs(format!(
                "fio fails on it ({}), pollwise ran it",
                last_line(fio["stderr"].as_str().unwrap_or(""))
            ));
        }
        let bug = FIO_BUGS.iter().find(|(n, _)| *n == name);
        return match (compare(fio, &pw), bug) {
            (Ok(s), _) => Outcome::Same(s),
            (Err(e), Some((_, why))) => match replayed_as_logged(&set, fio, &pw) {
                Ok(counts) => Outcome::FioBug(format!(
                    "{why}; pollwise replays the log's requests ({counts}); fio's run differs: {e}"
                )),
                Err(e) => Outcome::Differs(e),
            },
            (Err(e), None) => Outcome::Differs(e),
        };
    }
    if code == 2 && cites && err.lines().count() == 1 {
        return Outcome::Refused(line.strip_prefix("pollwise: ").unwrap_or(&line).to_string());
    }
    // Before the line that names why the run failed, only the blocks that failed verification
    // may be named, one line each (as fio prints each verify failure).
    let named_blocks = |l: &str| {
        l.starts_with("pollwise: job ")
            && (l.contains(": verify: ") || l.contains("more blocks failed verification"))
    };
    let lines: Vec<&str> = err.lines().collect();
    let one_cause = lines.len() == 1
        || (lines.len() > 1 && lines[..lines.len() - 1].iter().all(|l| named_blocks(l)));
    if fio["exit"].as_i64() != Some(0) && code != 0 && one_cause {
        return Outcome::FailsAsFio(line.strip_prefix("pollwise: ").unwrap_or(&line).to_string());
    }
    Outcome::BadRefusal(format!("exit {code}: {}", err.replace('\n', " / ")))
}

/// For a job that replays an I/O log (`read_iolog`): whether pollwise's counts per direction
/// are the log's (requests and bytes of its read, write and trim lines).
fn replayed_as_logged(set: &Path, fio: &Value, pw: &Value) -> Result<String, String> {
    let job = &fio["jobs"][0];
    let log = opt(fio, job, "read_iolog").ok_or("no read_iolog to check against")?;
    let text = std::fs::read_to_string(set.join(log)).map_err(|e| format!("{log}: {e}"))?;
    let mut want = BTreeMap::new();
    for l in text.lines().skip(1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        // Version 3: time, file, action, offset, length.
        if let [_, _, act @ ("read" | "write" | "trim"), _, len] = w.as_slice() {
            let e = want.entry(act.to_string()).or_insert((0u64, 0u64));
            e.0 += 1;
            e.1 += len.parse::<u64>().unwrap_or(0);
        }
    }
    let mut said = Vec::new();
    for dir in ["read", "write", "trim"] {
        let p = &pw["jobs"][0][dir];
        let got = (u(&p["total_ios"]), u(&p["io_bytes"]));
        let w = want.get(dir).copied().unwrap_or((0, 0));
        if got != w {
            return Err(format!("{dir}s: the log has {w:?}, pollwise did {got:?}"));
        }
        if w.0 > 0 {
            said.push(format!("{} {dir}s", w.0));
        }
    }
    Ok(said.join(", "))
}

fn last_line(s: &str) -> String {
    s.lines().last().unwrap_or("").trim().to_string()
}

/// Whether a message cites `NAME:LINE`.
fn cites(msg: &str, name: &str) -> bool {
    msg.match_indices(&format!("{name}:")).any(|(i, m)| {
        msg[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// The markdown table of every file's outcome.
fn table(all: &Value, outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut rows = String::new();
    let (mut block_runs, mut block_files, mut runs) = (0, 0, 0);
    let mut fio_runs = 0;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, o) in outcomes {
        let fio = &all[name];
        let engines = str_list(&fio["engines"]);
        let block = engines.iter().all(|e| BLOCK_ENGINES.contains(&e.as_str()));
        let fio_ok = fio["exit"].as_i64() == Some(0);
        fio_runs += usize::from(fio_ok);
        if block && fio_ok {
            block_files += 1;
            block_runs += usize::from(matches!(o, Outcome::Same(_)));
        }
        runs += usize::from(matches!(o, Outcome::Same(_)));
        *counts.entry(o.word()).or_default() += 1;
        let fio_word = if fio_ok {
            "runs".to_string()
        } else {
            format!(
                "fails: {}",
                last_line(fio["stderr"].as_str().unwrap_or("")).replace('|', "\\|")
            )
        };
        rows.push_str(&format!(
            "| {}/{name} | {} | {fio_word} | **{}** | {} |\n",
            fio["set"].as_str().unwrap_or(""),
            engines.join(", "),
            o.word(),
            o.detail().replace('|', "\\|").replace('\n', " ")
        ));
    }
    let mut t = String::new();
    t.push_str("# fio's own job files under pollwise\n\n");
    t.push_str("Written by `crates/pollwise-cli/tests/fio_jobfiles.rs` (`POLLWISE_BLESS=1 cargo test -p pollwise-cli --test fio_jobfiles` rewrites it; the test fails when it is stale). ");
    t.push_str("The files are fio-examples' 86 and fio's t/jobs' 43, adapted to this machine by `scripts/fio_jobfiles.py` (devices and absolute paths become files in the run's directory, sizes are capped at 8 MiB and runtimes at 1 s, a file without a runtime gets `--runtime=5`; see `crates/pollwise-cli/tests/fio_jobs/README.md`), pollwise runs libaio, posixaio, the sync family and null as its own engines, and a file without an ioengine on io_uring (pollwise's default; fio's is psync). ");
    t.push_str("fio 3.33's run of the same copies is `crates/pollwise-cli/tests/fio_jobs/fio-3.33.json`.\n\n");
    t.push_str("## What a job file means to pollwise\n\n");
    t.push_str("- A job file's jobs take fio's defaults: `rw=read`, buffered (`direct=0`), no runtime limit (a job ends when its size is done). The command line keeps pollwise's own (`rw=randread`, `direct=1`, `--filename` required).\n");
    t.push_str("- A job file's job without `filename` does its I/O on fio's file names: `jobname.jobnum.filenum` (one file per clone, `jobnum` the clone), in `directory` or the current directory, or as `filename_format` says.\n");
    t.push_str("- Several files in one job (`filename=a:b:c`, `\\:` for a ':' in a name; `nrfiles=N` with fio's names): each is laid out and checked as a job's file, `size` is shared among them (fio's `size / nrfiles`), and each request goes to the file fio's `file_service_type` picks: `roundrobin` (the default: the next file each request, each file with its own position), `roundrobin:N`, `sequential`. Only sequential patterns of one block size are spread over files; random ones, `random`/`zipf`/`pareto`/`normal` file service, offsets, zones, I/O logs, `filesize` and several block sizes with several files are refused by line; `openfiles` is not implemented.\n");
    t.push_str("- Random offsets follow fio's random map: every block once per pass, in a random order of its own each pass (a keyed permutation, no bitmap); `norandommap` draws each offset on its own. `random_generator` is accepted: every generator visits each block once per pass. With `bsrange` or `bssplit` the map is kept in units of the smallest size, and a request is cut before a unit already done, as fio cuts it. A `random_distribution` other than `random` has no map, as in fio.\n");
    t.push_str("- `group_reporting` merges a job's entries into the entry before them when it is of the same group (fio's `groupid`, from `stonewall` and `new_group`).\n");
    t.push_str("- Engines: io_uring, libaio, posixaio, sync, psync, vsync, pvsync, pvsync2 and null are pollwise's own; a job file without an ioengine runs on io_uring (fio's default is psync).\n");
    t.push_str("- `rate=R,W` on a mixed job is refused unless the rates are equal and `rwmixread=50`: pollwise paces a job's requests as one stream. `gtod_reduce=1` reads the clock once per submitted batch, the queue time of each of its requests (fio then reports no latencies; pollwise reports them, counted from the batch's first push). `threads` (fio's tiobench profile's) is accepted and unused, as fio does.\n");
    t.push_str("- `verify=md5`, `crc32`, `sha1`, `sha256` and `xxhash` checksum each block with fio's algorithm besides pollwise's crc32c header (offset, length); `meta` is that header alone; `verify_interval` puts a header and checksum every so many bytes; `do_verify=0` writes them without reading back. `verify_fatal` is pollwise's way already, `verify_dump` is accepted (pollwise names bad blocks, writes no dump files), `experimental_verify` reads back the same blocks; with `loops` on a job that only writes, as fio's (backend.c `do_verify`, t0026.fio), only the first pass is read back and its reads count against `size × loops`, so the job writes one pass less (`verify_backlog` with it is refused). Blocks of several sizes (`bssplit`, `bsrange`) verify, each read back with the length it was written with. `verify_backlog=N` lets the requests in flight complete once N writes completed and reads those blocks back, while the job runs (the job's end reads back the rest: each block once, as fio); `verify_backlog_batch` is refused. `verify_pattern` fills each block's body with the pattern (the header over its first bytes, as fio lays it) and a read checks it; `%o` in a pattern is refused. With `loops`, a writing job reads back what it wrote after each loop, as fio; a reading job with verify reads its file once whatever `loops` says, as fio 3.33 does. `verify_state_save=1` saves the byte ranges a writing job wrote in fio's `local-JOBNAME-N-verify.state` (pollwise's own text: fio's binary state describes fio's headers, so neither reads the other's; fio saves one by default, pollwise only when asked; a file of that name that is not a pollwise state is never overwritten), and `verify_state_load=1` makes a reading job load it (it fails, naming the file, without it) and check the reads inside those ranges (fio stops the job at the first block the writer did not complete; pollwise reads on, unchecked). A mixed job that verifies is compared by its reads: each tool's random split decides its writes, and each write adds one read back.\n");
    t.push_str("- Trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`) are fio's third direction (`trim` in the JSON, the third of `rwts`). On io_uring a file's trim is an `IORING_OP_FALLOCATE` punching a hole (`PUNCH_HOLE | KEEP_SIZE`) and a block device's the block layer's io_uring discard command (`BLOCK_URING_CMD_DISCARD`); libaio and the sync family trim synchronously as fio's `do_io_u_trim` (`BLKDISCARD` on a block device, a punched hole in a file). fio 3.33 trims only block devices: on a regular file its trims fail with ENOTTY. `trimwrite` writes each range right after trimming it, with the trim's size, as fio.\n");
    t.push_str("- `write_iolog` writes fio 3.33's version 3 I/O log (add, open, every request as issued, close), never through a link; `read_iolog` replays a version 2 or 3 log's reads, writes and trims on its one file (or `replay_redirect`'s) at the log's times (`replay_no_stall`: at once; `replay_time_scale`), as requests of the job's engine and wait mode. Logs with syncs, waits or several files, and `replay_scale`, `replay_align`, `replay_skip`, are refused.\n");
    t.push_str("- `exitall` stops the jobs running with the job that ended (`exit_what=group` and `stonewall` alike, since pollwise runs one stonewall group at a time); `exit_what=all` also skips the groups still to come.\n");
    t.push_str("- `ss`, `ss_dur` and `ss_ramp` are fio's steady-state detection, with fio's arithmetic, checked once a second from the job threads' ticks: a steady job (a thread, or the job's threads together with `group_reporting`) ends, and the JSON carries fio's `steadystate` block. Jobs of one reporting group must agree on them, as fio requires; pollwise judges each job's threads, so several jobs of one group with `group_reporting` are refused. `/dev/null` and `/dev/zero` are targets.\n");
    t.push_str("- `latency_target` (with `latency_window`, `latency_percentile`, `latency_run`) is fio's search for the depth that meets the target: from depth 1, doubling or bisecting each window, the final run at the depth found reported alone, `latency_depth` as fio's.\n");
    t.push_str("- `ratemin`, `rate_iops_min` and `ratecycle` fail a job as fio's do: looked at when a request completes, from 2 s after the start, over each cycle. `prio`, `prioclass` and the cmdprio options give requests their priority in io_uring's SQE or libaio's iocb, with fio's per-priority `prios` in the JSON and `log_prio`'s column; a mixed random job with other sizes for writes than for reads (a per-direction `bssplit`) and fio's random map is refused, as fio ends it early by a rule pollwise does not follow. `dedupe_percentage`, `dedupe_mode`, `dedupe_working_set_percentage` and `dedupe_global` make fio's deduplicable buffers.\n");
    t.push_str("- `loops` and `io_size` make fio's passes (backend.c `keep_running`, `do_io`): `loops` passes, then more while the bytes done, read backs included, are under `io_size` by a block or more; a sequential write with holes (`rw=write:N`) from an `offset` thus makes as many passes of its region as fio (cross-stripe-verify.fio: four of 1 MiB written and read back, with `loops=2`). From the file's start fio's position wraps at the file's end and a pass runs on to the byte limit: refused.\n");
    t.push_str("- `fill_device` (`fill_fs`) writes a file from its start until its filesystem is full, sized from the free space when the job starts (fio writes until `ENOSPC` and ends the job without an error; on a tmpfs both write the same whole blocks), and a block device whole. A fill (no size, or one larger than the room) is refused on the root filesystem and when it is over 4 GiB (fill a filesystem of its own: a tmpfs or a loop device's); a size the filesystem has room for is written as asked, and for other than a sequential write of one file by one thread; the test runs surface-scan.fio in a 64 MiB tmpfs it mounts. `create_serialize` is accepted: pollwise lays the files of a group's jobs out one at a time.\n");
    t.push_str("- `io_submit_mode=offload` is refused: pollwise measures each wait mode in the thread that submits and reaps; fio's offload submits from worker threads.\n\n");
    t.push_str("## Every file\n\n");
    t.push_str("*runs*: the same jobs by name and group, the same directions, and fio's I/O counts for every job that ended by its size in fio. *refused*: exit 2 and one line naming the file, the line and why. *fails (as fio)*: fio fails on the file here, and pollwise fails too, with one line. *runs (fio 3.33's bug differs)*: pollwise does what the file means where fio 3.33 has a bug fio has since fixed (the row names it; not counted as run with fio's meaning). *DIFFERS* and *FAILS* are bugs.\n\n");
    t.push_str(&format!(
        "fio runs {fio_runs} of the {} files here; {block_files} of those use only engines of block and file I/O (io_uring, libaio, the sync family, posixaio, null). pollwise runs **{block_runs} of those {block_files}** with fio's meaning ({runs} files in all); ",
        outcomes.len()
    ));
    let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    t.push_str(&format!("{}.\n\n", parts.join(", ")));
    t.push_str("| file | engines | fio 3.33 | pollwise | what |\n|---|---|---|---|---|\n");
    t.push_str(&rows);
    t
}

#[test]
fn fios_job_files_run_with_fios_meaning_or_are_refused_naming_file_and_line() {
    let all: Value = serde_json::from_str(
        &std::fs::read_to_string(data().join("fio-3.33.json")).expect("fio-3.33.json"),
    )
    .unwrap();
    let names: Vec<String> = all.as_object().unwrap().keys().cloned().collect();
    assert_eq!(names.len(), 129, "fio's 86 examples and 43 t/jobs");
    // Two at a time: the machine's two cores.
    let queue = Mutex::new(names.clone());
    let done = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(n) = queue.lock().unwrap().pop() else {
                    break;
                };
                let o = outcome_of(&n, &all);
                done.lock().unwrap().insert(n, o);
            });
        }
    });
    let outcomes = done.into_inner().unwrap();
    let text = table(&all, &outcomes);
    if std::env::var_os("POLLWISE_BLESS").is_some() {
        std::fs::write(doc(), &text).unwrap();
    }
    let bad: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Differs(_) | Outcome::BadRefusal(_)))
        .map(|(n, o)| format!("{n}: {} {}", o.word(), o.detail()))
        .collect();
    let same = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::Same(_)))
        .count();
    let on_disk = std::fs::read_to_string(doc()).unwrap_or_default();
    assert!(
        bad.is_empty(),
        "{} files run with another meaning than fio's or fail without naming file and line:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(
        same >= RUN_AT_LEAST,
        "{same} files run with fio's meaning, fewer than {RUN_AT_LEAST}"
    );
    assert_eq!(
        on_disk, text,
        "docs/fio-compat.md is stale: rewrite it with POLLWISE_BLESS=1 cargo test -p pollwise-cli --test fio_jobfiles"
    );
}
