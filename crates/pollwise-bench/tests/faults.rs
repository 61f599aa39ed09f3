//! Fault injection through the engine: what the fault queue injects is what the engine sees,
//! short transfers are resubmitted and complete once, and fio's continue_on_error decides which
//! failures stop a job.

use std::sync::{Arc, Mutex};

use pollwise::clock::{Clock, FakeClock};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::request::Dir;
use pollwise::Error;
use pollwise_bench::engine::{ContinueOn, Done, Engine, EngineConfig, Rw, Stop};
use pollwise_bench::fault::{FaultQueue, FaultSpec, FaultTally};

const SPIKE_NS: u64 = 2_000_000;

/// An engine over a fault queue that goes on past `c`, and every request it reports done.
fn engine(
    spec: FaultSpec,
    rw: Rw,
    mode: Mode,
    depth: u32,
    seed: u64,
    c: ContinueOn,
) -> (Engine, FaultTally, Arc<Mutex<Vec<Done>>>) {
    let clock = FakeClock::new(0);
    let time = SimTime::virtual_on(&clock, 200);
    let sim = SimQueue::new(
        "uniform:5us,50us".parse::<LatencyModel>().unwrap(),
        seed,
        depth as usize,
        time.clone(),
    );
    let q = FaultQueue::new(sim, spec, seed, time, 512).unwrap();
    let tally = q.tally();
    let clock: Arc<dyn Clock> = Arc::new(clock);
    let cfg = EngineConfig {
        rw,
        iodepth: depth,
        batch_submit: 3,
        batch_complete_min: 2,
        seed,
        size: 64 << 20,
        target: "sim".into(),
        continue_on: c,
        ..EngineConfig::default()
    };
    let policy = PolicyConfig::new(mode).build(clock.clone());
    let done = Arc::new(Mutex::new(Vec::new()));
    let d = done.clone();
    let e = Engine::builder(Box::new(q), policy, clock, cfg)
        .on_done(Box::new(move |x: &Done| d.lock().unwrap().push(*x)))
        .build()
        .unwrap();
    (e, tally, done)
}

#[test]
fn what_is_injected_is_what_the_engine_sees_and_every_request_completes_once() {
    let spec = FaultSpec {
        eio: 0.02,
        short: 0.05,
        eagain: 0.05,
        spike: 0.01,
        spike_ns: SPIKE_NS,
        ..FaultSpec::default()
    };
    for (i, &mode) in Mode::ALL.iter().enumerate() {
        let (mut e, tally, done) =
            engine(spec, Rw::RandRw, mode, 16, 11 + i as u64, ContinueOn::Io);
        let n = 20_000;
        e.run(Stop::Ios(n)).unwrap();
        let injected = tally.snapshot();
        let errs = e.errors();
        assert_eq!(errs.seen.eio, injected.eio, "{mode:?}");
        assert_eq!(errs.seen.short, injected.short, "{mode:?}");
        assert_eq!(errs.seen.eagain, injected.eagain, "{mode:?}");
        assert_eq!(errs.seen.canceled, 0);
        assert!(
            injected.eio > 0 && injected.short > 0 && injected.eagain > 0 && injected.spike > 0
        );
        assert_eq!(
            errs.resubmitted, errs.seen.short,
            "every short transfer resubmitted"
        );
        assert_eq!(errs.continued, injected.eio, "every EIO continued");
        assert_eq!(errs.failed, injected.eio);
        assert_eq!(errs.first_error, Some(libc::EIO));
        let done = done.lock().unwrap();
        let mut ids: Vec<u64> = done.iter().map(|d| d.handle.user_data()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), done.len(), "{mode:?}: a request completed twice");
        assert_eq!(
            done.len() as u64 + errs.failed,
            n,
            "{mode:?}: every request completed once, in full or failed"
        );
        assert!(
            done.iter().all(|d| d.len == 4096),
            "short ones completed whole"
        );
        let pollwise_bench::engine::EngineStats {
            read,
            write,
            queue: qc,
            ..
        } = e.stats();
        assert_eq!(read.ios + write.ios, done.len() as u64);
        assert_eq!(qc.submitted, n + errs.resubmitted);
        assert_eq!(qc.completed, qc.submitted);
        assert_eq!(e.in_flight(), 0);
        let slowest = read.clat.max().max(write.clat.max());
        assert!(
            slowest >= SPIKE_NS,
            "{mode:?}: a 2 ms spike shows in clat (max {slowest} ns)"
        );
    }
}

