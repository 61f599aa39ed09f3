use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

#[test]
fn a_write_over_part_of_a_block_forgets_it_and_ranges_merge() {
    let mut w = BTreeMap::new();
    note_written(&mut w, 0, 4096);
    note_written(&mut w, 4096, 65536);
    note_written(&mut w, 1 << 20, 512);
    // Over the end of the first and the start of the second: both forgotten.
    note_written(&mut w, 2048, 4096);
    let got: Vec<(u64, u32)> = w.iter().map(|(&o, &l)| (o, l)).collect();
    assert_eq!(got, [(2048, 4096), (1 << 20, 512)]);
    assert_eq!(
        merge_ranges(vec![(0, 10), (5, 20), (20, 30), (40, 50)]),
        [(0, 30), (40, 50)]
    );
}
use super::recorded::{Call, Recorded};
use pollwise::clock::FakeClock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};

fn cfg(iodepth: u32) -> EngineConfig {
    EngineConfig {
        iodepth,
        target: "sim".into(),
        ..EngineConfig::default()
    }
}

/// An engine on a simulated device in virtual time, with room for `slots` requests.
fn virtual_engine(iodepth: u32, slots: usize) -> (Engine, FakeClock) {
    virtual_built(cfg(iodepth), slots, Hooks::default()).unwrap()
}

/// An engine doing `cfg` with `hooks` on a simulated device in virtual time, with room for
/// `slots` requests.
fn virtual_built(cfg: EngineConfig, slots: usize, hooks: Hooks) -> Result<(Engine, FakeClock)> {
    let fake = FakeClock::new(0);
    let q = SimQueue::new(
        "fixed:10us".parse::<LatencyModel>().unwrap(),
        1,
        slots,
        SimTime::virtual_on(&fake, 100),
    );
    let clock: Arc<dyn Clock> = Arc::new(fake.clone());
    let policy = PolicyConfig::new(Mode::Poll).build(clock.clone());
    let slab = Slab::new(slots, 4096, 4096).unwrap();
    let e = Engine::builder(Box::new(q), policy, clock, cfg)
        .slab(slab)
        .hooks(hooks)
        .build()?;
    Ok((e, fake))
}

#[test]
fn files_deal_stripes_in_turn() {
    let files = |files| {
        let c = EngineConfig {
            pattern: PatternConfig {
                files,
                ..PatternConfig::default()
            },
            ..cfg(1)
        };
        virtual_built(c, 1, Hooks::default()).map(|(e, _)| e)
    };
    let e = files(None).unwrap();
    let size = e.cfg.size;
    assert_eq!(
        e.place(12_345),
        (0, 12_345),
        "one file: the offset as it is"
    );
    // 1 GiB is no whole number of 3 x 4 KiB rows.
    assert!(files(Some((3, 4096))).is_err());
    assert!(files(Some((4, 0))).is_err());
    // roundrobin: block k on file k % 4, at block k / 4 of it.
    let e = files(Some((4, 4096))).unwrap();
    assert_eq!(e.place(0), (0, 0));
    assert_eq!(e.place(4096), (1, 0));
    assert_eq!(e.place(3 * 4096 + 7), (3, 7));
    assert_eq!(e.place(4 * 4096 + 100), (0, 4096 + 100));
    assert_eq!(e.place(size - 1), (3, size / 4 - 1));
    // sequential: each file's share whole, in turn.
    let e = files(Some((4, size / 4))).unwrap();
    assert_eq!(e.place(size / 4 - 1), (0, size / 4 - 1));
    assert_eq!(e.place(size / 4 + 5), (1, 5));
    assert_eq!(e.place(size - 1), (3, size / 4 - 1));
    let e = files(Some((1, 4096))).unwrap();
    assert_eq!(e.place(4096), (0, 4096));
}

