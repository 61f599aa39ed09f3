//! The process's judge of how contended choosers wait.
//!
//! While the CPUs are contended, or the process's choosers fill its cores, one thread's
//! throughput is a poor judge of its own way of waiting: a thread that spins serves itself
//! faster while it takes the CPU from the process's other threads (and from a device's own
//! worker), so per-thread judging picks spinning where the process as a whole loses. So such
//! [`Chooser`](super::Chooser)s do not judge alone: each waits the way the process's [`Judge`]
//! says, and counts its completions into it. The judge tries interrupt, adaptive and interrupt
//! again, each for [`TRIAL_NS`] of the whole process's completions and CPU time (after
//! [`SETTLE_NS`] for every chooser to take the new mode at its next wait). It holds the cheaper
//! if its throughput is within the slack of the faster's (auto's objective; CPU costs within
//! [`CPU_CLOSE`] of each other are a tie, which the faster wins; a trial that cannot tell the
//! last pick from the new one keeps it), for [`HOLD_MIN_NS`], doubling to [`HOLD_MAX_NS`] while
//! it judges the same. Interrupt, measured first and last, is judged on their mean: a drift
//! moves both candidates alike. Hybrid is not tried: its sleep is aimed per thread. Poll is not
//! tried: with a chooser on every core, each spinner takes the CPU the completion path needs,
//! and a stretch measures it wrong (db_bench at 2 threads on 2 cores: poll's stretches a median
//! 1.09x interrupt's, while held runs of the three came within 1.3%, poll at 3.9x the CPU; trials
//! with poll cost auto 1.19x the CPU of trials without, at no more throughput). Beyond the cores
//! it starves the threads it contends with (0.6x interrupt's throughput at 5x its CPU, disk, 4x).
//!
//! A judge nobody asked for [`IDLE_NS`] starts afresh: a benchmark's rounds of other modes in
//! between carry nothing over. Time and CPU come from the judge's [`JudgeSource`] (the
//! monotonic clock and `getrusage(RUSAGE_SELF)` for the process's judge), never from a
//! chooser's clock, which differs between jobs.
//!
//! Races: choosers ask from their own threads between waits. Completions are counted in an
//! atomic; the state is behind a mutex taken with `try_lock`, so a chooser never waits for
//! another: one that finds it taken keeps the mode last published. A forked child whose parent
//! held the lock at the fork never takes it: it keeps that mode, and never hangs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::{ADAPTIVE, HOLD_MAX_NS, HOLD_MIN_NS, INTERRUPT};

/// Each candidate's measured stretch: 100 ms of the process's completions.
pub const TRIAL_NS: u64 = 100_000_000;
/// Left out at the start of each stretch: every chooser takes the mode at its next wait.
pub const SETTLE_NS: u64 = 10_000_000;
/// Unasked for this long, the judge starts afresh.
pub const IDLE_NS: u64 = 500_000_000;

/// CPU costs per completion this close (as a share) are a tie: 100 ms stretches measure
/// them no closer, and the faster of the tied wins.
pub const CPU_CLOSE: f64 = 0.05;

/// The trial's order: interrupt first and last.
const PLAN: [usize; 3] = [INTERRUPT, ADAPTIVE, INTERRUPT];

/// Where a judge reads time and CPU.
pub trait JudgeSource: Send + Sync {
    /// Now, nanoseconds.
    fn now_ns(&self) -> u64;
    /// The process's CPU time, nanoseconds.
    fn cpu_ns(&self) -> u64;
}

/// The running process: the monotonic clock, and its CPU time from `getrusage`.
struct ProcessSource;

impl JudgeSource for ProcessSource {
    fn now_ns(&self) -> u64 {
        crate::clock::Clock::now_ns(&crate::clock::MonotonicClock)
    }
    fn cpu_ns(&self) -> u64 {
        crate::sys::rusage::Rusage::process().cpu_ns()
    }
}

/// What a stretch measured: completions per second, CPU nanoseconds per completion.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Measured {
    per_s: f64,
    cpu_per_io: f64,
}

/// A candidate's last measured stretch, as reports show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stretch {
    /// The process's completions per second.
    pub ios_per_s: f64,
    /// The process's CPU nanoseconds per completion.
    pub cpu_per_io_ns: f64,
    /// Its throughput over interrupt's in the same trial (interrupt's is the mean of its
    /// two stretches), what the judge's pick rests on; `None` when interrupt's stretches
    /// brought no completion.
    pub x_interrupt: Option<f64>,
    /// The trial it was measured in, from 1.
    pub trial: u64,
}

