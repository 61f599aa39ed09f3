//! `pollwise scenario slow-handler`: keep the handler's run time out of the polling clock
//! (QEMU's handler time kept out of the polling clock).
//!
//! QEMU's commit "aio-posix: split poll check from ready handler" observed that a virtio-blk
//! queue's handler (its `io_submit`) can take tens of microseconds, more than the 32 µs polling
//! window cap; counted as polling time, it made adaptive polling believe polling could not pay,
//! and the IOThread fell back to `ppoll` and eventfd reads. Measuring only the poll check gave
//! 168k -> 174k IOPS (+3.6%) with those system calls gone.
//!
//! Here each channel request's handler spins `--handler_us` of CPU before submitting its read.
//! Two variants: `excluded` (the reactor keeps `run()` time out of the block time its windows
//! are adjusted with) and `included` (every source dispatched in an iteration is judged by the
//! block time plus all the handlers' run time, as when QEMU ran them inside the timed poll
//! check). One channel (`--sources`), its client at QD1 (`--iodepth`): the channel's window is
//! what must catch the client's next request after each reply. With several requests in flight
//! the reactor is busy back to back, always finds work at once, and the two variants behave
//! alike. The disk's own completions are caught by the io_uring ring's window only when the
//! disk is faster than the window cap (`--poll_max_ns`, QEMU's 32768 by default). Each variant
//! runs `--rounds` times, interleaved, and the medians are reported.

pub use crate::options::defaults::slow_handler::{DEFAULT_HANDLER_US, DEFAULT_IODEPTH};
use crate::scenario::daemon::DaemonReport;
use crate::{Error, Result};

use super::idle_sources::{render, run_rounds, take_common, Variant, FOOTNOTE};
use crate::options::Opts;
use crate::report::Output;

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
    super::daemon::check_memory(&c.base, sources, sources, "--sources")?;
    super::daemon::open_files_for(sources as usize)?;
    let variants: Vec<Variant> = [("excluded", true), ("included", false)]
        .into_iter()
        .map(|(name, exclude)| {
            let mut cfg = c.base.clone();
            cfg.sources = sources as usize;
            cfg.active = sources as usize;
            cfg.warm_idle = false;
            cfg.handler_ns = handler_us * 1_000;
            cfg.reactor.exclude_run_time = exclude;
            Variant { name, cfg }
        })
        .collect();
    let rows = run_rounds("slow-handler", &variants, c.rounds)?;
    let intro = format!(
        "pollwise scenario slow-handler: {sources} client(s) at QD{} reading {} B at random ({}); each request's handler spins {handler_us} us of CPU before submitting; fd monitor {}; reactor wait {}; window cap {} ns; {} rounds of {:.1}s per variant\n\n",
        c.base.iodepth,
        c.base.block_size,
        if c.base.direct { "O_DIRECT" } else { "buffered" },
        c.base.reactor.fdmon.name(),
        c.base.reactor.wait.name(),
        c.base.reactor.poll_max_ns,
        c.rounds,
        c.base.runtime.as_secs_f64(),
    );
    let mut notes = String::new();
    let inc = rows[1].med(DaemonReport::iops);
    if inc > 0.0 {
        notes.push_str(&format!(
            "\nexcluded/included IOPS = {:.3}x\n",
            rows[0].med(DaemonReport::iops) / inc
        ));
    }
    notes.push_str("excluded: run() time kept out of the block time (QEMU since 2021); included: counted in.\n");
    for r in &rows {
        let cut: u64 = r.rounds.iter().map(|d| d.handlers_cut).sum();
        let reads: u64 = r.rounds.iter().map(|d| d.lat.ios).sum();
        if cut > 0 {
            notes.push_str(&format!(
                "{}: {cut} handlers cut short at the end of the measured period (beside {reads} reads measured): --handler_us x --iodepth is near or past --runtime, so some latencies are less than the handler time asked for\n",
                r.variant
            ));
        }
        let least = r.rounds.iter().map(|d| d.lat.ios).min().unwrap_or(0);
        if least < 100 {
            notes.push_str(&format!(
                "{}: a round measured only {least} reads (fewer than 100): its percentiles are rough\n",
                r.variant
            ));
        }
    }
    notes.push_str(FOOTNOTE);
    Ok(render(
        "slow-handler",
        intro,
        &rows,
        &notes,
        c.base.reactor.wait,
    ))
}
