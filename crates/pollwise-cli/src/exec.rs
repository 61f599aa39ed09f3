//! `pollwise exec --mode=M -- CMD [ARGS...]`: runs an unmodified, dynamically linked liburing
//! program with pollwise's waits, and prints what they did.
//!
//! CMD runs with `LD_PRELOAD` naming the preload library (crates/pollwise-preload, added to
//! any `LD_PRELOAD` already set), `POLLWISE_MODE=M` and `POLLWISE_SUMMARY` naming a file in a
//! directory this command makes (removed however it ends, unless `--summary=FILE` names the
//! user's own, which is appended to, never truncated). Each process of CMD that loaded the
//! library appends one JSON line at exit; this command prints them on stderr (stdout stays
//! CMD's) and exits with CMD's status.
//!
//! The library is found, in order: `--preload=PATH`, `POLLWISE_PRELOAD`, next to this binary
//! (a cargo build puts both in `target/<profile>/`), or in `../lib/` from it (an install).
//! Signals from a terminal reach CMD directly; every signal fio handles (INT, TERM, HUP, ALRM,
//! USR1) sent to pollwise is passed on to CMD at once ([`signals::forward`]), and pollwise
//! waits for CMD to end and reaps it: it never exits leaving CMD running.

use std::path::{Path, PathBuf};
use std::process::Command;

use pollwise::policy::Mode;
use serde_json::Value;

use crate::{cleanup, signals, Error, Result};

/// The preload library's file name.
pub const PRELOAD_FILE: &str = "libpollwise_preload.so";

/// `pollwise exec --help`.
pub const HELP: &str =
    "usage: pollwise exec [--mode=M] [--auto_slack=F] [--preload=PATH] [--summary=FILE] -- CMD [ARGS...]

  Runs CMD, an unmodified program that waits for io_uring completions through liburing.so.2,
  with pollwise's waits: liburing's exported wait functions (io_uring_wait_cqe and its kin,
  io_uring_submit_and_wait[_timeout], io_uring_wait_cqes, io_uring_wait_cqe_timeout) wait the
  way mode M says. Prints on stderr, per process, how many waits were taken over, spins,
  sleeps, blocks, time in each mode and the process's CPU; exits with CMD's status.

  --mode=M        interrupt, poll, hybrid, adaptive or auto (default auto)
  --auto_slack=F  auto: how much throughput below the fastest mode's it may give up for less
                  CPU per I/O, a fraction from 0 to 10 (default 0.10: 10%)
  --preload=PATH  the preload library (default: POLLWISE_PRELOAD, else libpollwise_preload.so
                  next to this binary or in ../lib; build it: cargo build -p pollwise-preload)
  --summary=FILE  also keep the processes' JSON summary lines in FILE (appended to)
";

/// What `pollwise exec` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecArgs {
    /// The wait mode.
    pub mode: Mode,
    /// `--auto_slack`, if given: passed on as `POLLWISE_AUTO_SLACK`.
    pub auto_slack: Option<f64>,
    /// `--preload`, if given.
    pub preload: Option<PathBuf>,
    /// `--summary`, if given.
    pub summary: Option<PathBuf>,
    /// The command and its arguments.
    pub cmd: Vec<String>,
}

/// Parses `pollwise exec`'s words (after `exec`); `Ok(None)` for `--help`.
pub fn parse(words: &[String]) -> Result<Option<ExecArgs>> {
    let mut a = ExecArgs {
        mode: Mode::Auto,
        auto_slack: None,
        preload: None,
        summary: None,
        cmd: Vec::new(),
    };
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            a.cmd = words[i + 1..].to_vec();
            break;
        }
        if !w.starts_with('-') {
            a.cmd = words[i..].to_vec();
            break;
        }
        if w == "--help" || w == "-h" {
            return Ok(None);
        }
        let (name, inline) = match w[2..].split_once('=') {
            Some((n, v)) if w.starts_with("--") => (n, Some(v.to_string())),
            _ => (w.trim_start_matches('-'), None),
        };
        if !matches!(name, "mode" | "auto_slack" | "preload" | "summary") {
            return Err(Error::Usage(format!(
                "pollwise exec has no option '{w}': use --mode, --auto_slack, --preload or --summary, then -- CMD"
            )));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                words.get(i).cloned().ok_or_else(|| {
                    Error::Usage(format!("--{name} needs a value: --{name}=VALUE"))
                })?
            }
        };
        match name {
            "mode" => {
                a.mode = value
                    .parse()
                    .map_err(|e: String| Error::Usage(format!("--mode: {e}")))?
            }
            "auto_slack" => {
                let v = pollwise::policy::parse_auto_slack(&value);
                a.auto_slack = Some(v.ok_or_else(|| {
                    Error::Usage(format!(
                        "--auto_slack={value} is no slack: give a fraction from 0 to 10 (0.10: 10%)"
                    ))
                })?);
            }
            "preload" => a.preload = Some(PathBuf::from(value)),
            _ => a.summary = Some(PathBuf::from(value)),
        }
        i += 1;
    }
    if a.cmd.is_empty() {
        return Err(Error::Usage(
            "pollwise exec needs a command: pollwise exec --mode=auto -- CMD [ARGS...]".into(),
        ));
    }
    Ok(Some(a))
}