#[test]
fn each_concepts_config_is_checked_when_the_engine_is_built() {
    // The field a config error names, if building the engine fails.
    let refused = |change: &dyn Fn(&mut EngineConfig)| {
        let mut c = cfg(1);
        change(&mut c);
        match virtual_built(c, 1, Hooks::default()) {
            Ok(_) => None,
            Err(Error::Config { field, .. }) => Some(field),
            Err(e) => panic!("not a config error: {e}"),
        }
    };
    assert_eq!(refused(&|_| {}), None);
    // The pattern: a region past the size, a block size the buffers cannot hold, zones of
    // nothing.
    let region = |c: &mut EngineConfig| c.pattern.region = Some((c.size - 4096, 8192));
    assert_eq!(refused(&region), Some("offset"));
    assert_eq!(refused(&|c| c.pattern.write_bs = Some(8192)), Some("bs"));
    assert_eq!(
        refused(&|c| c.pattern.zones = Some((0, 1, 0))),
        Some("zonesize")
    );
    // Pacing: a rate of nothing, or a rate given twice.
    let no_rate = Some(RateLimit {
        iops: 0.0,
        poisson: false,
    });
    assert_eq!(refused(&|c| c.pacing.rate = no_rate), Some("rate_iops"));
    let twice = |c: &mut EngineConfig| {
        c.pacing.rate = Some(RateLimit {
            iops: 10.0,
            poisson: false,
        });
        c.pacing.every = Some(Duration::from_millis(1));
    };
    assert_eq!(refused(&twice), Some("rate_iops"));
    // Verification: an interval too small to hold a header.
    let interval = |c: &mut EngineConfig| {
        c.verify = true;
        c.checks.mode.interval = Some(8);
    };
    assert_eq!(refused(&interval), Some("verify_interval"));
}

/// `ios` requests at depth `iodepth` under `interrupt`, submitted `submit`'s way, on a
/// device of 10 us whose every submitting call costs 3 us: the reads' stats and the calls.
fn recorded_run(submit: SubmitMode, iodepth: u32, ios: u64) -> (DirStats, Vec<Call>) {
    let fake = FakeClock::new(0);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let q = Recorded {
        inner: SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            iodepth as usize,
            SimTime::Virtual {
                clock: fake.clone(),
                poll_cost_ns: 0,
            },
        ),
        clock: fake.clone(),
        submit_ns: 3_000,
        calls: calls.clone(),
        unsubmitted: 0,
    };
    let clock: Arc<dyn Clock> = Arc::new(fake);
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let cfg = EngineConfig {
        submit,
        batch_submit: 2,
        ..cfg(iodepth)
    };
    let mut e = Engine::new(Box::new(q), policy, clock, cfg).unwrap();
    e.run(Stop::Ios(ios)).unwrap();
    let calls = calls.lock().unwrap().clone();
    (e.stats().read, calls)
}

/// A request as the issue hook saw it: (direction, offset, length, clock time).
type Issued = (Dir, u64, u32, u64);

/// Hooks that keep every request the engine issues.
fn issued() -> (Hooks, Arc<Mutex<Vec<Issued>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let on_issue: OnIssue = Box::new(move |d, o, l, t| s.lock().unwrap().push((d, o, l, t)));
    let hooks = Hooks {
        on_issue: Some(on_issue),
        ..Hooks::default()
    };
    (hooks, seen)
}

