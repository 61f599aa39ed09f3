//! The command's errors: one line naming the cause and the fix, and an exit status.
//!
//! The library's errors are structured (which field, which feature, which operation); here each
//! becomes a line that names the option to change, as fio users expect.

use std::borrow::Cow;
use std::io;

use pollwise::Error as LibError;
use pollwise::Op as LibOp;

/// What can go wrong running a command; each message names the cause and the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input from the user (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// The kernel, device or file cannot do what was asked (exit status 2).
    #[error("{0}")]
    Unsupported(String),
    /// An I/O or system error while running (exit status 1).
    #[error("{0}")]
    Io(String),
    /// Data read back did not match what was written (exit status 1).
    #[error("{0}")]
    Verify(String),
    /// A signal stopped the run before it had anything to report (exit status 128 + signal).
    #[error("{0}")]
    Interrupted(String),
}

impl Error {
    /// The process exit status this error should give: 2 for usage and capability errors.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Unsupported(_) => 2,
            Error::Io(_) | Error::Verify(_) => 1,
            Error::Interrupted(_) => {
                crate::signals::exit_code(crate::signals::received().unwrap_or(libc::SIGINT))
            }
        }
    }
}

impl Error {
    /// The error for a run a signal stopped before `what`.
    pub fn interrupted(what: &str) -> Self {
        let sig = crate::signals::received().unwrap_or(libc::SIGINT);
        Error::Interrupted(format!(
            "interrupted by {} {what}: no results to report",
            crate::signals::name(sig)
        ))
    }
}

/// The command's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The most characters of one value (an option's name or value, a path) a message echoes.
pub const SHOWN_MAX: usize = 80;

/// A word longer than this in a finished message is cut to [`SHOWN_MAX`] characters when it is
/// printed ([`one_line`]): a value no message cut itself.
const WORD_MAX: usize = 200;

