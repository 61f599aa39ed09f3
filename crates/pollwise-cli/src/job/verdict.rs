//! Whether a job thread ran as asked, and the blocks that failed verification, named.
//!
//! Rule: a thread's figures are reported only if it ran its whole runtime (or size) and did some
//! I/O; else the job fails with one line saying why, since a short run's figures would look
//! right and be wrong. A run a signal or another thread's failure stopped is not judged here.

use std::sync::atomic::{AtomicBool, Ordering};

use pollwise_bench::engine::Ended;
use pollwise_bench::stats::Stats;
use pollwise_bench::verify;

use super::{JobSpec, Run};
use crate::{Error, Result};

/// What a job thread saw of requests that did not complete, for [`ran_as_asked`].
pub(super) struct Seen {
    /// Cancelled at the deadline.
    pub(super) cancelled: u64,
    /// Failed (continued or not).
    pub(super) failed: u64,
    /// The errno of the first failure.
    pub(super) first_error: Option<i32>,
    /// Its latency target ended the job: settled (a normal end), or a request slower than the
    /// target at depth 1 with `latency_percentile=100` (its latency, ns).
    pub(super) lat_end: Option<(bool, Option<u64>)>,
}

/// Whether thread `i` of `spec` ran as asked: to the end of its `--runtime` (time-based) or of
/// its size, and did some I/O. A run a signal stopped, or that another thread's failure
/// stopped (that failure is the job's error), is not judged here. Else one line saying why.
#[allow(clippy::too_many_arguments)]
pub(super) fn ran_as_asked(
    spec: &JobSpec,
    run: &Run,
    i: usize,
    ended: Ended,
    stats: &Stats,
    until: Option<u64>,
    t1: u64,
    seen: Seen,
    failed: &AtomicBool,
) -> Result<()> {
    if crate::signals::interrupted() || failed.load(Ordering::SeqCst) {
        return Ok(());
    }
    if let Some((_, Some(lat))) = seen.lat_end {
        let target = spec.extra.latency.map_or(0, |l| l.target_ns);
        return Err(Error::Io(format!(
            "job {}: a request took {lat} ns, more than latency_target={target} ns, at depth 1 (with latency_percentile=100 fio ends the job there too: lower latency_percentile or raise latency_target)",
            spec.name
        )));
    }
    // Stopped by another job's end (fio's exitall), at steady state (fio's ss) or by its
    // latency target's settled search: what it did is what it was asked to do.
    if ended == Ended::Stopped && seen.lat_end.is_some_and(|(done, _)| done) {
        return Ok(());
    }
    if ended == Ended::Stopped
        && (run.halt.as_ref().is_some_and(|h| h.load(Ordering::SeqCst))
            || run.steady.as_ref().is_some_and(|s| s.stop(i)))
    {
        return Ok(());
    }
    let who = if spec.numjobs > 1 {
        format!("job {} (thread {} of {})", spec.name, i + 1, spec.numjobs)
    } else {
        format!("job {}", spec.name)
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let ran = secs(stats.elapsed_ns);
    let short = match (ended, until) {
        (Ended::Stopped, _) => Some("it was told to stop with no signal and no failure"),
        (_, Some(u)) if spec.time_based && t1 < u => Some("it returned before its stop time"),
        _ => None,
    };
    if let Some(why) = short {
        return Err(Error::Io(format!(
            "{who} ran {ran:.2} s of the {:.2} s asked ({why}): its figures would be wrong, so none are reported (a pollwise bug; please report it)",
            spec.runtime.as_secs_f64()
        )));
    }
    if stats.total_ios() == 0 {
        let why = if seen.failed > 0 {
            let first = seen
                .first_error
                .map(|n| crate::errno::plain(&std::io::Error::from_raw_os_error(n)))
                .unwrap_or_default();
            format!(
                "all {} of its requests failed (the first with: {first})",
                seen.failed
            )
        } else if seen.cancelled > 0 {
            format!(
                "its {} requests were all still in flight {} ms after its end and were cancelled: the device answered none in time; give a longer --runtime",
                seen.cancelled,
                pollwise_bench::engine::DRAIN_GRACE.as_millis()
            )
        } else {
            "no request completed: give a longer --runtime, or a higher --rate_iops".into()
        };
        return Err(Error::Io(format!(
            "{who} did no I/O in its {ran:.2} s: {why}"
        )));
    }
    Ok(())
}

/// Names on standard error every block of `bad` (as fio prints each verify failure), and how
/// many more failed beyond those named; the one the job's error `err` already names is left out.
pub(super) fn name_bad_blocks(spec: &JobSpec, bad: &verify::BadBlocks, err: Option<&Error>) {
    let said = err.map(|e| e.to_string()).unwrap_or_default();
    let mut named = 0u64;
    for m in &bad.named {
        let line = m.to_string();
        named += 1;
        if said.contains(&line) {
            continue;
        }
        eprintln!("pollwise: job {}: {line}", spec.name);
    }
    if bad.total > named {
        eprintln!(
            "pollwise: job {}: {} more blocks failed verification (the first {named} are named above)",
            spec.name,
            bad.total - named
        );
    }
}