#[test]
fn a_replay_issues_the_logs_requests_at_their_times_then_ends() {
    // Real time: the replay sleeps to its requests' times (a lower bound is checked).
    let replaying = |replay: Arc<[Replayed]>, hooks: Hooks| {
        let q = SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            4,
            SimTime::Real,
        );
        let clock = pollwise::clock::monotonic();
        let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
        let mut cfg = cfg(4);
        cfg.pattern.replay = Some(replay);
        Engine::builder(Box::new(q), policy, clock, cfg)
            .hooks(hooks)
            .build()
    };
    let item = |at_ms: Option<u64>, dir, offset| Replayed {
        at_ns: at_ms.map(|m| m * 1_000_000),
        dir,
        offset,
        len: 4096,
    };
    let items: Arc<[Replayed]> = vec![
        item(Some(0), Dir::Write, 8192),
        item(Some(5), Dir::Trim, 0),
        item(Some(5), Dir::Read, 4096),
        item(Some(20), Dir::Read, 0),
    ]
    .into();
    let (hooks, seen) = issued();
    let mut e = replaying(items.clone(), hooks).unwrap();
    assert_eq!(e.run(Stop::Ios(u64::MAX)).unwrap(), Ended::Ios);
    let seen = seen.lock().unwrap().clone();
    let what: Vec<_> = seen.iter().map(|(d, o, l, _)| (*d, *o, *l)).collect();
    let want: Vec<_> = items.iter().map(|i| (i.dir, i.offset, i.len)).collect();
    assert_eq!(what, want, "the log's requests, in its order, once each");
    let t0 = seen[0].3;
    for (i, (.., t)) in seen.iter().enumerate() {
        let due = items[i].at_ns.unwrap();
        assert!(
            t - t0 >= due,
            "request {i} went at {} ns, due at {due}",
            t - t0
        );
    }
    let EngineStats {
        read: r, write: w, ..
    } = e.stats();
    assert_eq!((r.ios, w.ios, e.trim_stats().ios), (2, 1, 1));
    // A read or write longer than the buffers is refused; a trim's range needs none.
    let big = |dir| -> Arc<[Replayed]> {
        vec![Replayed {
            at_ns: None,
            dir,
            offset: 0,
            len: 1 << 20,
        }]
        .into()
    };
    assert!(replaying(big(Dir::Read), Hooks::default()).is_err());
    replaying(big(Dir::Trim), Hooks::default()).unwrap();
}

#[test]
fn trimwrite_writes_each_range_right_after_trimming_it() {
    for rw in [Rw::TrimWrite, Rw::RandTrimWrite] {
        let fake = FakeClock::new(0);
        let q = SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            4,
            SimTime::virtual_on(&fake, 100),
        );
        let clock: Arc<dyn Clock> = Arc::new(fake.clone());
        let policy = PolicyConfig::new(Mode::Poll).build(clock.clone());
        let mut cfg = EngineConfig {
            rw,
            size: 64 * 4096,
            ..cfg(2)
        };
        cfg.pattern.random_map = true;
        let (hooks, seen) = issued();
        let mut e = Engine::builder(Box::new(q), policy, clock, cfg)
            .hooks(hooks)
            .build()
            .unwrap();
        // 64 blocks: a trim and a write each.
        e.run(Stop::Ios(128)).unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 128);
        let mut blocks = std::collections::BTreeSet::new();
        for pair in seen.chunks(2) {
            assert_eq!((pair[0].0, pair[1].0), (Dir::Trim, Dir::Write), "{rw:?}");
            assert_eq!((pair[0].1, pair[0].2), (pair[1].1, pair[1].2), "{rw:?}");
            blocks.insert(pair[0].1);
        }
        assert_eq!(blocks.len(), 64, "{rw:?}: every block once");
        let EngineStats {
            read: r, write: w, ..
        } = e.stats();
        assert_eq!((r.ios, w.ios, e.trim_stats().ios), (0, 64, 64), "{rw:?}");
    }
}