/// Whether `c` would change the terminal or the line rather than show: control characters
/// (newline, escape) and the invisible marks that reorder text.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `s` escaped: control characters and text-reordering marks written as Rust writes them
/// (`\n`, `\u{1b}`), everything else as it is.
fn escaped(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` cut to its first `max` characters, with "…" when something was cut.
fn cut(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((i, _)) => Cow::Owned(format!("{}…", &s[..i])),
        None => Cow::Borrowed(s),
    }
}

/// A value as a message echoes it: escaped (a newline or an escape sequence shows as `\n`,
/// `\u{1b}`, so the message stays one line and the terminal is left alone) and cut to
/// [`SHOWN_MAX`] characters with "…".
pub fn shown(s: &str) -> Cow<'_, str> {
    match escaped(s) {
        Cow::Borrowed(b) => cut(b, SHOWN_MAX),
        Cow::Owned(o) => Cow::Owned(cut(&o, SHOWN_MAX).into_owned()),
    }
}

/// `msg` with each of `values` it echoes replaced by its [`shown`] form (for a message built
/// from raw values).
pub fn shown_in(msg: String, values: &[&str]) -> String {
    let mut m = msg;
    for v in values.iter().filter(|v| !v.is_empty()) {
        let s = shown(v);
        if s != *v {
            m = m.replace(v, &s);
        }
    }
    m
}

/// The most characters a printed message has: its start and end are kept (the cause and the
/// fix), the middle cut.
const LINE_MAX: usize = 1000;

/// A finished message as it is printed: one line whatever values it carries (control
/// characters escaped), no word longer than a few hundred characters (a value a message did
/// not cut itself is cut to [`SHOWN_MAX`] with "…"), and at most 1000 characters.
pub fn one_line(msg: &str) -> String {
    let e = escaped(msg);
    let line = e
        .split(' ')
        .map(|w| {
            if w.chars().count() > WORD_MAX {
                cut(w, SHOWN_MAX)
            } else {
                Cow::Borrowed(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let n = line.chars().count();
    if n <= LINE_MAX {
        return line;
    }
    let keep = LINE_MAX / 2 - 2;
    let head: String = line.chars().take(keep).collect();
    let tail: String = line.chars().skip(n - keep).collect();
    format!("{head} … {tail}")
}

/// The command-line option that sets a library configuration field.
pub fn option_for_field(field: &str) -> &str {
    match field {
        "batch_submit" => "iodepth_batch_submit",
        "batch_complete_min" => "iodepth_batch_complete_min",
        "poll_max_ns" => "poll_max_ns",
        "depth" => "poller_depth",
        "quantum" => "poller_quantum",
        "batch" => "poller_batch",
        "pass_limit" => "poller_pass_limit",
        "cpu" => "poller_cpu",
        pollwise::queue::sim::LATENCY_FIELD => "sim_latency",
        other => other,
    }
}

/// " for TARGET", or "" when the library named no target.
fn for_target(target: &Option<std::path::PathBuf>) -> String {
    match target {
        Some(t) => format!(" for {}", t.display()),
        None => String::new(),
    }
}

/// The errno table's cause and fix for the library's operation `op`, as "; ..." to append, or "".
fn errno_hint(op: &LibOp, e: &io::Error) -> String {
    let kind = match op {
        LibOp::Write { .. } => crate::errno::Op::Write,
        LibOp::Read { .. } => crate::errno::Op::Read,
        _ => crate::errno::Op::Other,
    };
    match e.raw_os_error().and_then(|n| crate::errno::hint(n, kind)) {
        Some(h) => format!("; {h}"),
        None => String::new(),
    }
}

impl From<LibError> for Error {
    fn from(e: LibError) -> Self {
        match e {
            // The request slab's buffers: one of --bs bytes per --iodepth slot.
            LibError::Config {
                field: "buf_len",
                reason,
            } => Error::Usage(format!(
                "cannot allocate the I/O buffers (--bs bytes per request in flight): {reason}; lower --bs or the requests in flight (--iodepth, or --burst in the fairness scenario), or raise the memory limit (ulimit -v)"
            )),
            LibError::Config {
                field: "verify",
                reason,
            } => Error::Usage(format!(
                "--verify=crc32c {reason} (write it first with --rw=write --verify=crc32c)"
            )),
            LibError::Config { field, reason } => {
                // A reason may begin with the value: "=4095 names no CPU ...".
                let sep = if reason.names_value() { "" } else { " " };
                Error::Usage(format!("--{}{sep}{reason}", option_for_field(field)))
            }
            LibError::Unsupported {
                feature: "IOPOLL",
                target,
                source,
            } => Error::Unsupported(format!(
                "polled I/O (--hipri) is not supported{}: it needs O_DIRECT on a device with poll queues (nvme.poll_queues > 0), and the kernel answered {source}; run without --hipri",
                for_target(&target)
            )),
            LibError::Unsupported {
                feature,
                target,
                source,
            } => Error::Unsupported(format!(
                "{feature} is not supported{}: the kernel answered {source}",
                for_target(&target)
            )),
            LibError::Os {
                op: op @ LibOp::AllocBuffers { .. },
                source,
            } => {
                // The run's buffers did not fit after all (another process took the memory
                // after the check): a limit to change, like the check's refusal.
                Error::Usage(format!(
                    "{op} failed: {}; lower --bs or --iodepth (or --numjobs), free memory, or raise ulimit -v",
                    crate::errno::plain(&source)
                ))
            }
            LibError::Os { op, source } => {
                let hint = if let LibOp::PollerRingSetup { .. } = op {
                    "; raise ulimit -l or lower --poller_depth".to_string()
                } else {
                    errno_hint(&op, &source)
                };
                let msg = format!("{op} failed: {}{hint}", crate::errno::plain(&source));
                match source.raw_os_error() {
                    // A read-only target asked to write: the user's choice to change.
                    Some(libc::EROFS | libc::EPERM) if matches!(op, LibOp::Write { .. }) => {
                        Error::Usage(msg)
                    }
                    _ => Error::Io(msg),
                }
            }
            LibError::Short { op, done, len } => Error::Io(format!(
                "short {op}: {done} of {len} bytes (is the file shorter than --size?)"
            )),
            LibError::Verify(m) => Error::Verify(m.to_string()),
            e @ (LibError::Unknown { .. }
            | LibError::OutOfRange { .. }
            | LibError::StaleHandle { .. }) => Error::Usage(e.to_string()),
            // A variant this front end does not know yet: its message as the library says it.
            other => Error::Io(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::Reason;

    fn usage(e: LibError) -> String {
        match Error::from(e) {
            Error::Usage(m) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn config_errors_name_the_flag() {
        let m = usage(LibError::config(
            "cpu",
            Reason::NoSuchCpu {
                cpu: 4095,
                allowed: vec![0, 1],
            },
        ));
        assert_eq!(
            m,
            "--poller_cpu=4095 names no CPU this process may run on: use one of 0-1"
        );
        let m = usage(LibError::config(
            "batch",
            Reason::Rule("must be at least 1"),
        ));
        assert_eq!(m, "--poller_batch must be at least 1");
        let m = usage(LibError::config(
            "verify",
            Reason::Rule("found no verify header"),
        ));
        assert!(
            m.starts_with("--verify=crc32c found no verify header"),
            "{m}"
        );
        assert!(m.contains("--rw=write"), "{m}");
    }

    #[test]
    fn library_parse_errors_name_the_flag() {
        let e = "kqueue"
            .parse::<pollwise::reactor::FdMonKind>()
            .unwrap_err();
        let m = usage(e);
        assert!(m.starts_with("--fdmon=kqueue "), "{m}");
        assert!(m.contains("epoll"), "{m}");
        let e = "fixed:10"
            .parse::<pollwise::queue::sim::LatencyModel>()
            .unwrap_err();
        let m = usage(e);
        assert!(m.starts_with("--sim_latency=fixed:10: "), "{m}");
        assert!(m.contains("no unit"), "{m}");
    }

    #[test]
    fn values_are_escaped_and_cut() {
        assert_eq!(shown("4k\n\u{1b}[31mred"), "4k\\n\\u{1b}[31mred");
        let long = "a".repeat(100_000);
        let s = shown(&long);
        assert_eq!(s.chars().count(), SHOWN_MAX + 1);
        assert!(s.ends_with('…'));
        assert_eq!(shown("µs ok"), "µs ok");
        let line = one_line(&format!("unknown option --{long}\nx: see `pollwise help`"));
        assert!(line.len() < 300, "{line}");
        assert!(!line.contains('\n'));
        assert!(line.ends_with("see `pollwise help`"), "{line}");
        let spaced = "a ".repeat(50_000);
        let line = one_line(&format!("--bs={spaced} is not a size: write e.g. --bs=4k"));
        assert!(line.chars().count() <= LINE_MAX, "{}", line.len());
        assert!(line.ends_with("--bs=4k"), "{line}");
        let m = shown_in(format!("--x={spaced}: no"), &[&spaced]);
        assert!(m.len() < 200 && m.ends_with("…: no"), "{m}");
    }

    #[test]
    fn buffer_allocation_names_real_options() {
        let m = usage(LibError::config("buf_len", Reason::Rule("out of memory")));
        assert!(m.contains("--bs") && m.contains("--iodepth"), "{m}");
        assert!(!m.contains("--buf_len"), "{m}");
    }

    #[test]
    fn a_failed_write_or_read_is_mapped_by_its_typed_operation() {
        let at = |write: bool| {
            let target = std::path::PathBuf::from("/tmp/t");
            let op = if write {
                LibOp::Write {
                    offset: 4096,
                    target,
                }
            } else {
                LibOp::Read {
                    offset: 4096,
                    target,
                }
            };
            Error::from(LibError::os(op, io::Error::from_raw_os_error(libc::EROFS)))
        };
        // A read-only target asked to write is the user's to change: exit 2.
        let w = at(true);
        assert_eq!(w.exit_code(), 2, "{w}");
        assert!(
            w.to_string()
                .starts_with("write at offset 4096 of /tmp/t failed: "),
            "{w}"
        );
        let r = at(false);
        assert_eq!(r.exit_code(), 1, "{r}");
        assert!(
            r.to_string()
                .starts_with("read at offset 4096 of /tmp/t failed: "),
            "{r}"
        );
        let short = Error::from(LibError::Short {
            op: LibOp::Read {
                offset: 8192,
                target: "/tmp/t".into(),
            },
            done: 100,
            len: 4096,
        });
        assert!(
            short
                .to_string()
                .contains("short read at offset 8192 of /tmp/t: 100 of 4096 bytes"),
            "{short}"
        );
    }

    #[test]
    fn a_poller_ring_that_cannot_be_set_up_names_the_fix() {
        let e = Error::from(LibError::os(
            LibOp::PollerRingSetup { entries: 512 },
            io::Error::from_raw_os_error(libc::ENOMEM),
        ));
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("--poller_depth"), "{e}");
    }
}
