//! The platform model against figures computed by hand, and against itself (determinism).

use super::*;
use pollwise::policy::Mode;
use pollwise::queue::sim::LatencyModel;

const E: u64 = 100; // engine work per I/O
const S: u64 = 200; // submit call
const P: u64 = 30; // one poll
const Y: u64 = 50; // one system call
const W: u64 = 400; // a blocking wait's CPU
const K: u64 = 700; // wake-up latency
const L: u64 = 1_000; // device latency

/// Asserts that the histogram figure `got` (a percentile) is `want` to the histogram's
/// resolution (two significant digits: the same bucket). Min and max are exact (`Moments`) and
/// checked to the nanosecond, as are elapsed and CPU time.
#[track_caller]
fn same_bucket(h: &crate::stats::Histogram<u64>, got: u64, want: u64) {
    assert!(
        h.equivalent(got, want),
        "{got} is not {want} to the histogram's resolution"
    );
}

fn platform(cores: u32) -> Platform {
    Platform {
        name: "test".into(),
        cores,
        time_slice_ns: 1_000_000_000,
        context_switch_ns: 0,
        syscall_ns: Y,
        submit_ns: S,
        poll_ns: P,
        engine_ns: E,
        wait_cpu_ns: W,
        wake_latency_ns: K,
        sleep_cpu_ns: 600,
        timer_late_ns: 300,
        device: LatencyModel::Fixed(L),
        device_iops: 0,
        device_latency_by_depth: Vec::new(),
        iopoll_ns: 0,
    }
}

fn job(mode: Mode, ios: u64) -> ThreadJob {
    ThreadJob {
        cfg: EngineConfig::default(),
        policy: PolicyConfig::new(mode),
        seed: 1,
        ramp_ns: 0,
        runtime_ns: u64::MAX / 4,
        ios: Some(ios),
        rate: None,
    }
}

fn one(p: &Platform, mode: Mode, ios: u64) -> ThreadResult {
    run(p, &[job(mode, ios)]).unwrap().remove(0)
}

#[test]
fn poll_one_thread_to_the_nanosecond() {
    let n = 200;
    let r = one(&platform(1), Mode::Poll, n);
    // Push (E) and submit (S), then polls of P each until one reaches the completion.
    let clat = L.div_ceil(P) * P;
    let cycle = E + S + clat;
    assert_eq!(r.read.ios, n);
    assert_eq!(r.read.clat_summary().min, clat);
    assert_eq!(r.read.clat_summary().max, clat);
    assert_eq!(r.read.slat_summary().max, E + S);
    same_bucket(&r.read.lat, r.read.lat.value_at_quantile(0.5), cycle);
    assert_eq!(r.elapsed_ns, n * cycle);
    // A poller is on its core the whole time.
    assert_eq!(r.cpu_ns, n * cycle);
    assert_eq!(r.switches, 0);
    assert_eq!(r.policy.wait.polls, n * L.div_ceil(P));
}

#[test]
fn interrupt_one_thread_to_the_nanosecond() {
    let n = 200;
    let r = one(&platform(1), Mode::Interrupt, n);
    // The engine pushes (E); the policy's wait submits and waits in one call (S, clat starts
    // when the wait began); back in user space K after the completion; one poll reaps it.
    let clat = S + L + K + P;
    let cycle = E + clat;
    assert_eq!(r.read.slat_summary().max, E);
    assert_eq!(r.read.clat_summary().min, clat);
    assert_eq!(r.read.clat_summary().max, clat);
    same_bucket(&r.read.lat, r.read.lat.value_at_quantile(0.5), cycle);
    assert_eq!(r.elapsed_ns, n * cycle);
    // CPU: the engine, the submit call (which entered the kernel for the wait too), the rest
    // of the wait's CPU on waking, one poll.
    assert_eq!(r.cpu_ns, n * (E + S + (W - Y) + P));
    assert_eq!(r.switches, n);
    assert_eq!(r.policy.wait.blocks, n);
    assert_eq!(r.queue.enters, n);
}