#[test]
fn separate_submission_is_a_call_of_its_own_and_slat_holds_its_cost() {
    let (sep, sep_calls) = recorded_run(SubmitMode::Separate, 1, 40);
    let (with, with_calls) = recorded_run(SubmitMode::WithWait, 1, 40);
    // fio's io_uring engine: one call submits the request, the next waits for it.
    assert_eq!(sep_calls, [Call::Submit(1), Call::Wait(0)].repeat(40));
    // Today's default: the wait submits it (io_uring_submit_and_wait).
    assert_eq!(with_calls, [Call::Wait(1)].repeat(40));
    let p50 = |h: &hdrhistogram::Histogram<u64>| h.value_at_quantile(0.5);
    assert_eq!(sep.ios, 40);
    assert_eq!(with.ios, 40);
    // Separate: slat is the submit call, clat the device; with the wait: the submit call
    // falls in clat. lat is the same.
    assert!(
        sep.slat.equivalent(p50(&sep.slat), 3_000),
        "{}",
        p50(&sep.slat)
    );
    assert!(sep.clat.equivalent(p50(&sep.clat), 10_000));
    assert!(p50(&with.slat) < 3_000, "{}", p50(&with.slat));
    assert!(with.clat.equivalent(p50(&with.clat), 13_000));
    assert_eq!(p50(&sep.lat), p50(&with.lat));
}

#[test]
fn separate_submission_leaves_nothing_for_a_wait_to_submit_at_any_depth() {
    let (sep, calls) = recorded_run(SubmitMode::Separate, 4, 101);
    assert_eq!(sep.ios, 101);
    let submitted: usize = calls
        .iter()
        .map(|c| match c {
            Call::Submit(n) => *n,
            Call::Wait(n) => {
                assert_eq!(*n, 0, "a wait submitted: {calls:?}");
                0
            }
        })
        .sum();
    assert_eq!(submitted, 101, "every request submitted by a submit call");
    let (_, with_calls) = recorded_run(SubmitMode::WithWait, 4, 101);
    assert!(
        with_calls
            .iter()
            .any(|c| matches!(c, Call::Wait(n) if *n > 0)),
        "with the wait, waits submit: {with_calls:?}"
    );
}

#[test]
fn run_until_keeps_requests_in_flight_and_run_completes_them() {
    let (mut e, _clock) = virtual_engine(4, 4);
    e.run_until(Stop::Ios(10)).unwrap();
    let live = e.in_flight();
    assert!(live > 0, "the queue does not run dry between phases");
    let EngineStats {
        read, queue: qc, ..
    } = e.stats();
    assert_eq!(qc.submitted, 10);
    assert_eq!(
        read.ios + live as u64,
        10,
        "nothing reaped after the stop is lost"
    );
    e.reset_stats();
    e.run(Stop::Ios(20)).unwrap();
    assert_eq!(e.in_flight(), 0);
    let EngineStats {
        read, queue: qc, ..
    } = e.stats();
    assert_eq!(
        read.ios,
        10 + live as u64,
        "every request submitted completes exactly once"
    );
    assert_eq!((qc.submitted, qc.completed), (20, 20));
}

#[test]
fn the_done_hook_sees_every_request_once_with_its_times() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let hooks = Hooks {
        on_done: Some(Box::new(move |d: &Done| s.lock().unwrap().push(*d))),
        ..Hooks::default()
    };
    let (mut e, _clock) = virtual_built(cfg(3), 3, hooks).unwrap();
    e.run(Stop::Ios(50)).unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 50);
    let mut uds: Vec<u64> = seen.iter().map(|d| d.handle.user_data()).collect();
    uds.sort_unstable();
    uds.dedup();
    assert_eq!(uds.len(), 50, "no request reported twice");
    for d in seen.iter() {
        assert_eq!((d.dir, d.len), (Dir::Read, 4096));
        assert!(
            d.done_ns >= d.submit_ns + 10_000,
            "{d:?}: 10 us device latency"
        );
    }
    assert_eq!(e.stats().read.ios, 50);
}

