//! A job thread's measured window: from the moment every thread of the job was ready to its
//! stop (its runtime, its size, fio's number_ios, a stop), with the window's hooks (logs, live
//! counters, steady state, the latency target, the minimum rate) and ticks (samples, the auto
//! log, interim reports); at its end, its figures and whether it ran as asked.
//!
//! Rule: the window is the job's, not the thread's: every thread counts from the same `t0`, and
//! nothing before it (setup, the ramp) or after it (verify) is in its figures or its logs. The
//! reason: a job's figures merge its threads', which only adds up over one window.

use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pollwise_bench::engine::{Ended, Engine, OnDone, OnIssue, Stop};
use pollwise_bench::fault::FaultTally;
use pollwise_bench::stats::{Sampler, Stats};
use pollwise_bench::verify;

use super::config::runtime_ns;
use super::measure::{measure, Start};
use super::thread::{Measured, Ready, Thread};
use super::verdict::{ran_as_asked, Seen};
use crate::iolog::Writer;
use crate::report::autolog::AutoLog;
use crate::report::logs::ThreadLog;
use crate::report::progress::ThreadLive;
use crate::{Error, Result};

/// How often a job with steady-state detection ticks (its check is once a second).
const STEADY_TICK_NS: u64 = 50_000_000;

/// fio's write_iolog of a thread, shared with the hook that writes each request.
type IoLog = Arc<Mutex<Writer>>;

/// What the window leaves for its end.
struct Closing<'a> {
    /// Its stop time, if it had one.
    until: Option<u64>,
    /// Its per-interval samples so far.
    sampler: Sampler,
    /// The figures at its start.
    m0: Start,
    /// Requests cancelled before it.
    cancelled0: u64,
    /// What the fault queue injected, if the job injects faults.
    faults: Option<FaultTally>,
    /// The thread's log, if the job keeps one.
    log: Option<Arc<Mutex<ThreadLog>>>,
    /// fio's write_iolog, if asked.
    iolog: Option<IoLog>,
    /// `--write_auto_log`, if asked.
    alog: Option<AutoLog>,
    /// Why the thread fell below its minimum rate, if it did.
    slow_line: Arc<Mutex<Option<String>>>,
    /// Where the blocks that failed verification are kept, for naming them after an error.
    blocks_seen: &'a mut verify::BadBlocks,
}