#[test]
fn kernel_polled_io_waits_on_its_core_without_a_wake_up() {
    const I: u64 = 250; // one reaping enter on an IOPOLL ring
    let p = Platform {
        iopoll_ns: I,
        ..platform(1)
    };
    let n = 200;
    let mut j = job(Mode::Interrupt, n);
    j.cfg.hipri = true;
    let r = run(&p, &[j]).unwrap().remove(0);
    // The wait submits (S), then the kernel polls the device in passes of I - Y until the
    // completion (L: five passes exactly), with no wake-up, and posts it: one check of the
    // completion queue (P) reaps it.
    let clat = S + L + P;
    assert_eq!(L % (I - Y), 0);
    assert_eq!(r.read.clat_summary().min, clat);
    assert_eq!(r.read.clat_summary().max, clat);
    assert_eq!(r.elapsed_ns, n * (E + clat));
    // The thread never leaves its core: all of it is CPU, and nothing is switched.
    assert_eq!(r.cpu_ns, r.elapsed_ns);
    assert_eq!(r.switches, 0);
    assert_eq!(r.queue.enters, n, "one enter submits and polls");
    // Against interrupts on a plain ring: the wake-up (K) more.
    let irq = one(&p, Mode::Interrupt, n);
    assert_eq!(irq.read.clat_summary().min, S + L + K + P);
    // A poller spins reaping enters (each one I) rather than checks of P.
    let mut j = job(Mode::Poll, n);
    j.cfg.hipri = true;
    let r = run(&p, &[j]).unwrap().remove(0);
    assert_eq!(r.queue.enters, n * (1 + L.div_ceil(I)));
    // A platform without the cost refuses a polled job, naming the field.
    let mut j = job(Mode::Interrupt, n);
    j.cfg.hipri = true;
    let e = run(&platform(1), &[j]).map(|_| ()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Config {
                field: "iopoll_ns",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn two_pollers_on_one_core_share_it_by_slices() {
    let mut p = platform(1);
    p.time_slice_ns = 100_000;
    p.context_switch_ns = 1_000;
    let jobs = [job(Mode::Poll, 500), job(Mode::Poll, 500)];
    let r = run(&p, &jobs).unwrap();
    let cycle = E + S + L.div_ceil(P) * P;
    for t in &r {
        assert_eq!(t.read.ios, 500);
        // Each ran about half the time: its elapsed time is about twice its CPU.
        assert!(
            t.elapsed_ns > 3 * t.cpu_ns / 2,
            "{} {}",
            t.elapsed_ns,
            t.cpu_ns
        );
        assert!(t.switches > 0);
        // A request in flight while its thread is off the core waits for the next slice.
        assert!(t.read.clat.max() > 50_000, "{}", t.read.clat.max());
        assert!(t.read.clat.min() < 2 * cycle);
    }
    // With two cores, neither waits.
    let r2 = run(&platform(2), &jobs).unwrap();
    for t in &r2 {
        assert_eq!(t.elapsed_ns, 500 * cycle);
        assert_eq!(t.switches, 0);
    }
}

#[test]
fn same_inputs_same_figures_bit_for_bit() {
    let mut p = platform(2);
    p.device = LatencyModel::LogNormal {
        mean_ns: 10_000,
        sigma: 0.4,
    };
    p.time_slice_ns = 50_000;
    p.context_switch_ns = 900;
    let mut by_depth = p.clone();
    by_depth.device_latency_by_depth = vec![(1, 10_000), (2, 14_000), (4, 30_000)];
    by_depth.device_iops = 150_000;
    for (p, mode) in Mode::ALL
        .iter()
        .map(|m| (&p, m))
        .chain(Mode::ALL.iter().map(|m| (&by_depth, m)))
    {
        let jobs: Vec<ThreadJob> = (0..5)
            .map(|i| ThreadJob {
                seed: 11 + i,
                cfg: EngineConfig {
                    iodepth: 1 + (i as u32 % 3),
                    ..EngineConfig::default()
                },
                ..job(*mode, 300)
            })
            .collect();
        let fig = |r: &[ThreadResult]| -> Vec<(u64, u64, u64, u64, u64, u64, u64)> {
            r.iter()
                .map(|t| {
                    (
                        t.read.ios,
                        t.elapsed_ns,
                        t.cpu_ns,
                        t.switches,
                        t.read.clat.value_at_quantile(0.5),
                        t.read.clat.value_at_quantile(0.99),
                        t.policy.wait.polls,
                    )
                })
                .collect()
        };
        let a = fig(&run(p, &jobs).unwrap());
        let b = fig(&run(p, &jobs).unwrap());
        assert_eq!(a, b, "{}", mode.name());
        // Five threads on two cores: someone waited for a core.
        assert!(a.iter().all(|f| f.0 == 300));
    }
}

#[test]
fn a_rate_limited_device_serves_threads_in_turn() {
    // One thread at QD1: a request every E + S + (L rounded up to polls) = 1_320 ns, slower
    // than the device's one start per 1_000 ns: it never waits, and every figure is the
    // unlimited device's, to the nanosecond.
    let mut p = platform(1);
    p.device_iops = 1_000_000;
    let limited = one(&p, Mode::Poll, 200);
    let free = one(&platform(1), Mode::Poll, 200);
    assert_eq!(
        (limited.elapsed_ns, limited.cpu_ns),
        (free.elapsed_ns, free.cpu_ns)
    );
    assert_eq!(free.elapsed_ns, 200 * (E + S + L.div_ceil(P) * P));

    // Four polling threads on four cores ask for four times that; the device starts one
    // request per 10 us (100k/s), ten times the device latency: together they complete 100k/s,
    // each waiting its turn, and no two requests start less than 10 us apart.
    let mut p = platform(4);
    p.device_iops = 100_000;
    let jobs: Vec<ThreadJob> = (0..4)
        .map(|i| ThreadJob {
            seed: 3 + i,
            ..job(Mode::Poll, 300)
        })
        .collect();
    let r = run(&p, &jobs).unwrap();
    let ios: u64 = r.iter().map(|t| t.read.ios).sum();
    let span = r.iter().map(|t| t.elapsed_ns).max().unwrap();
    let rate = ios as f64 * 1e9 / span as f64;
    assert!((rate / 100_000.0 - 1.0).abs() < 0.01, "{rate}");
    // Each request waited for the three others' turns: its latency is about 4 x 10 us.
    for t in &r {
        let p50 = t.read.clat.value_at_quantile(0.5);
        assert!(p50 > 35_000 && p50 < 45_000, "{p50}");
    }
    // The same inputs, the same figures.
    let again = run(&p, &jobs).unwrap();
    let fig = |r: &[ThreadResult]| -> Vec<(u64, u64, u64)> {
        r.iter()
            .map(|t| (t.elapsed_ns, t.cpu_ns, t.read.clat.value_at_quantile(0.99)))
            .collect()
    };
    assert_eq!(fig(&r), fig(&again));
}

#[test]
fn hybrid_sleeps_and_spends_less_cpu_than_poll() {
    let mut p = platform(1);
    p.device = LatencyModel::Fixed(20_000);
    let poll = one(&p, Mode::Poll, 400);
    let hybrid = one(&p, Mode::Hybrid, 400);
    assert!(hybrid.policy.wait.sleeps > 300, "{:?}", hybrid.policy);
    assert!(hybrid.cpu_ns < poll.cpu_ns);
}

#[test]
fn bad_platforms_name_the_field() {
    let field = |p: Platform| match p.check() {
        Err(Error::Config { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field(Platform {
            cores: 0,
            ..platform(1)
        }),
        "cores"
    );
    assert_eq!(
        field(Platform {
            poll_ns: 0,
            ..platform(1)
        }),
        "poll_ns"
    );
    assert_eq!(
        field(Platform {
            time_slice_ns: 10,
            ..platform(1)
        }),
        "time_slice_ns"
    );
    assert_eq!(
        field(Platform {
            device_iops: u64::MAX,
            ..platform(1)
        }),
        "device_iops"
    );
    assert_eq!(
        field(Platform {
            wake_latency_ns: u64::MAX,
            ..platform(1)
        }),
        "wake_latency_ns"
    );
    assert!(matches!(
        run(
            &Platform {
                cores: 0,
                ..platform(1)
            },
            &[job(Mode::Poll, 1)]
        ),
        Err(Error::Config { field: "cores", .. })
    ));
}

/// A poller that thinks `think` ns (spinning `spin` of it) after every completion.
fn thinker(think: u64, spin: u64, ios: u64) -> ThreadJob {
    let mut j = job(Mode::Poll, ios);
    j.cfg.thinktime = std::time::Duration::from_nanos(think);
    j.cfg.thinktime_spin = std::time::Duration::from_nanos(spin);
    j
}

#[test]
fn spun_think_time_is_cpu_and_time_to_the_nanosecond() {
    let n = 100;
    let think = 5_000;
    let r = run(&platform(1), &[thinker(think, think, n)])
        .unwrap()
        .remove(0);
    let cycle = E + S + L.div_ceil(P) * P + think;
    assert_eq!(r.read.ios, n);
    assert_eq!(r.elapsed_ns, n * cycle);
    assert_eq!(r.cpu_ns, n * cycle);
    assert_eq!(r.switches, 0);
}

#[test]
fn slept_think_time_costs_a_timed_sleep() {
    let n = 100;
    let think = 5_000;
    let p = platform(1);
    let r = run(&p, &[thinker(think, 0, n)]).unwrap().remove(0);
    let io = E + S + L.div_ceil(P) * P;
    // Off the core for the think time, back its timer's lateness later; the sleep's CPU.
    assert_eq!(r.elapsed_ns, n * (io + think + p.timer_late_ns));
    assert_eq!(r.cpu_ns, n * (io + p.sleep_cpu_ns));
    assert_eq!(r.switches, n);
}

#[test]
fn a_paced_thread_sleeps_to_each_slot() {
    let n = 50;
    let interval = 100_000; // 10,000 IOPS
    let p = platform(1);
    let mut j = job(Mode::Poll, n);
    j.rate = Some(crate::engine::RateLimit {
        iops: 1e9 / interval as f64,
        poisson: false,
    });
    let r = run(&p, &[j]).unwrap().remove(0);
    let io = E + S + L.div_ceil(P) * P;
    assert_eq!(r.read.ios, n);
    // The first request at once, each later one when its slot's sleep ends (late by the
    // timer's lateness): the thread sleeps between requests and pays a sleep's CPU for each.
    assert_eq!(r.cpu_ns, n * io + (n - 1) * p.sleep_cpu_ns);
    assert_eq!(r.switches, n - 1);
    assert_eq!(r.elapsed_ns, (n - 1) * interval + p.timer_late_ns + io);
}

/// A platform whose every cost is a multiple of its poll (10 ns), so a poller reaps each
/// completion at its due time exactly: clat is the device's latency to the nanosecond.
fn aligned(cores: u32, curve: &[(u32, u64)]) -> Platform {
    Platform {
        poll_ns: 10,
        device_latency_by_depth: curve.to_vec(),
        ..platform(cores)
    }
}

fn at_depth(mut j: ThreadJob, depth: u32) -> ThreadJob {
    j.cfg.iodepth = depth;
    j
}

#[test]
fn latency_by_depth_to_the_nanosecond() {
    // Device L = 1000 ns alone, 1500 ns with two requests on it.
    let (l1, l2) = (L, 1_500);
    let p = aligned(1, &[(1, l1), (2, l2)]);
    // QD1: one request on the device at a time: the curve adds nothing, and every figure is
    // the platform's without a curve.
    let r1 = run(&p, &[job(Mode::Poll, 200)]).unwrap().remove(0);
    let plain = run(&aligned(1, &[]), &[job(Mode::Poll, 200)])
        .unwrap()
        .remove(0);
    same_bucket(&r1.read.clat, r1.read.clat.value_at_quantile(0.5), l1);
    assert_eq!(r1.read.clat_summary().max, l1);
    assert_eq!((r1.elapsed_ns, r1.cpu_ns), (plain.elapsed_ns, plain.cpu_ns));
    // QD2: the engine pushes two (2E), submits both (S): the first starts alone (l1, due at
    // 2E+S+l1), the second with it (l2). From then on every request is issued E+S after a
    // completion while the other is still on the device (l2 - l1 = 500 > E + S = 300): each
    // takes l2, and a poller reaps it at its due time.
    let n = 200;
    let r2 = run(&p, &[at_depth(job(Mode::Poll, n), 2)])
        .unwrap()
        .remove(0);
    assert_eq!(r2.read.ios, n);
    same_bucket(&r2.read.clat, r2.read.clat.value_at_quantile(0.5), l2);
    assert_eq!(r2.read.clat_summary().min, l1);
    assert_eq!(r2.read.clat_summary().max, l2);
    // Without the curve, QD2's requests take L (reaped within a poll of it).
    let flat = run(&aligned(1, &[]), &[at_depth(job(Mode::Poll, n), 2)])
        .unwrap()
        .remove(0);
    same_bucket(&flat.read.clat, flat.read.clat.value_at_quantile(0.5), L);
    let top = flat.read.clat.lowest_equivalent(flat.read.clat.max());
    assert!(top <= L + 10, "{top}");

    // Depth 2 halfway between points at depths 1 and 3: interpolated, 1000 + (2000-1000)/2.
    let p3 = aligned(1, &[(1, l1), (3, 2_000)]);
    let r = run(&p3, &[at_depth(job(Mode::Poll, n), 2)])
        .unwrap()
        .remove(0);
    same_bucket(&r.read.clat, r.read.clat.value_at_quantile(0.5), 1_500);
}

#[test]
fn two_threads_at_qd1_are_depth_two_for_the_device() {
    // Two pollers on two cores, QD1 each. Both issue at E+S = 300: thread 0 first (l1, due
    // 1300), thread 1 beside it (l2, due 1800). Thread 0 reaps at 1300 and issues at 1600
    // while thread 1's is on the device (due 1800): l2; thread 1 issues at 2100 beside thread
    // 0's (due 3100): l2; and so on, each beside the other's.
    let (l1, l2) = (L, 1_500);
    let p = aligned(2, &[(1, l1), (2, l2)]);
    let n = 100;
    let jobs = [job(Mode::Poll, n), job(Mode::Poll, n)];
    let r = run(&p, &jobs).unwrap();
    for (i, t) in r.iter().enumerate() {
        assert_eq!(t.read.ios, n, "thread {i}");
        same_bucket(&t.read.clat, t.read.clat.value_at_quantile(0.5), l2);
        assert_eq!(t.read.clat_summary().max, l2);
    }
    same_bucket(&r[0].read.clat, r[0].read.clat.min(), l1);
    same_bucket(&r[1].read.clat, r[1].read.clat.min(), l2);
    // Each thread's cycle is E + S + l2 once both run: its elapsed time is n such cycles,
    // give or take the first request and the other thread's offset.
    let cycle = E + S + l2;
    for t in &r {
        let d = t.elapsed_ns.abs_diff(n * cycle);
        assert!(d <= l2, "{} vs {}", t.elapsed_ns, n * cycle);
    }
}

#[test]
fn the_curve_interpolates_and_extends_by_the_device_rate() {
    let mut p = aligned(1, &[(1, 20_000), (2, 32_000), (4, 50_000), (8, 90_000)]);
    let extra: Vec<u64> = [0, 1, 2, 3, 4, 6, 8, 10]
        .map(|n| p.depth_extra_ns(n))
        .to_vec();
    // Over the 20 us at depth 1: nothing below and at depth 1; 12 us at 2; (32 + 18/2) - 20 =
    // 21 at 3; 30 at 4; (50 + 40/2) - 20 = 50 at 6; 70 at 8; beyond 8, with no rate limit, the
    // last point holds.
    assert_eq!(
        extra,
        [0, 0, 12_000, 21_000, 30_000, 50_000, 70_000, 70_000]
    );
    // With a device rate of 100k/s (10 us per request), each request beyond depth 8 adds
    // 10 us.
    p.device_iops = 100_000;
    assert_eq!(p.depth_extra_ns(8), 70_000);
    assert_eq!(p.depth_extra_ns(10), 90_000);
    // Rounded down between points: (1, 1) to (4, 11) rises 10 x 2/3 = 6.67 by depth 3: 6.
    let q = aligned(1, &[(1, 1), (4, 11)]);
    assert_eq!(q.depth_extra_ns(3), 6);
    // No curve: nothing at any depth.
    assert_eq!(platform(1).depth_extra_ns(64), 0);
}

#[test]
fn bad_depth_curves_name_the_field() {
    for curve in [
        vec![(2, 1_000), (4, 2_000)],
        vec![(1, 1_000), (1, 2_000)],
        vec![(1, 1_000), (4, 2_000), (2, 3_000)],
        vec![(1, 2_000), (2, 1_000)],
        vec![(1, u64::MAX)],
        (1..=65).map(|d| (d, 1_000)).collect(),
    ] {
        let p = Platform {
            device_latency_by_depth: curve.clone(),
            ..platform(1)
        };
        assert!(
            matches!(
                p.check(),
                Err(Error::Config {
                    field: "device_latency_by_depth",
                    ..
                })
            ),
            "{curve:?}"
        );
    }
    let ok = Platform {
        device_latency_by_depth: vec![(1, 1_000), (2, 1_000), (8, 5_000)],
        ..platform(1)
    };
    assert!(ok.check().is_ok());
}

/// A poller on a device of 10 s: 1 ms of ramp and 5 ms measured, in virtual time.
fn ten_second_poller() -> (Platform, ThreadJob) {
    let mut p = platform(1);
    p.device = LatencyModel::Fixed(10_000_000_000);
    let mut j = job(Mode::Poll, 1000);
    j.ramp_ns = 1_000_000;
    j.runtime_ns = 5_000_000;
    j.ios = None;
    (p, j)
}

#[test]
fn a_drain_is_bounded_in_real_time_and_what_it_gave_up_is_cancelled() {
    // Before, each drain polled the device's 10 virtual seconds out (every 30 ns): minutes.
    let (p, j) = ten_second_poller();
    let t0 = std::time::Instant::now();
    let r = run(&p, &[j]).unwrap().remove(0);
    let took = t0.elapsed();
    // Two drains (the ramp's and the run's) of half a second each, and the polling between.
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(r.read.ios, 0);
    assert_eq!(r.cancelled, 1, "the measured run's request");
    assert!(!r.stopped_early);
}

#[test]
fn a_wall_limit_stops_the_threads_and_says_so() {
    let (p, mut j) = ten_second_poller();
    j.ramp_ns = 0;
    j.runtime_ns = 3_600_000_000_000;
    let limits = Limits {
        wall: Some(std::time::Instant::now() + std::time::Duration::from_millis(300)),
        stop: None,
    };
    let t0 = std::time::Instant::now();
    let r = run_with(&p, &[j], &limits).unwrap().remove(0);
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    assert!(r.stopped_early);
    assert!(r.elapsed_ns < 3_600_000_000_000);
    assert_eq!(r.cancelled, 1);
}
