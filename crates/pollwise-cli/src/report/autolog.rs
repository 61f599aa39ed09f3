//! `--write_auto_log=NAME`: what `auto` chose, second by second, beside fio's logs.
//!
//! One file per job thread, `NAME_auto.N.log` (N: fio's thread number, as the other logs), one
//! line per second of the measured period and one for the rest at its end:
//!
//! `time, mode, switches, reasons, poll_ms, hybrid_ms, interrupt_ms, adaptive_ms, completions`
//!
//! - `time`: milliseconds since the measured period began (after `ramp_time`), at the line's end;
//! - `mode`: the mode `auto` was in at that moment;
//! - `switches`: mode switches during the line's period;
//! - `reasons`: every decision of the period by reason, `reason:count` separated by spaces
//!   (`explore`, `best`, `clat_shift`, `periodic`, `contention`, `contention_gone`, `start`,
//!   `long_wait`, `judged`), or
//!   `-`; a decision that kept the mode (a confirmed choice) counts here but not as a switch;
//! - `*_ms`: milliseconds spent in each mode during the period;
//! - `completions`: completions reaped during it.
//!
//! The engine's tick hook calls [`AutoLog::tick`] every 500 ms (fio's `avg_msec`), so a line is
//! written at the first tick at least a second after the previous line.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use pollwise::policy::auto::Reason;
use pollwise::policy::PolicyCounters;
use pollwise_bench::engine::Engine;

use super::logs::write_error;
use crate::spec::LogSpec;
use crate::{Error, Result};

/// One line per this many nanoseconds.
const LINE_NS: u64 = 1_000_000_000;

/// What the log last saw of the policy.
#[derive(Clone, Copy, Default)]
struct Seen {
    counters: PolicyCounters,
    reasons: [u64; Reason::ALL.len()],
}

impl Seen {
    fn of(engine: &Engine) -> (Seen, String) {
        let (_, counters) = engine.counters();
        let mut seen = Seen {
            counters,
            reasons: [0; Reason::ALL.len()],
        };
        let mut mode = String::from("-");
        for (k, v) in engine.beliefs() {
            if let Some(m) = k.strip_prefix("auto.current.") {
                mode = m.to_string();
            } else if let Some(r) = k.strip_prefix("auto.reason.") {
                if let Some(i) = Reason::ALL.iter().position(|x| x.name() == r) {
                    seen.reasons[i] = v as u64;
                }
            }
        }
        (seen, mode)
    }
}

/// The file thread `thread` (0-based within the job) writes its auto log to, with the name
/// `--write_auto_log` gave.
pub fn path(name: &str, spec: &LogSpec, thread: u32) -> PathBuf {
    PathBuf::from(format!("{name}_auto.{}.log", spec.thread_number(thread)))
}

/// A job thread's auto log.
pub struct AutoLog {
    path: PathBuf,
    out: BufWriter<crate::outfile::Stream>,
    t0: u64,
    last_ns: u64,
    seen: Seen,
    error: Option<Error>,
}

impl AutoLog {
    /// Creates thread `thread`'s log if `spec` asks for one; the measured period starts at
    /// `t0_ns`, with `engine`'s counters as they are now.
    pub fn open(
        spec: &LogSpec,
        thread: u32,
        t0_ns: u64,
        engine: &Engine,
    ) -> Result<Option<AutoLog>> {
        let Some(name) = &spec.auto else {
            return Ok(None);
        };
        let path = path(name, spec, thread);
        let f = crate::outfile::create_stream("the --write_auto_log file", &path)?;
        Ok(Some(AutoLog {
            path,
            out: BufWriter::new(f),
            t0: t0_ns,
            last_ns: t0_ns,
            seen: Seen::of(engine).0,
            error: None,
        }))
    }

    /// At a tick: writes a line if a second has passed since the last.
    pub fn tick(&mut self, now_ns: u64, engine: &Engine) {
        if now_ns.saturating_sub(self.last_ns) >= LINE_NS {
            self.line(now_ns, engine);
        }
    }

    /// The end of the measured period: a line for what is left, and the file flushed.
    pub fn finish(&mut self, now_ns: u64, engine: &Engine) -> Result<()> {
        if now_ns > self.last_ns {
            self.line(now_ns, engine);
        }
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(write_error(&self.path, &e));
        }
        // Not committed on an error: the new log is removed, an old one is left as it was.
        match self.error.take() {
            Some(e) => Err(e),
            None => self.out.get_mut().commit(),
        }
    }

    fn line(&mut self, now_ns: u64, engine: &Engine) {
        let (seen, mode) = Seen::of(engine);
        let text = line_text(now_ns.saturating_sub(self.t0), &mode, &self.seen, &seen);
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.error.get_or_insert(write_error(&self.path, &e));
        }
        self.seen = seen;
        self.last_ns = now_ns;
    }
}

/// One line for the period between `a` and `b`, ending `since_t0_ns` after the start.
fn line_text(since_t0_ns: u64, mode: &str, a: &Seen, b: &Seen) -> String {
    let (x, y) = (&a.counters, &b.counters);
    let reasons: Vec<String> = Reason::ALL
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let n = b.reasons[i].saturating_sub(a.reasons[i]);
            (n > 0).then(|| format!("{}:{n}", r.name()))
        })
        .collect();
    let ms = |f: fn(&PolicyCounters) -> u64| f(y).saturating_sub(f(x)) / 1_000_000;
    let done = |c: &PolicyCounters| c.auto.completions();
    format!(
        "{}, {mode}, {}, {}, {}, {}, {}, {}, {}\n",
        since_t0_ns / 1_000_000,
        y.auto.switches.saturating_sub(x.auto.switches),
        if reasons.is_empty() {
            "-".to_string()
        } else {
            reasons.join(" ")
        },
        ms(|c| c.auto.poll_ns),
        ms(|c| c.auto.hybrid_ns),
        ms(|c| c.auto.interrupt_ns),
        ms(|c| c.auto.adaptive_ns),
        done(y).saturating_sub(done(x)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_counts_the_periods_switches_reasons_and_time() {
        let mut a = Seen::default();
        a.counters.auto.switches = 1;
        a.counters.auto.poll_ns = 5_000_000;
        a.counters.auto.poll_completions = 10;
        a.reasons[Reason::Start as usize] = 1;
        let mut b = a;
        b.counters.auto.switches = 4;
        b.counters.auto.poll_ns = 25_000_000;
        b.counters.auto.interrupt_ns = 980_000_000;
        b.counters.auto.interrupt_completions = 500;
        b.reasons[Reason::Explore as usize] = 2;
        b.reasons[Reason::Best as usize] = 1;
        assert_eq!(
            line_text(2_000_400_000, "interrupt", &a, &b),
            "2000, interrupt, 3, explore:2 best:1, 20, 0, 980, 0, 500\n"
        );
        assert_eq!(
            line_text(3_000_000_000, "interrupt", &b, &b),
            "3000, interrupt, 0, -, 0, 0, 0, 0, 0\n"
        );
    }
}