fn os_errno(e: &Error) -> Option<i32> {
    match e {
        Error::Os { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

#[test]
fn the_first_error_stops_the_job_and_what_is_in_flight_still_completes() {
    let spec = FaultSpec {
        eio: 0.01,
        ..FaultSpec::default()
    };
    let (mut e, tally, _) = engine(spec, Rw::RandRead, Mode::Interrupt, 8, 5, ContinueOn::None);
    let err = e.run(Stop::Ios(100_000)).unwrap_err();
    assert_eq!(os_errno(&err), Some(libc::EIO), "{err}");
    assert!(e.submitted() < 100_000, "stopped early: {}", e.submitted());
    assert_eq!(e.in_flight(), 0, "drained");
    let errs = e.errors();
    assert_eq!(errs.seen.eio, tally.snapshot().eio);
    assert_eq!(errs.continued, 0);
    assert!(errs.failed >= 1);
}

#[test]
fn continue_on_error_follows_fio() {
    let eio = FaultSpec {
        eio: 0.05,
        ..FaultSpec::default()
    };
    // (what to continue on, pattern, runs to the end)
    for (c, rw, ends) in [
        (ContinueOn::None, Rw::RandRead, false),
        (ContinueOn::Read, Rw::RandRead, true),
        (ContinueOn::Read, Rw::RandWrite, false),
        (ContinueOn::Write, Rw::RandWrite, true),
        (ContinueOn::Write, Rw::RandRead, false),
        (ContinueOn::Io, Rw::RandRw, true),
        (ContinueOn::Verify, Rw::RandRead, false),
        (ContinueOn::All, Rw::RandRw, true),
    ] {
        let (mut e, _, _) = engine(eio, rw, Mode::Poll, 4, 2, c);
        let r = e.run(Stop::Ios(5_000));
        assert_eq!(r.is_ok(), ends, "{c:?} {rw:?}: {r:?}");
        assert_eq!(e.submitted() == 5_000, ends, "{c:?} {rw:?}");
    }
    // ECANCELED is not one of fio's non-fatal errors: it stops the job even with `all`.
    let canceled = FaultSpec {
        canceled: 0.05,
        ..FaultSpec::default()
    };
    let (mut e, tally, _) = engine(canceled, Rw::RandRead, Mode::Poll, 4, 2, ContinueOn::All);
    let err = e.run(Stop::Ios(5_000)).unwrap_err();
    assert_eq!(os_errno(&err), Some(libc::ECANCELED), "{err}");
    assert_eq!(e.errors().seen.canceled, tally.snapshot().canceled);
    for (name, c) in [("0", ContinueOn::None), ("1", ContinueOn::All)] {
        assert_eq!(ContinueOn::from_name(name), Some(c));
    }
    for name in ContinueOn::NAMES {
        assert!(ContinueOn::from_name(name).is_some(), "{name}");
    }
    assert_eq!(ContinueOn::from_name("sometimes"), None);
}

#[test]
fn a_short_transfer_is_resubmitted_until_whole_and_timed_from_its_first_part() {
    let spec = FaultSpec {
        short: 1.0,
        ..FaultSpec::default()
    };
    let (mut e, tally, done) = engine(spec, Rw::Read, Mode::Interrupt, 1, 3, ContinueOn::None);
    e.run(Stop::Ios(50)).unwrap();
    let done = done.lock().unwrap();
    assert_eq!(done.len(), 50);
    for (i, d) in done.iter().enumerate() {
        assert_eq!((d.dir, d.offset, d.len), (Dir::Read, i as u64 * 4096, 4096));
    }
    let errs = e.errors();
    // Every part is shortened while at least two 512-byte units are left: 4096 bytes take at
    // least 2 and at most 8 parts.
    assert_eq!(errs.seen.short, tally.snapshot().short);
    assert!(errs.resubmitted >= 50 && errs.resubmitted <= 7 * 50);
    let read = e.stats().read;
    assert_eq!(read.ios, 50);
    assert_eq!(read.bytes, 50 * 4096);
    assert_eq!(read.slat.len(), 50, "slat and clat once per request");
}