#[test]
fn a_sync_every_n_writes_is_a_request_of_its_own_completed_once() {
    for depth in [1, 3, 8] {
        let seen = Arc::new(Mutex::new(0u64));
        let s = seen.clone();
        let hooks = Hooks {
            on_done: Some(Box::new(move |_d: &Done| *s.lock().unwrap() += 1)),
            ..Hooks::default()
        };
        let cfg = EngineConfig {
            rw: Rw::Write,
            sync: SyncEvery {
                fsync: 4,
                fdatasync: 0,
            },
            ..cfg(depth)
        };
        let (mut e, _clock) = virtual_built(cfg, depth as usize, hooks).unwrap();
        e.run(Stop::Ios(256)).unwrap();
        // fio's rule: a sync when the writes issued are a multiple of 4 and the last request
        // was a write; none after the last write.
        let sync = e.sync_stats();
        assert_eq!((sync.syncs(), sync.fsyncs), (63, 63), "depth {depth}");
        assert!(
            sync.lat.as_ref().unwrap().moments[0].min >= 10_000,
            "a sync waits for the device"
        );
        assert_eq!(e.stats().write.ios, 256, "syncs are not writes");
        assert_eq!(*seen.lock().unwrap(), 256, "the done hook sees I/O only");
        assert_eq!(e.in_flight(), 0);
        assert!(
            e.syncs.slot.iter().all(Option::is_none),
            "every sync completed"
        );
    }
    // fdatasync: counted in the latencies, not as fsyncs (fio's total_ios).
    let cfg = EngineConfig {
        rw: Rw::Write,
        sync: SyncEvery {
            fsync: 0,
            fdatasync: 3,
        },
        ..cfg(2)
    };
    let (mut e, _clock) = virtual_built(cfg, 2, Hooks::default()).unwrap();
    e.run(Stop::Ios(256)).unwrap();
    assert_eq!((e.sync_stats().syncs(), e.sync_stats().fsyncs), (85, 0));
    // end_fsync's sync is done and not counted.
    e.sync_now(false).unwrap();
    assert_eq!(e.sync_stats().syncs(), 85);
    assert_eq!(e.in_flight(), 0);
}

#[test]
fn push_extra_adds_a_burst_the_loop_does_not_replace() {
    let (mut e, _clock) = virtual_engine(2, 10);
    e.run_until(Stop::Ios(2)).unwrap();
    assert_eq!(e.in_flight(), 2);
    let burst = e.push_extra(8).unwrap();
    assert_eq!(burst.len(), 8);
    assert_eq!(e.in_flight(), 10);
    // No more room: the slab holds 10.
    assert!(e.push_extra(1).is_err());
    e.run(Stop::Ios(20)).unwrap();
    assert!(burst.iter().all(|&h| !e.is_in_flight(h)));
    let EngineStats {
        read, queue: qc, ..
    } = e.stats();
    assert_eq!((read.ios, qc.submitted, qc.completed), (20, 20, 20));
}

#[test]
fn pacing_spaces_submissions_by_the_interval() {
    // Runs the engine paced from `first` every `interval` until `stop`; the start times.
    fn paced(
        first_in: Duration,
        interval: Duration,
        stop: impl Fn(u64) -> Stop,
    ) -> (u64, Vec<u64>) {
        let q = SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            1,
            SimTime::Real,
        );
        let clock = pollwise::clock::monotonic();
        let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
        let starts = Arc::new(Mutex::new(Vec::new()));
        let s = starts.clone();
        let mut cfg = cfg(1);
        cfg.pacing.every = Some(interval);
        let mut e = Engine::builder(Box::new(q), policy, clock.clone(), cfg)
            .on_done(Box::new(move |d: &Done| {
                s.lock().unwrap().push(d.submit_ns)
            }))
            .build()
            .unwrap();
        let first = clock.now_ns() + first_in.as_nanos() as u64;
        e.pace_from(first);
        e.run(stop(first)).unwrap();
        let starts = starts.lock().unwrap().clone();
        (first, starts)
    }
    let interval = Duration::from_millis(3);
    let step = interval.as_nanos() as u64;
    // By count: however late this thread is scheduled, request k waits for slot k.
    let (first, starts) = paced(Duration::from_millis(2), interval, |_| Stop::Ios(5));
    assert_eq!(starts.len(), 5);
    for (k, &t) in starts.iter().enumerate() {
        assert!(t >= first + k as u64 * step, "slot {k}");
    }
    // By time: slots first + k * interval for k = 0..9; a slot at the stop time is not
    // taken. (On a loaded machine the thread may see fewer slots, never more.)
    let (first, starts) = paced(Duration::from_millis(2), interval, |f| {
        Stop::At(f + 10 * step)
    });
    let until = first + 10 * step;
    assert!(starts.len() <= 10, "{}", starts.len());
    for (k, &t) in starts.iter().enumerate() {
        assert!(t >= first + k as u64 * step, "slot {k}");
        assert!(t < until);
    }
}

