//! `pollwise scenario slow-handler`: keep the handler's run time out of the polling clock
//! (seed 003).
//!
//! QEMU's commit "aio-posix: split poll check from ready handler" observed that a virtio-blk
//! queue's handler (its `io_submit`) can take tens of microseconds, more than the 32 µs polling
//! window cap; counted as polling time, it made adaptive polling believe polling could not pay,
//! and the IOThread fell back to `ppoll` and eventfd reads. Measuring only the poll check gave
//! 168k -> 174k IOPS (+3.6%) with those system calls gone.
//!
//! Here each channel request's handler spins `--handler_us` of CPU before submitting its read.
//! Two variants: `excluded` (the reactor keeps `run()` time out of the block time its windows
//! are adjusted with) and `included` (it counts it in, as QEMU did before). Each variant has one
//! channel with a client keeping `--iodepth` reads in flight (default 4: with QD1 there is a
//! single request to handle at a time, and the disk's ring, a poll source with its own window,
//! keeps the loop polling either way; with several in flight the handler runs back to back, as
//! in the seed's batches, and the reactor is busy the whole time).

use pollwise::reactor::daemon;
use pollwise::{Error, Result};

use super::idle_sources::{render, take_common, Row};
use crate::opts::Opts;
use crate::report::Output;

/// CPU time per request when `--handler_us` is not given.
pub const DEFAULT_HANDLER_US: u64 = 40;
/// Reads in flight when `--iodepth` is not given.
pub const DEFAULT_IODEPTH: u32 = 4;

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    let handler_us = o.take_u64("handler_us")?.unwrap_or(DEFAULT_HANDLER_US);
    if handler_us > 1_000_000 {
        return Err(Error::Usage(format!(
            "--handler_us={handler_us} is over a second per request; give e.g. --handler_us=40"
        )));
    }
    let sources = o.take_u64("sources")?.unwrap_or(1);
    if sources == 0 || sources > 64 {
        return Err(Error::Usage(format!(
            "--sources={sources} must be between 1 and 64 (each has an active client)"
        )));
    }
    let c = take_common(o, "slow-handler", DEFAULT_IODEPTH)?;
    let mut rows = Vec::new();
    for (variant, exclude) in [("excluded", true), ("included", false)] {
        let mut cfg = c.base.clone();
        cfg.sources = sources as usize;
        cfg.active = sources as usize;
        cfg.warm_idle = false;
        cfg.handler_ns = handler_us * 1_000;
        cfg.reactor.exclude_run_time = exclude;
        let report = daemon::run(&cfg)?;
        rows.push(Row {
            variant,
            sources: cfg.sources,
            report,
        });
    }
    let intro = format!(
        "pollwise scenario slow-handler: {sources} client(s) at QD{} reading {} B at random (O_DIRECT); each request's handler spins {handler_us} us of CPU before submitting; fd monitor {}; window cap {} ns; {:.1}s measured per variant\n\n",
        c.base.iodepth,
        c.base.block_size,
        c.base.reactor.fdmon.name(),
        c.base.reactor.poll_max_ns,
        c.base.runtime.as_secs_f64(),
    );
    let mut notes = String::new();
    let inc = rows[1].report.iops();
    if inc > 0.0 {
        notes.push_str(&format!(
            "\nexcluded/included IOPS = {:.3}x\n",
            rows[0].report.iops() / inc
        ));
    }
    notes.push_str("excluded: run() time kept out of the block time (QEMU since 2021); included: counted in.\n");
    Ok(render("slow-handler", intro, &rows, &notes))
}
