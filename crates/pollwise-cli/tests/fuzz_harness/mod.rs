//! The three fuzzed surfaces, shared by the stable proptest runs (`tests/fuzz_inputs.rs`) and the
//! cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`, which include this file by path).
//!
//! Each takes arbitrary bytes and does what the command does with them short of running a job:
//! the command line's words through the option parser, a job file through the ini reader and
//! the option table, a `--sim_latency` value through its grammar and the simulated device. The
//! property, for every input: no panic, no hang, and every error is a usage error (exit 2).
#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::Path;

use pollwise::clock::FakeClock;
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::{Op, Queue};
use pollwise_cli::options::cmdline::{self, CmdLine};
use pollwise_cli::options::table::{self, CommandSpec};
use pollwise_cli::options::{help, jobfile, Opts};
use pollwise_cli::report::{ReportFor, ReportOpts};
use pollwise_cli::{Error, Result};

/// The commands an input's first byte picks from.
pub const COMMANDS: &[&str] = &[
    "run",
    "compare",
    "hybrid-contention",
    "shared-poller",
    "fairness",
    "idle-sources",
    "slow-handler",
];

/// Fails unless `r` is Ok or a usage error (what exits 2).
pub fn expect_usage<T>(what: &str, r: Result<T>) -> std::result::Result<(), String> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.exit_code() == 2 && matches!(e, Error::Usage(_) | Error::Unsupported(_)) => {
            Ok(())
        }
        Err(e) => Err(format!(
            "{what}: not a usage error (exit {}): {e}",
            e.exit_code()
        )),
    }
}

/// What the command does with one job's options before running it.
fn take_job(cmd: &'static CommandSpec, o: &mut Opts) -> Result<()> {
    let run_like = matches!(cmd.name, "run" | "compare");
    ReportOpts::take(
        o,
        if cmd.name == "run" {
            ReportFor::Run
        } else {
            ReportFor::Other
        },
    )?;
    if run_like {
        o.take_bool("parse_only")?;
    }
    if cmd.name == "compare" {
        o.take_str_list("modes")?;
        o.take_u32("rounds")?;
        o.take_duration("warmup")?;
    }
    let _ = o.job_spec()?;
    if run_like {
        o.finish()?;
    }
    Ok(())
}

/// The option path of `main` for `cmd` and a parsed line (job files already read or absent).
pub fn check_line(cmd: &'static CommandSpec, line: &CmdLine) -> Result<()> {
    if line.help {
        let _ = help::command_help(cmd);
        return Ok(());
    }
    if let Some(s) = line.last("cmdhelp") {
        help::cmdhelp(s.value.as_deref().unwrap_or("all"), Some(cmd))?;
        return Ok(());
    }
    if matches!(cmd.name, "run" | "compare") {
        let jobs = jobfile::job_settings(line)?;
        for j in &jobs {
            if cmd.name == "compare" {
                pollwise_cli::jobs::check_compare(j)?;
            }
            let mut o = Opts::resolve_settings(cmd, j)?;
            take_job(cmd, &mut o)?;
        }
        return Ok(());
    }
    let mut o = Opts::resolve(cmd, line)?;
    take_job(cmd, &mut o)
}

/// Command-line words: the first byte picks the command, the rest are words separated by NUL or
/// newline, as raw bytes (so words that are not UTF-8 are tried too). Words that are not options
/// would be read as job files: they are dropped here (the job-file target covers those).
pub fn fuzz_words(data: &[u8]) -> std::result::Result<(), String> {
    let Some((&pick, rest)) = data.split_first() else {
        return Ok(());
    };
    let cmd = table::command(COMMANDS[pick as usize % COMMANDS.len()]).expect("in the table");
    let os: Vec<OsString> = rest
        .split(|&b| b == 0 || b == b'\n')
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
    let words = match cmdline::words_from_os(os) {
        Ok(w) => w,
        Err(e) => return expect_usage("words", Err::<(), _>(e)),
    };
    check_words(cmd, &words)
}

/// [`fuzz_words`] once the words are text.
pub fn check_words(cmd: &'static CommandSpec, words: &[String]) -> std::result::Result<(), String> {
    let mut line = match cmdline::parse(words) {
        Ok(l) => l,
        Err(e) => return expect_usage("cmdline::parse", Err::<(), _>(e)),
    };
    if matches!(cmd.name, "run" | "compare") {
        line.positional.clear();
    }
    expect_usage(&format!("{} {words:?}", cmd.name), check_line(cmd, &line))
}

/// A job file's text, read by `pollwise run FILE` from `dir`: written to `dir/job.fio` (the
/// reader takes files, and includes are relative to them), then every job checked. The first
/// byte picks run or compare and whether a command-line option is added.
pub fn fuzz_jobfile(dir: &Path, data: &[u8]) -> std::result::Result<(), String> {
    let Some((&pick, text)) = data.split_first() else {
        return Ok(());
    };
    let path = dir.join("job.fio");
    std::fs::write(&path, text).map_err(|e| format!("writing the job file: {e}"))?;
    let cmd = table::command(if pick & 1 == 0 { "run" } else { "compare" }).expect("in the table");
    let mut words = vec![path.display().to_string()];
    if pick & 2 != 0 {
        words.push("--ioengine=sim".into());
    }
    let line = match cmdline::parse(&words) {
        Ok(l) => l,
        Err(e) => return expect_usage("cmdline::parse", Err::<(), _>(e)),
    };
    let r = check_line(cmd, &line);
    expect_usage(&format!("job file {:?}", String::from_utf8_lossy(text)), r)
}

/// A `--sim_latency` value: parsed by the library's grammar (errors must be usage errors), and a
/// model that parses is run on the simulated device in virtual time: draws, submissions,
/// completions and a cancellation, none of which may panic or lose a request.
pub fn fuzz_latency(data: &[u8]) -> std::result::Result<(), String> {
    let s = String::from_utf8_lossy(data);
    let m = match s.parse::<LatencyModel>() {
        Ok(m) => m,
        Err(e) if e.is_usage() => return Ok(()),
        Err(e) => return Err(format!("{s:?}: not a usage error: {e}")),
    };
    if !m.mean_ns().is_finite() || m.mean_ns() < 0.0 {
        return Err(format!("{s:?}: mean {}", m.mean_ns()));
    }
    let clock = FakeClock::new(1_000);
    let mut q = SimQueue::new(m, data.len() as u64, 8, SimTime::virtual_on(&clock, 100));
    let mut done = 0usize;
    for i in 0..16u64 {
        let op = Op::read(0, std::ptr::null_mut(), 4096, 0, i);
        // SAFETY: the simulated device never touches the (null) buffer.
        unsafe { q.push(&op) }.map_err(|e| format!("push: {e}"))?;
        if i % 8 == 7 {
            q.submit().map_err(|e| format!("submit: {e}"))?;
        }
    }
    q.wait(1, None).map_err(|e| format!("wait: {e}"))?;
    q.poll(&mut |_| done += 1)
        .map_err(|e| format!("poll: {e}"))?;
    q.cancel_all().map_err(|e| format!("cancel_all: {e}"))?;
    q.poll(&mut |_| done += 1)
        .map_err(|e| format!("poll: {e}"))?;
    if done != 16 || q.in_flight() != 0 {
        return Err(format!(
            "{s:?}: {done} of 16 completed, {} in flight",
            q.in_flight()
        ));
    }
    // The option path too: --ioengine=sim --sim_latency=VALUE.
    let words = vec!["--ioengine=sim".to_string(), format!("--sim_latency={s}")];
    check_words(table::command("run").expect("in the table"), &words)
}