/// An engine on a simulated device of `latency` in real time, paced every `interval`, with
/// the hooks `hooks` makes on its clock.
fn paced_real(
    latency: &str,
    interval: Duration,
    hooks: impl FnOnce(&Arc<dyn Clock>) -> Hooks,
) -> (Engine, Arc<dyn Clock>) {
    let q = SimQueue::new(
        latency.parse::<LatencyModel>().unwrap(),
        1,
        1,
        SimTime::Real,
    );
    let clock = pollwise::clock::monotonic();
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let mut cfg = cfg(1);
    cfg.pacing.every = Some(interval);
    let hooks = hooks(&clock);
    let e = Engine::builder(Box::new(q), policy, clock.clone(), cfg)
        .hooks(hooks)
        .build()
        .unwrap();
    (e, clock)
}

#[test]
fn a_paced_run_lasts_until_its_stop_time() {
    // Slots at 0, 40, 80 and 120 ms; the next, at 160 ms, is past the stop time: the run
    // takes no request then but lasts until 150 ms (it used to return at 120 ms).
    let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(40), |_| {
        Hooks::default()
    });
    let until = clock.now_ns() + 150_000_000;
    assert_eq!(e.run(Stop::At(until)).unwrap(), Ended::Time);
    assert!(clock.now_ns() >= until, "returned before its stop time");
    assert!(e.stats().read.ios <= 4, "{}", e.stats().read.ios);
    // By count: it returns when the count is submitted (and drained), not at a slot.
    let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(20), |_| {
        Hooks::default()
    });
    let stop = Stop::Either(clock.now_ns() + 10_000_000_000, 3);
    assert_eq!(e.run(stop).unwrap(), Ended::Ios);
    assert_eq!(e.stats().read.ios, 3);
    // By the stop check, whatever the pacing.
    let (mut e, _clock) = paced_real("fixed:10us", Duration::from_secs(3600), |clock| {
        let (c, t0) = (clock.clone(), clock.now_ns());
        Hooks {
            stop_check: Some(Arc::new(move || c.now_ns() >= t0 + 30_000_000)),
            ..Hooks::default()
        }
    });
    assert_eq!(e.run(Stop::Ios(1_000)).unwrap(), Ended::Stopped);
    assert_eq!(
        e.stats().read.ios,
        1,
        "the first slot is at once, the next in an hour"
    );
}

#[test]
fn ticks_come_from_inside_the_loop_without_draining_it() {
    // In virtual time a tick costs nothing: a run that ticks does what one that does not
    // tick does, request for request. Slices that drained the queue at every tick did less
    // (the queue ran dry for a round trip each time).
    let every = 100_000u64;
    let run = |tick: bool| {
        let (mut e, fake) = virtual_engine(4, 4);
        let t0 = fake.now_ns();
        let mut seen: Vec<(u64, u64)> = Vec::new();
        let mut f = |e: &Engine, now: u64| seen.push((now, e.stats().read.ios));
        let stop = Stop::At(t0 + 2_000_000);
        let ended = if tick {
            let tick = Tick {
                first_ns: t0 + every,
                every: Duration::from_nanos(every),
                f: &mut f,
            };
            e.run_ticking(stop, tick).unwrap()
        } else {
            e.run(stop).unwrap()
        };
        assert_eq!(ended, Ended::Time);
        let EngineStats {
            read, queue: qc, ..
        } = e.stats();
        assert_eq!(read.ios, qc.submitted, "every request completes once");
        (read.ios, t0, seen)
    };
    let (ticked, t0, seen) = run(true);
    let (plain, _, none) = run(false);
    assert!(none.is_empty());
    assert_eq!(ticked, plain, "ticks changed the run");
    // 2 ms of virtual time at one tick per 100 us or more: up to 20 ticks, never closer.
    assert!((10..=20).contains(&seen.len()), "{}", seen.len());
    assert!(seen[0].0 >= t0 + every);
    for w in seen.windows(2) {
        assert!(w[1].0 >= w[0].0 + every, "ticks too close: {w:?}");
        assert!(w[1].1 >= w[0].1, "completions go back: {w:?}");
    }
}