/// Where the preload library is: see the module docs.
pub fn locate_preload(explicit: Option<&Path>) -> Result<PathBuf> {
    let given = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("POLLWISE_PRELOAD").map(PathBuf::from));
    if let Some(p) = given {
        return if p.is_file() {
            Ok(std::fs::canonicalize(&p).unwrap_or(p))
        } else {
            Err(Error::Usage(format!(
                "the preload library {} does not exist: give --preload=PATH to libpollwise_preload.so",
                p.display()
            )))
        };
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::Io(format!("cannot find this program: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    // `cargo test` runs from target/<profile>/deps: the library is one level up.
    for cand in [
        dir.join(PRELOAD_FILE),
        dir.join("..").join(PRELOAD_FILE),
        dir.join("../lib").join(PRELOAD_FILE),
    ] {
        if cand.is_file() {
            return Ok(std::fs::canonicalize(&cand).unwrap_or(cand));
        }
    }
    Err(Error::Usage(format!(
        "cannot find {PRELOAD_FILE} next to {}: build it (cargo build -p pollwise-preload) or give --preload=PATH",
        exe.display()
    )))
}

/// A directory of this command's own, removed when dropped or when a signal ends it.
struct OwnDir(tempfile::TempDir);

impl OwnDir {
    fn new() -> Result<OwnDir> {
        let d = tempfile::Builder::new()
            .prefix("pollwise-exec.")
            .tempdir()
            .map_err(|e| Error::Io(format!("cannot make a temp directory: {e}")))?;
        cleanup::register_dir(d.path());
        Ok(OwnDir(d))
    }
}

impl Drop for OwnDir {
    fn drop(&mut self) {
        cleanup::unregister_dir(self.0.path());
    }
}

/// Runs `a`; returns CMD's exit status and the summary text.
pub fn run(a: &ExecArgs) -> Result<(i32, String)> {
    let lib = locate_preload(a.preload.as_deref())?;
    let own = OwnDir::new()?;
    let summary = a
        .summary
        .clone()
        .unwrap_or_else(|| own.0.path().join("summary.jsonl"));
    let before = std::fs::read_to_string(&summary).unwrap_or_default();
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(p) if !p.trim().is_empty() => format!("{} {p}", lib.display()),
        _ => lib.display().to_string(),
    };
    // From here every signal goes to CMD (kept until it has started); one that came before
    // ends this command as it would any other.
    let forward = signals::forward();
    if let Some(sig) = signals::received() {
        return Ok((signals::exit_code(sig), String::new()));
    }
    let mut cmd = Command::new(&a.cmd[0]);
    cmd.args(&a.cmd[1..])
        .env("LD_PRELOAD", preload)
        .env("POLLWISE_MODE", a.mode.name())
        .env("POLLWISE_SUMMARY", &summary);
    if let Some(s) = a.auto_slack {
        cmd.env("POLLWISE_AUTO_SLACK", s.to_string());
    }
    let mut child = cmd.spawn().map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            Error::Usage
        } else {
            Error::Io
        };
        code(format!(
            "cannot run {}: {}",
            a.cmd[0],
            crate::errno::plain(&e)
        ))
    })?;
    forward.to(child.id());
    let status = child
        .wait()
        .map_err(|e| Error::Io(format!("cannot wait for {}: {e}", a.cmd[0])))?;
    drop(forward);
    let code = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    let text = std::fs::read_to_string(&summary).unwrap_or_default();
    let new = text.strip_prefix(before.as_str()).unwrap_or(&text);
    Ok((code, render(a.mode, &a.cmd[0], new)))
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// The summary lines of one run, as text: one paragraph per process that waited through
/// liburing, and how many did not.
pub fn render(mode: Mode, cmd: &str, lines: &str) -> String {
    let procs: Vec<Value> = lines
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let u = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let sum = |v: &Value, k: &str| {
        v[k].as_object()
            .map(|o| o.values().filter_map(Value::as_u64).sum::<u64>())
            .unwrap_or(0)
    };
    let mut out = format!("pollwise exec: {cmd} under mode {}\n", mode.name());
    let (waiting, idle): (Vec<&Value>, Vec<&Value>) =
        procs.iter().partition(|p| sum(p, "calls") > 0);
    for p in &waiting {
        let taken = sum(p, "taken");
        let fell = sum(p, "fallbacks");
        let reasons: Vec<String> = p["fallbacks"]
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.as_u64().unwrap_or(0) > 0)
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect()
            })
            .unwrap_or_default();
        let modes: Vec<String> = p["mode_ns"]
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.as_u64().unwrap_or(0) > 0)
                    .map(|(k, v)| format!("{k} {}", ms(v.as_u64().unwrap_or(0))))
                    .collect()
            })
            .unwrap_or_default();
        out += &format!(
            "  pid {} {}: {} rings; {} waits taken over, {} handed to liburing{}\n",
            u(p, "pid"),
            p["comm"].as_str().unwrap_or("?"),
            u(p, "rings"),
            taken,
            fell,
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join(", "))
            },
        );
        out += &format!(
            "    spins {} ({} empty), blocks {}{}, sleeps {} ({} asked), timeouts {}; waiting {} ({})\n",
            u(p, "spins"),
            u(p, "empty_spins"),
            u(p, "blocks"),
            match u(p, "stall_blocks") {
                0 => String::new(),
                n => format!(" ({n} for an SQPOLL thread on the waiter's CPU)"),
            },
            u(p, "sleeps"),
            ms(u(p, "slept_ns")),
            u(p, "timeouts"),
            ms(u(p, "wait_ns")),
            if modes.is_empty() {
                "no time in any mode".to_string()
            } else {
                modes.join(", ")
            },
        );
        out += &format!(
            "    process CPU: user {}, system {}\n",
            ms(u(p, "cpu_user_ns")),
            ms(u(p, "cpu_sys_ns"))
        );
    }
    if waiting.is_empty() {
        out += "  no process waited through liburing.so.2's exported functions (not linked with liburing dynamically, or no io_uring waits)\n";
    }
    if !idle.is_empty() {
        out += &format!(
            "  {} more process(es) loaded the library without waiting through it\n",
            idle.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_come_before_the_command() {
        let a = parse(&words("--mode=poll -- echo --mode=x"))
            .unwrap()
            .unwrap();
        assert_eq!(a.mode, Mode::Poll);
        assert_eq!(a.cmd, words("echo --mode=x"));
        let a = parse(&words("--mode hybrid --preload /x.so ls -l"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.mode, a.preload),
            (Mode::Hybrid, Some(PathBuf::from("/x.so")))
        );
        assert_eq!(a.cmd, words("ls -l"));
        assert!(parse(&words("--help")).unwrap().is_none());
        let a = parse(&words("--auto_slack=0.03 -- db_bench"))
            .unwrap()
            .unwrap();
        assert_eq!((a.mode, a.auto_slack), (Mode::Auto, Some(0.03)));
    }

    #[test]
    fn bad_words_are_usage_errors_naming_the_fix() {
        for (w, needle) in [
            ("--mode=fast -- ls", "unknown mode 'fast'"),
            ("--mode", "--mode needs a value"),
            ("--speed=1 -- ls", "has no option '--speed=1'"),
            ("--mode=poll", "needs a command"),
            ("--auto_slack=10% -- ls", "--auto_slack=10% is no slack"),
            ("--auto_slack=-1 -- ls", "a fraction from 0 to 10"),
        ] {
            let e = parse(&words(w)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{w}");
            assert!(e.to_string().contains(needle), "{w}: {e}");
        }
    }

    #[test]
    fn a_summary_renders_per_process() {
        let line = r#"{"pid":7,"comm":"db","mode":"poll","rings":1,"waits":10,"spins":99,"empty_spins":90,"blocks":0,"sleeps":0,"slept_ns":0,"timeouts":1,"wait_ns":2000000,"mode_ns":{"poll":2000000},"calls":{"io_uring_submit_and_wait":12},"taken":{"io_uring_submit_and_wait":10},"fallbacks":{"sigmask":2,"peek":0},"cpu_user_ns":5000000,"cpu_sys_ns":1000000}"#;
        let idle = r#"{"pid":8,"comm":"sh","calls":{"io_uring_submit_and_wait":0}}"#;
        let t = render(Mode::Poll, "db", &format!("{line}\n{idle}\n"));
        assert!(
            t.contains("pid 7 db: 1 rings; 10 waits taken over, 2 handed to liburing (sigmask 2)"),
            "{t}"
        );
        assert!(t.contains("spins 99 (90 empty)"), "{t}");
        assert!(t.contains("poll 2.0 ms"), "{t}");
        assert!(t.contains("1 more process(es)"), "{t}");
        let none = render(Mode::Auto, "ls", "");
        assert!(none.contains("no process waited"), "{none}");
    }
}