/// What the judge measured and chose: every judged decision's terms, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JudgeReport {
    /// Trials concluded.
    pub trials: u64,
    /// The mode held now (a [`CANDIDATES`](super::CANDIDATES) index); `None` during a trial.
    pub holding: Option<usize>,
    /// How many trials picked each candidate.
    pub picks: [u64; 4],
    /// Each candidate's stretch in the last trial it was in.
    pub last: [Option<Stretch>; 4],
}

#[derive(Debug)]
enum Step {
    /// At [`PLAN`]`[at]` since `since`; measuring from `(ns, ios, cpu)` once settled.
    Trial {
        at: usize,
        since: u64,
        from: Option<(u64, u64, u64)>,
    },
    /// Holding `mode` until `until`.
    Hold { mode: usize, until: u64 },
}

#[derive(Debug)]
struct State {
    last_ns: u64,
    step: Step,
    got: [Option<Measured>; 3],
    hold_ns: u64,
    last_best: Option<usize>,
    /// The concluded trials, as reports show them (`holding` is read from the state when a
    /// report is asked for, never stored here).
    report: JudgeReport,
}

/// The process's judge of contended waits. See the module docs.
pub struct Judge {
    source: Box<dyn JudgeSource>,
    ios: AtomicU64,
    mode: AtomicUsize,
    trials: AtomicU64,
    state: Mutex<Option<State>>,
}

impl Judge {
    /// A judge reading `source` (tests script it; the process's is [`Judge::process`]).
    pub fn new(source: Box<dyn JudgeSource>) -> Judge {
        Judge {
            source,
            ios: AtomicU64::new(0),
            mode: AtomicUsize::new(INTERRUPT),
            trials: AtomicU64::new(0),
            state: Mutex::new(None),
        }
    }