#[test]
fn a_depth_limit_caps_what_is_in_flight_and_may_change_while_running() {
    // Most in flight at once, from (submitted, done) times: a slot freed at a time is free
    // for a request pushed at that time.
    fn most_in_flight(spans: &[(u64, u64)]) -> usize {
        let mut ev: Vec<(u64, i32)> = spans.iter().flat_map(|&(s, d)| [(s, 1), (d, -1)]).collect();
        ev.sort();
        let (mut now, mut most) = (0i32, 0i32);
        for (_, e) in ev {
            now += e;
            most = most.max(now);
        }
        most as usize
    }
    let limit = Arc::new(DepthLimit::new(2));
    let spans = Arc::new(Mutex::new(Vec::new()));
    let (hook_spans, hook_limit) = (spans.clone(), limit.clone());
    let on_done: OnDone = Box::new(move |d| {
        let mut s = hook_spans.lock().unwrap();
        s.push((d.submit_ns, d.done_ns));
        if s.len() == 200 {
            hook_limit.set(5);
            hook_limit.quiesce();
        }
    });
    let hooks = Hooks {
        on_done: Some(on_done),
        depth_limit: Some(limit.clone()),
        ..Hooks::default()
    };
    let (mut e, _fake) = virtual_built(cfg(8), 8, hooks).unwrap();
    assert_eq!(e.run(Stop::Ios(600)).unwrap(), Ended::Ios);
    let spans = spans.lock().unwrap();
    assert_eq!(spans.len(), 600, "every request completes once");
    assert_eq!(most_in_flight(&spans[..150]), 2, "limit 2");
    let change = spans[199].1;
    let after: Vec<(u64, u64)> = spans.iter().copied().filter(|s| s.0 >= change).collect();
    assert_eq!(most_in_flight(&after), 5, "limit 5 after the change");
    assert!(
        spans.iter().all(|s| s.0 < change
            || s.0
                >= spans
                    .iter()
                    .filter(|x| x.0 < change)
                    .map(|x| x.1)
                    .max()
                    .unwrap()),
        "quiesce: nothing new before what was in flight at the change completed"
    );
}

#[test]
fn a_paced_run_ticks_while_nothing_is_in_flight() {
    // One request every 80 ms, a tick every 20 ms: most ticks fall while it sleeps.
    let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(80), |_| {
        Hooks::default()
    });
    let t0 = clock.now_ns();
    let mut idle = 0;
    let mut last = 0u64;
    let mut f = |e: &Engine, now: u64| {
        assert!(now >= last + 20_000_000 || last == 0, "a tick came early");
        last = now;
        if e.in_flight() == 0 {
            idle += 1;
        }
    };
    let tick = Tick {
        first_ns: t0 + 20_000_000,
        every: Duration::from_millis(20),
        f: &mut f,
    };
    assert_eq!(
        e.run_ticking(Stop::At(t0 + 300_000_000), tick).unwrap(),
        Ended::Time
    );
    assert!(idle >= 1, "no tick while idle");
    assert!(clock.now_ns() >= t0 + 300_000_000);
}