impl Thread<'_> {
    /// The measured window of a thread `ready` for it, from the job's `t0`: its hooks on, the
    /// run (again from the start for the final run at the depth a latency target found), its
    /// figures. The blocks that failed verification go to `blocks_seen` before its end is
    /// judged.
    pub(super) fn measured(
        &self,
        ready: Ready,
        t0: u64,
        blocks_seen: &mut verify::BadBlocks,
    ) -> Result<Measured> {
        let Ready {
            mut engine,
            files,
            log,
            faults,
        } = ready;
        let (spec, i, run) = (self.spec, self.i, self.run);
        let mut t0 = t0;
        let mut m0 = Start::now(&engine, t0);
        let log = log.map(|mut l| {
            l.start(t0);
            Arc::new(Mutex::new(l))
        });
        let (iolog, on_issue) = self.iolog(t0)?;
        let counters = run.live.as_ref().zip(self.live);
        let slow_line = Arc::new(Mutex::new(None::<String>));
        let steady = run.steady.clone();
        if let Some(s) = &steady {
            s.start(t0);
        }
        if let Some(l) = &self.lat {
            l.set_ramp(false);
            l.start(t0);
        }
        let live = counters.map(|(_, t)| Arc::clone(t));
        let on_done = self.on_done(t0, log.clone(), live, &slow_line);
        engine.replace_hooks(on_done, on_issue);
        if let Some(((l, _), t)) = counters {
            l.measuring(t);
        }
        let publish = counters.filter(|((l, _), _)| l.snapshots).map(|(_, t)| t);
        let cancelled0 = engine.cancelled();
        let interval_ns = crate::report::sample::AVG_MSEC * 1_000_000;
        let mut alog = AutoLog::open(&spec.logs, i as u32, t0, &engine)?;
        // Steady state is checked once a second: ticks come often enough to be on time, and
        // the samples below keep their own interval.
        let tick_ns = match &steady {
            Some(_) => interval_ns.min(STEADY_TICK_NS),
            None => interval_ns,
        };
        let mut sampler;
        let mut until;
        // Once, or again from the start for the final run at the depth a latency target found.
        let r = loop {
            let (stop, ends) = self.stop(&mut engine, t0)?;
            until = ends;
            // --runtime bounds the drain too: what is still in flight a moment after it is cancelled.
            engine.set_deadline(until);
            // A rate counts from the window's start: its first request goes at once.
            engine.pace_from(t0);
            sampler = Sampler::new(t0, interval_ns);
            let mut next_sample = t0.saturating_add(interval_ns);
            // Samples, the auto log, interim reports and steady state, from inside the engine's loop.
            let mut on_tick = |engine: &Engine, now: u64| {
                if let Some(s) = &steady {
                    s.tick(now);
                }
                // A tick a little early (timer granularity) still takes the sample, as the sampler.
                if now.saturating_add(interval_ns / 100) < next_sample {
                    return;
                }
                next_sample = now.saturating_add(interval_ns);
                let (read, write) = engine.dir_stats();
                sampler.tick(now, read, write);
                if let Some(a) = alog.as_mut() {
                    a.tick(now, engine);
                }
                // A tick at the end of the runtime leaves no snapshot: the final report, of
                // the same moment, follows, and an interim one would only repeat it.
                let at_end = ends.is_some_and(|e| now.saturating_add(interval_ns / 100) >= e);
                if let (Some(t), false) = (publish, at_end) {
                    // Read first: the snapshot answers the requests made before it was taken.
                    let asked = t.request();
                    let now = measure(engine, sampler.clone(), &m0, &*self.clock, faults.as_ref());
                    t.publish(now, asked);
                }
            };
            let tick = pollwise_bench::engine::Tick {
                first_ns: t0.saturating_add(tick_ns),
                every: Duration::from_nanos(tick_ns),
                f: &mut on_tick,
            };
            let r = engine.run_ticking(stop, tick).map_err(Error::from);
            // fio's final run at the depth its latency target settled on: what was in flight has
            // completed (the run drained it); figures, runtime and size start afresh.
            if let (Ok(Ended::Stopped), Some(l)) = (&r, &self.lat) {
                if l.take_restart()
                    && !crate::signals::interrupted()
                    && !self.failed.load(Ordering::SeqCst)
                {
                    engine.reset_stats();
                    t0 = self.clock.now_ns();
                    m0 = Start::now(&engine, t0);
                    l.start(t0);
                    continue;
                }
            }
            break r;
        };
        let closing = Closing {
            until,
            sampler,
            m0,
            cancelled0,
            faults,
            log,
            iolog,
            alog,
            slow_line,
            blocks_seen,
        };
        self.close(engine, files, r, closing)
    }

    /// fio's write_iolog: the writer, and the hook that logs every request the job issues, in
    /// order, from the window's start `t0`; none if the job keeps no I/O log.
    fn iolog(&self, t0: u64) -> Result<(Option<IoLog>, Option<OnIssue>)> {
        let Some(p) = self.spec.extra.write_iolog.as_deref() else {
            return Ok((None, None));
        };
        let w = Writer::create(p, &self.spec.filename, t0)?;
        let hook = Arc::clone(&w);
        let on_issue: OnIssue = Box::new(move |dir, off, len, now| {
            if let Ok(mut w) = hook.lock() {
                w.request(dir, off, len, now);
            }
        });
        Ok((Some(w), Some(on_issue)))
    }

    /// The window's completion hook, when it has something to count: steady state, the latency
    /// target's search, the `log`, the `live` counters and fio's minimum-rate check (at each
    /// completion, as fio checks it after each I/O: a job with no I/O for a while is only looked
    /// at when its next request completes; why it failed goes to `slow_line`).
    fn on_done(
        &self,
        t0: u64,
        log: Option<Arc<Mutex<ThreadLog>>>,
        live: Option<Arc<ThreadLive>>,
        slow_line: &Arc<Mutex<Option<String>>>,
    ) -> Option<OnDone> {
        let i = self.i;
        let mut min_rate = self.spec.extra.min_rate.map(|m| {
            (
                crate::extras::MinRateCheck::new(m, t0),
                [(0u64, 0u64); 2],
                Arc::clone(&self.too_slow),
                Arc::clone(slow_line),
            )
        });
        let (steady, lat) = (self.run.steady.clone(), self.lat.clone());
        if log.is_none()
            && live.is_none()
            && steady.is_none()
            && lat.is_none()
            && min_rate.is_none()
        {
            return None;
        }
        Some(Box::new(move |d| {
            if let Some(s) = &steady {
                s.add(i, u64::from(d.len));
            }
            if let Some(l) = &lat {
                l.on_done(d);
            }
            if let Some(l) = &log {
                if let Ok(mut l) = l.lock() {
                    l.record(d);
                }
            }
            if let Some(t) = &live {
                t.add(d.dir, d.len);
            }
            if let Some((check, done, slow, line)) = min_rate.as_mut().filter(|_| {
                matches!(
                    d.dir,
                    pollwise::request::Dir::Read | pollwise::request::Dir::Write
                )
            }) {
                let k = usize::from(d.dir == pollwise::request::Dir::Write);
                done[k].0 += u64::from(d.len);
                done[k].1 += 1;
                if !slow.load(Ordering::Relaxed) {
                    if let Some(l) = check.look(d.done_ns, *done) {
                        if let Ok(mut slot) = line.lock() {
                            *slot = Some(l);
                        }
                        slow.store(true, Ordering::SeqCst);
                    }
                }
            }
        }))
    }

    /// The window's stop from `t0`, and its stop time if it has one: the runtime (time-based),
    /// else the size (counted from now: the ramp's requests do not count), at most fio's
    /// number_ios requests either way.
    fn stop(&self, engine: &mut Engine, t0: u64) -> Result<(Stop, Option<u64>)> {
        let spec = self.spec;
        // No --runtime (0): no time limit; a job that is not time-based ends when its size is
        // done, as fio's.
        let until = runtime_ns(spec).map(|r| t0.saturating_add(r));
        // fio's number_ios: at most this many requests, whatever else the job says.
        let cap = spec
            .extra
            .number_ios
            .map(|k| engine.submitted().saturating_add(k));
        let stop = match (spec.time_based, until) {
            (true, Some(t)) => match cap {
                Some(k) => Stop::Either(t, k),
                None => Stop::At(t),
            },
            (true, None) => {
                return Err(Error::Usage(
                    "--time_based needs a --runtime: give one, e.g. --runtime=10s".into(),
                ))
            }
            (false, until) => {
                let io_size = if spec.io_size == 0 {
                    self.target.size
                } else {
                    spec.io_size
                };
                // Counted from now: the ramp's requests do not count (fio resets them too).
                // Requests of several sizes stop on their bytes.
                let n = if spec.extra.replay.is_some() {
                    // A replay ends with its log.
                    u64::MAX
                } else if spec.extra.varies() || spec.extra.zones.is_some() {
                    engine.set_byte_limit(Some(io_size));
                    u64::MAX
                } else {
                    // A trimwrite's block is two requests: its trim and its write.
                    let bs = match spec.extra.trim_bs {
                        Some(t) if spec.rw.trims() => t,
                        _ => spec.bs,
                    };
                    engine.submitted() + (io_size / bs as u64).max(1) * spec.rw.ios_per_block()
                };
                let n = n.min(cap.unwrap_or(u64::MAX));
                // fio verifies after each loop: a pass of io_size / loops, then its read back.
                let loops = spec.extra.loops.max(1) as u64;
                if spec.verify && !spec.extra.skip_verify && spec.rw.writes() && loops > 1 {
                    if spec.extra.experimental_verify {
                        // A pass less (passes::experimental_verify_bytes), the first read back.
                        engine.set_verify_once(Some(io_size / (loops - 1)));
                    } else {
                        engine.set_verify_pass(Some(io_size / loops));
                    }
                }
                match until {
                    Some(t) => Stop::Either(t, n),
                    None => Stop::Ios(n),
                }
            }
        };
        Ok((stop, until))
    }

    /// The window's end, after its run `r`: the latency target's depth and steady state told,
    /// fio's end_fsync, the figures, the logs finished, and whether the thread ran as asked.
    fn close(
        &self,
        mut engine: Engine,
        files: Vec<File>,
        r: Result<Ended>,
        mut c: Closing,
    ) -> Result<Measured> {
        let (spec, i, run, failed) = (self.spec, self.i, self.run, self.failed);
        if let Some(l) = &self.lat {
            if let Some(search) = &run.latency {
                search.set_depth(i, l.depth());
            }
        }
        if let Some(s) = &run.steady {
            s.finish(i);
        }
        // fio's end_fsync: inside the runtime, after the last write completed.
        let mut r = r;
        if spec.extra.sync.end_fsync && !files.is_empty() && !crate::signals::interrupted() {
            if let Ok(ended) = r {
                r = engine.sync_now(false).map(|_| ended).map_err(Error::from);
            }
        }
        if r.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        let t1 = self.clock.now_ns();
        // The last whole interval, if it ended while the queue drained.
        let mut sampler = c.sampler;
        {
            let (read, write) = engine.dir_stats();
            sampler.tick(t1, read, write);
        }
        let cancelled = engine.cancelled() - c.cancelled0;
        let stats = Stats {
            cancelled,
            ..measure(&engine, sampler, &c.m0, &*self.clock, c.faults.as_ref())
        };
        // With no I/O at all, the job's error says it (one line).
        if cancelled > 0 && stats.total_ios() > 0 {
            eprintln!(
                "pollwise: job {}: {cancelled} requests still in flight {} ms after --runtime were cancelled; they are in no result",
                spec.name,
                pollwise_bench::engine::DRAIN_GRACE.as_millis()
            );
        }
        // Verify reads and later phases are not the measured period's: out of the logs.
        engine.replace_hooks(None, None);
        let iologged = match &c.iolog {
            Some(w) => w
                .lock()
                .map_err(|_| Error::Io("a job thread's I/O log was poisoned".into()))
                .and_then(|mut w| w.finish(t1)),
            None => Ok(()),
        };
        let logged = match &c.log {
            Some(l) => l
                .lock()
                .map_err(|_| Error::Io("a job thread's log was poisoned".into()))
                .and_then(|mut l| l.finish(t1)),
            None => Ok(()),
        }
        .and(c.alog.as_mut().map_or(Ok(()), |a| a.finish(t1, &engine)));
        *c.blocks_seen = engine.bad_blocks().clone();
        let errors = engine.errors();
        let slow = c.slow_line.lock().ok().and_then(|mut l| l.take());
        let r = match slow {
            // fio fails the job with EIO ("check_min_rate").
            Some(line) => {
                failed.store(true, Ordering::SeqCst);
                Err(Error::Io(format!(
                    "job {}: {line} over the last --ratecycle: the job is failed, as fio fails it",
                    spec.name
                )))
            }
            None => r,
        };
        let ran = r.and_then(|ended| {
            let seen = Seen {
                cancelled,
                failed: errors.failed,
                first_error: errors.first_error,
                lat_end: self.lat.as_ref().map(|l| (l.done(), l.fatal())),
            };
            ran_as_asked(spec, run, i, ended, &stats, c.until, t1, seen, failed)
        });
        ran.and(logged).and(iologged).map(|_| Measured {
            engine,
            files,
            stats,
        })
    }
}