    /// The process's judge.
    pub fn process() -> &'static Judge {
        static JUDGE: OnceLock<Judge> = OnceLock::new();
        JUDGE.get_or_init(|| Judge::new(Box::new(ProcessSource)))
    }

    /// Trials concluded so far.
    pub fn trials(&self) -> u64 {
        self.trials.load(Ordering::Relaxed)
    }

    /// Completions contended choosers counted into it so far.
    pub fn completions(&self) -> u64 {
        self.ios.load(Ordering::Relaxed)
    }

    /// What the judge measured and chose since it last started afresh; `None` before anyone
    /// asked, or while a chooser holds its state (reports never wait for it).
    pub fn report(&self) -> Option<JudgeReport> {
        let guard = self.state.try_lock().ok()?;
        let st = guard.as_ref()?;
        let holding = match st.step {
            Step::Hold { mode, .. } => Some(mode),
            Step::Trial { .. } => None,
        };
        Some(JudgeReport {
            holding,
            ..st.report
        })
    }

    /// A contended chooser's wait brought `n` completions.
    pub fn count(&self, n: u64) {
        self.ios.fetch_add(n, Ordering::Relaxed);
    }

    /// The mode (a [`CANDIDATES`](super::CANDIDATES) index) judged choosers wait in now,
    /// with `slack` as auto's.
    pub fn mode(&self, slack: f64) -> usize {
        let Ok(mut guard) = self.state.try_lock() else {
            return self.mode.load(Ordering::Relaxed);
        };
        let now = self.source.now_ns();
        let st = match guard.as_mut() {
            Some(st) if now.saturating_sub(st.last_ns) <= IDLE_NS => st,
            _ => guard.insert(State {
                last_ns: now,
                step: Step::Trial {
                    at: 0,
                    since: now,
                    from: None,
                },
                got: [None; 3],
                hold_ns: HOLD_MIN_NS,
                last_best: None,
                report: JudgeReport::default(),
            }),
        };
        st.last_ns = now;
        let m = self.advance(st, now, slack);
        self.mode.store(m, Ordering::Relaxed);
        m
    }

    fn advance(&self, st: &mut State, now: u64, slack: f64) -> usize {
        match st.step {
            Step::Hold { mode, until } if now < until => mode,
            Step::Hold { .. } => {
                st.step = Step::Trial {
                    at: 0,
                    since: now,
                    from: None,
                };
                st.got = [None; 3];
                PLAN[0]
            }
            Step::Trial { at, since, from } => {
                let ios = self.ios.load(Ordering::Relaxed);
                match from {
                    None if now.saturating_sub(since) >= SETTLE_NS => {
                        st.step = Step::Trial {
                            at,
                            since,
                            from: Some((now, ios, self.source.cpu_ns())),
                        };
                    }
                    Some((t0, i0, c0)) if now.saturating_sub(t0) >= TRIAL_NS => {
                        let n = ios.saturating_sub(i0);
                        let cpu = self.source.cpu_ns().saturating_sub(c0);
                        st.got[at] = (n > 0).then(|| Measured {
                            per_s: n as f64 * 1e9 / now.saturating_sub(t0) as f64,
                            cpu_per_io: cpu as f64 / n as f64,
                        });
                        if at + 1 < PLAN.len() {
                            st.step = Step::Trial {
                                at: at + 1,
                                since: now,
                                from: None,
                            };
                        } else {
                            let all = measured(&st.got);
                            let (mut best, as_good) = best(&all, slack);
                            // A trial that cannot tell the last pick from this one keeps it.
                            if let Some(last) = st.last_best.filter(|&l| as_good & 1 << l != 0) {
                                best = last;
                            }
                            st.hold_ns = if st.last_best == Some(best) {
                                (st.hold_ns * 2).min(HOLD_MAX_NS)
                            } else {
                                HOLD_MIN_NS
                            };
                            st.last_best = Some(best);
                            let r = &mut st.report;
                            r.trials += 1;
                            r.picks[best] += 1;
                            let interrupt = all[0].map(|(_, i)| i.per_s);
                            for (mode, m) in all.into_iter().flatten() {
                                r.last[mode] = Some(Stretch {
                                    ios_per_s: m.per_s,
                                    cpu_per_io_ns: m.cpu_per_io,
                                    x_interrupt: interrupt.map(|i| m.per_s / i),
                                    trial: r.trials,
                                });
                            }
                            st.step = Step::Hold {
                                mode: best,
                                until: now + st.hold_ns,
                            };
                            self.trials.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    _ => {}
                }
                match st.step {
                    Step::Trial { at, .. } => PLAN[at],
                    Step::Hold { mode, .. } => mode,
                }
            }
        }
    }
}

/// Each candidate the trial measured (`got[i]` measured [`PLAN`]`[i]`), with its mode;
/// interrupt (measured first and last) as the mean of its stretches, first. No allocation: a
/// waiter's steady state allocates nothing, and a trial ends in one.
fn measured(got: &[Option<Measured>; 3]) -> [Option<(usize, Measured)>; 2] {
    let last = PLAN.len() - 1;
    let interrupt = match (got[0], got[last]) {
        (Some(a), Some(b)) => Some(Measured {
            per_s: (a.per_s + b.per_s) / 2.0,
            cpu_per_io: (a.cpu_per_io + b.cpu_per_io) / 2.0,
        }),
        (a, b) => a.or(b),
    };
    [
        interrupt.map(|i| (INTERRUPT, i)),
        got[1].map(|m| (ADAPTIVE, m)),
    ]
}

/// Auto's objective over a trial's [`measured`] candidates: the cheapest mode whose
/// throughput is within `slack` of the fastest, the faster of those within [`CPU_CLOSE`] of
/// the cheapest's CPU; and the set (bits by mode) of those as good, which the trial cannot
/// tell apart. A candidate with no completions measured loses, and interrupt wins when
/// nothing else was measured.
fn best(measured: &[Option<(usize, Measured)>; 2], slack: f64) -> (usize, u8) {
    if measured[0].is_none() {
        return (INTERRUPT, 1 << INTERRUPT);
    }
    let all = || measured.iter().flatten();
    let fastest = all().map(|(_, m)| m.per_s).fold(0.0, f64::max);
    let line = fastest * (1.0 - slack);
    let within = || all().filter(move |(_, m)| m.per_s >= line);
    let cheapest = within()
        .map(|(_, m)| m.cpu_per_io)
        .fold(f64::INFINITY, f64::min);
    let tied = || within().filter(|(_, m)| m.cpu_per_io <= cheapest * (1.0 + CPU_CLOSE));
    let as_good = tied().fold(0u8, |set, (mode, _)| set | 1 << mode);
    // The first of equals wins: interrupt.
    let pick = tied()
        .fold(None::<&(usize, Measured)>, |b, x| match b {
            Some(b) if b.1.per_s >= x.1.per_s => Some(b),
            _ => Some(x),
        })
        .map_or(INTERRUPT, |(mode, _)| *mode);
    (pick, as_good | 1 << pick)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::choice::POLL;
    use std::sync::Arc;

    /// A scripted source: time and CPU set by the test.
    #[derive(Default)]
    struct Script {
        now: AtomicU64,
        cpu: AtomicU64,
    }

    impl JudgeSource for Arc<Script> {
        fn now_ns(&self) -> u64 {
            self.now.load(Ordering::Relaxed)
        }
        fn cpu_ns(&self) -> u64 {
            self.cpu.load(Ordering::Relaxed)
        }
    }

    /// Runs the judge through `ms` milliseconds in steps of 1 ms: each millisecond, the mode
    /// it says brings `rate(mode)` completions at `cpu(mode)` ns of CPU each.
    fn drive(
        j: &Judge,
        s: &Arc<Script>,
        ms: u64,
        rate: impl Fn(usize) -> u64,
        cpu: impl Fn(usize) -> u64,
    ) -> Vec<usize> {
        let mut seen = Vec::new();
        for _ in 0..ms {
            let m = j.mode(0.10);
            if seen.last() != Some(&m) {
                seen.push(m);
            }
            j.count(rate(m));
            s.cpu.fetch_add(rate(m) * cpu(m), Ordering::Relaxed);
            s.now.fetch_add(1_000_000, Ordering::Relaxed);
        }
        seen
    }

    fn judge() -> (Judge, Arc<Script>) {
        let s = Arc::new(Script {
            now: AtomicU64::new(1_000_000_000),
            cpu: AtomicU64::new(0),
        });
        (Judge::new(Box::new(s.clone()) as Box<dyn JudgeSource>), s)
    }

    #[test]
    fn adaptive_well_faster_than_the_slack_is_held() {
        let (j, s) = judge();
        // Adaptive 1.2x interrupt's throughput (past the 10% slack), at a little more CPU.
        let rate = |m| if m == ADAPTIVE { 60 } else { 50 };
        let cpu = |m| if m == ADAPTIVE { 1_100 } else { 1_000 };
        let seen = drive(&j, &s, 400, rate, cpu);
        assert_eq!(seen, vec![INTERRUPT, ADAPTIVE, INTERRUPT, ADAPTIVE]);
        assert_eq!(j.trials(), 1);
        assert_eq!(drive(&j, &s, 500, rate, cpu), vec![ADAPTIVE]);
    }

    #[test]
    fn the_report_shows_each_candidates_stretch_and_the_pick() {
        let (j, s) = judge();
        assert_eq!(j.report(), None, "nobody asked yet");
        let rate = |m| if m == ADAPTIVE { 60 } else { 50 };
        let cpu = |m| if m == ADAPTIVE { 1_100 } else { 1_000 };
        drive(&j, &s, 150, rate, cpu);
        let r = j.report().unwrap();
        assert_eq!((r.trials, r.holding), (0, None), "mid-trial: {r:?}");
        drive(&j, &s, 250, rate, cpu);
        let r = j.report().unwrap();
        assert_eq!((r.trials, r.holding), (1, Some(ADAPTIVE)), "{r:?}");
        assert_eq!(r.picks, [0, 0, 0, 1]);
        let close = |got: f64, want: f64| (got / want - 1.0).abs() < 0.02;
        let a = r.last[ADAPTIVE].unwrap();
        assert!(
            close(a.ios_per_s, 60_000.0) && close(a.cpu_per_io_ns, 1_100.0),
            "{a:?}"
        );
        assert!(close(a.x_interrupt.unwrap(), 1.2), "{a:?}");
        let i = r.last[INTERRUPT].unwrap();
        assert!(
            close(i.ios_per_s, 50_000.0) && close(i.cpu_per_io_ns, 1_000.0),
            "{i:?}"
        );
        assert_eq!(
            (i.trial, r.last[POLL]),
            (1, None),
            "poll was not in the trial"
        );
    }

    #[test]
    fn within_the_slack_the_cheaper_is_held_and_the_hold_doubles() {
        let (j, s) = judge();
        // Adaptive 5% faster at 1.3x the CPU: interrupt is within the slack and cheaper.
        let rate = |m| if m == ADAPTIVE { 105 } else { 100 };
        let cpu = |m| if m == ADAPTIVE { 1_300 } else { 1_000 };
        drive(&j, &s, 400, rate, cpu);
        assert_eq!((j.trials(), j.mode(0.10)), (1, INTERRUPT));
        // The first hold is 1 s; the second trial judges the same and holds for 2 s.
        drive(&j, &s, 1_400, rate, cpu);
        assert_eq!(j.trials(), 2);
        drive(&j, &s, 1_900, rate, cpu);
        assert_eq!((j.trials(), j.mode(0.10)), (2, INTERRUPT));
    }

    #[test]
    fn a_stretch_without_completions_loses_and_an_idle_judge_starts_afresh() {
        let (j, s) = judge();
        // Adaptive brings nothing (its window starves whatever completes the I/O).
        let seen = drive(
            &j,
            &s,
            400,
            |m| if m == ADAPTIVE { 0 } else { 50 },
            |_| 1_000,
        );
        assert_eq!(seen, vec![INTERRUPT, ADAPTIVE, INTERRUPT]);
        assert_eq!(j.mode(0.10), INTERRUPT);
        // Unasked for longer than IDLE_NS: a new trial from interrupt, not the old hold.
        s.now.fetch_add(IDLE_NS + 1, Ordering::Relaxed);
        let seen = drive(
            &j,
            &s,
            150,
            |m| if m == ADAPTIVE { 90 } else { 50 },
            |_| 1_000,
        );
        assert_eq!(seen, vec![INTERRUPT, ADAPTIVE]);
        assert_eq!(j.trials(), 1);
    }

    #[test]
    fn poll_is_never_tried_however_fast_it_would_be() {
        // The choosers fill the cores or contend: spinning would take every core.
        let (j, s) = judge();
        let seen = drive(
            &j,
            &s,
            3_000,
            |m| if m == POLL { 90 } else { 50 },
            |_| 1_000,
        );
        assert_eq!(
            seen,
            vec![INTERRUPT, ADAPTIVE, INTERRUPT, ADAPTIVE, INTERRUPT]
        );
        assert_eq!(j.trials(), 2);
        assert_eq!(j.report().unwrap().last[POLL], None);
    }

    #[test]
    fn cpu_costs_within_the_tie_go_to_the_faster() {
        let (j, s) = judge();
        // Adaptive 2% cheaper (a tie) and 4% slower: interrupt, the faster, is held.
        let rate = |m| if m == ADAPTIVE { 48 } else { 50 };
        let cpu = |m| if m == ADAPTIVE { 980 } else { 1_000 };
        drive(&j, &s, 400, rate, cpu);
        assert_eq!((j.trials(), j.mode(0.10)), (1, INTERRUPT));
        // Adaptive 10% cheaper and 4% slower: the cheaper within the slack, adaptive.
        let (j, s) = judge();
        let cpu = |m| if m == ADAPTIVE { 900 } else { 1_000 };
        drive(&j, &s, 400, rate, cpu);
        assert_eq!((j.trials(), j.mode(0.10)), (1, ADAPTIVE));
    }

    #[test]
    fn a_trial_that_cannot_tell_the_last_pick_apart_keeps_it() {
        let (j, s) = judge();
        let adaptive_rate = AtomicU64::new(60);
        let rate = |m| {
            if m == ADAPTIVE {
                adaptive_rate.load(Ordering::Relaxed)
            } else {
                50
            }
        };
        drive(&j, &s, 400, rate, |_| 1_000);
        assert_eq!((j.trials(), j.mode(0.10)), (1, ADAPTIVE));
        // Now the two are equal: interrupt would be the pick of a fresh trial (the first of
        // equals), but this one cannot tell them apart, so adaptive is kept, for twice as long.
        adaptive_rate.store(50, Ordering::Relaxed);
        drive(&j, &s, 1_400, rate, |_| 1_000);
        assert_eq!((j.trials(), j.mode(0.10)), (2, ADAPTIVE));
        // The second trial ended at 1.66 s: held to 3.66 s (a first hold is 1 s).
        drive(&j, &s, 1_800, rate, |_| 1_000);
        assert_eq!((j.trials(), j.mode(0.10)), (2, ADAPTIVE));
    }
}