/// A clock that moves 1 ns every time it is read (the fake clock under it is the simulated
/// device's): no two readings are equal, so each reading shows as a time of its own.
struct Ticking(FakeClock);

impl Clock for Ticking {
    fn now_ns(&self) -> u64 {
        self.0.advance(1);
        self.0.now_ns()
    }
    fn thread_cpu_ns(&self) -> u64 {
        self.0.thread_cpu_ns()
    }
    fn is_virtual(&self) -> bool {
        true
    }
}

/// Runs 64 requests in batches of 8 at depth 8 on a [`Ticking`] clock, and returns the push
/// times the issue hook saw, in push order, and the done hook's push times of each submission
/// (by the time that submission was stamped), in the order pushed.
fn push_times(batch_clock: bool) -> (Vec<u64>, BTreeMap<u64, Vec<u64>>) {
    let fake = FakeClock::new(0);
    let q = SimQueue::new(
        "fixed:10us".parse::<LatencyModel>().unwrap(),
        1,
        8,
        SimTime::virtual_on(&fake, 100),
    );
    let clock: Arc<dyn Clock> = Arc::new(Ticking(fake));
    let policy = PolicyConfig::new(Mode::Poll).build(clock.clone());
    let (mut hooks, issued) = issued();
    let done = Arc::new(Mutex::new(Vec::new()));
    let d = done.clone();
    hooks.on_done = Some(Box::new(move |x: &Done| d.lock().unwrap().push(*x)));
    let cfg = EngineConfig {
        batch_submit: 8,
        batch_complete_min: 8,
        batch_clock,
        ..cfg(8)
    };
    let mut e = Engine::builder(Box::new(q), policy, clock, cfg)
        .slab(Slab::new(8, 4096, 4096).unwrap())
        .hooks(hooks)
        .build()
        .unwrap();
    e.run(Stop::Ios(64)).unwrap();
    let issued: Vec<u64> = issued.lock().unwrap().iter().map(|i| i.3).collect();
    let mut by_submission: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for x in done.lock().unwrap().iter() {
        let issued_ns = x
            .issued_ns
            .expect("the simulated device stamps its submissions");
        by_submission
            .entry(issued_ns)
            .or_default()
            .push(x.submit_ns);
    }
    for times in by_submission.values_mut() {
        times.sort_unstable();
    }
    (issued, by_submission)
}

#[test]
fn each_request_of_a_batch_is_stamped_when_pushed_unless_batch_clock() {
    // fio stamps every request as it is queued: so does the engine by default, and a batch's
    // requests have push times of their own, in push order, each before its submission.
    let (issued, by_submission) = push_times(false);
    assert_eq!(issued.len(), 64);
    assert!(
        issued.windows(2).all(|w| w[0] < w[1]),
        "push times rise strictly in push order: {issued:?}"
    );
    assert_eq!(by_submission.len(), 8, "{by_submission:?}");
    for (submitted, times) in &by_submission {
        assert_eq!(times.len(), 8, "a batch of 8: {by_submission:?}");
        assert!(
            times.windows(2).all(|w| w[0] < w[1]),
            "the requests of one batch have distinct push times: {times:?}"
        );
        assert!(times.iter().all(|t| t < submitted), "{times:?} {submitted}");
    }
    let mut from_done: Vec<u64> = by_submission.values().flatten().copied().collect();
    from_done.sort_unstable();
    assert_eq!(
        from_done, issued,
        "the latencies count from the push times the issue hook saw"
    );

    // With batch_clock (fio's gtod_reduce) one reading serves the whole batch.
    let (issued, by_submission) = push_times(true);
    assert_eq!(issued.len(), 64);
    assert_eq!(by_submission.len(), 8, "{by_submission:?}");
    for (submitted, times) in &by_submission {
        assert_eq!(times.len(), 8, "a batch of 8: {by_submission:?}");
        assert!(
            times.iter().all(|&t| t == times[0] && t < *submitted),
            "one push time a batch: {times:?}"
        );
    }
}
