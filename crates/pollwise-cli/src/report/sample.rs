//! Per-interval samples of a job thread, for fio's `bw_*` and `iops_*` figures.
//!
//! The engine runs a job to its end in one call and has no hook for a periodic tick, so the job
//! thread runs it in slices of one interval (fio's `avg_msec`, 500 ms) and ticks the
//! [`Sampler`] between slices. Each slice ends by reaping what is in flight: at depth 1 that
//! changes nothing; at depth N the queue runs shallower for one round trip every interval.

use pollwise::clock::Clock;
use pollwise::engine::{Engine, Stop};
use pollwise::stats::Sampler;

/// fio's default `avg_msec` for bandwidth and IOPS samples.
pub const AVG_MSEC: u64 = 500;

/// Runs `engine` until `stop`, ticking `sampler` at every whole interval and calling
/// `on_tick` after each tick (interim reports take their snapshot there).
pub fn run_sampled(
    engine: &mut Engine,
    stop: Stop,
    clock: &dyn Clock,
    sampler: &mut Sampler,
    on_tick: &mut dyn FnMut(&Engine, &Sampler),
) -> pollwise::Result<()> {
    loop {
        let tick = sampler.next_tick_ns();
        let (slice, last) = match stop {
            Stop::At(t) if t <= tick => (stop, true),
            Stop::At(_) => (Stop::At(tick), false),
            Stop::Either(t, _) if t <= tick => (stop, true),
            Stop::Either(_, n) => (Stop::Either(tick, n), false),
            Stop::Ios(n) => (Stop::Either(tick, n), false),
        };
        engine.run(slice)?;
        let now = clock.now_ns();
        let (read, write, _, _) = engine.stats();
        sampler.tick(now, &read, &write);
        on_tick(engine, sampler);
        // Back before the interval's end: the I/O count, not the clock, stopped it.
        if last || now < tick {
            return Ok(());
        }
    }
}
