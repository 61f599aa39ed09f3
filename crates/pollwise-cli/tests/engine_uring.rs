//! The engine on real io_uring rings over real files: every request completes exactly once with
//! the right data, under every policy and ring setup.

#[path = "jobs_common.rs"]
mod common;

use std::time::Duration;

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::request::Dir;
use pollwise_bench::engine::{Engine, Stop};
use pollwise_cli::job::{engine_config, run_job, JobSpec, Rw};
use pollwise_cli::Error;

use common::{job, temp_file};

/// Writes the whole file with verify patterns, so reads can check every byte they get.
fn write_verified(spec: &JobSpec) {
    let w = JobSpec {
        rw: Rw::Write,
        verify: true,
        io_size: spec.size,
        policy: PolicyConfig::new(Mode::Interrupt),
        ..spec.clone()
    };
    let s = run_job(&w).expect("write pass");
    assert_eq!(s.write.ios, spec.size / spec.bs as u64);
}

#[test]
fn every_policy_completes_every_request_once_with_the_right_data() {
    let (_dir, path) = temp_file();
    let base = job(&path, Rw::RandRead, Mode::Interrupt, 1000);
    write_verified(&base);
    for &mode in Mode::ALL {
        for (depth, batch) in [(1, 1), (8, 4), (32, 8)] {
            let spec = JobSpec {
                iodepth: depth,
                iodepth_batch_submit: batch,
                iodepth_batch_complete_min: batch,
                verify: true,
                policy: PolicyConfig::new(mode),
                ..base.clone()
            };
            let s = run_job(&spec).unwrap_or_else(|e| panic!("{mode:?} qd{depth}: {e}"));
            // io_size is 1000 blocks: exactly 1000 submitted, 1000 completed, none twice (a
            // second completion of a slot would be a stale-handle error).
            assert_eq!(s.read.ios, 1000, "{mode:?} qd{depth}");
            assert_eq!(s.queue.submitted, 1000, "{mode:?} qd{depth}");
            assert_eq!(s.queue.completed, 1000, "{mode:?} qd{depth}");
            assert!(s.read.pct(50.0) > 0);
        }
    }
}

#[test]
fn ring_setups_work_under_every_policy() {
    let (_dir, path) = temp_file();
    let base = job(&path, Rw::RandRead, Mode::Interrupt, 300);
    write_verified(&base);
    let setups: Vec<(&str, JobSpec)> = vec![
        (
            "defer_taskrun",
            JobSpec {
                defer_taskrun: true,
                ..base.clone()
            },
        ),
        (
            "coop_taskrun+single_issuer",
            JobSpec {
                coop_taskrun: true,
                single_issuer: true,
                ..base.clone()
            },
        ),
        (
            "sqpoll",
            JobSpec {
                sqthread_poll: true,
                sqthread_idle_ms: 10,
                ..base.clone()
            },
        ),
        (
            "registerfiles+fixedbufs",
            JobSpec {
                registerfiles: true,
                fixedbufs: true,
                ..base.clone()
            },
        ),
        (
            "numjobs=2 sqthread_share",
            JobSpec {
                numjobs: 2,
                sqthread_poll: true,
                sqthread_share: true,
                ..base.clone()
            },
        ),
    ];
    for &mode in Mode::ALL {
        for (what, spec) in &setups {
            let spec = JobSpec {
                verify: true,
                policy: PolicyConfig::new(mode),
                ..spec.clone()
            };
            let s = run_job(&spec).unwrap_or_else(|e| panic!("{what} {mode:?}: {e}"));
            assert_eq!(s.read.ios, 300 * spec.numjobs as u64, "{what} {mode:?}");
            assert_eq!(s.queue.completed, s.queue.submitted, "{what} {mode:?}");
        }
    }
}

#[test]
fn write_then_verify_round_trip_and_corruption_is_caught() {
    let (_dir, path) = temp_file();
    // Random writes with verify: the job reads every written block back and checks it.
    let w = JobSpec {
        verify: true,
        iodepth: 16,
        ..job(&path, Rw::RandWrite, Mode::Poll, 2000)
    };
    let s = run_job(&w).expect("randwrite + verify");
    assert_eq!(s.write.ios, 2000);
    // Whole file, then a read pass over every block.
    let base = job(&path, Rw::Read, Mode::Interrupt, 256);
    write_verified(&base);
    let r = JobSpec {
        verify: true,
        ..base.clone()
    };
    run_job(&r).expect("clean read verifies");
    // Corrupt one byte of block 7 behind pollwise's back.
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_at(&[0xAB], 7 * 4096 + 1000).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let Err(e) = run_job(&r) else {
        panic!("corruption must be reported")
    };
    assert!(matches!(e, Error::Verify(_)), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("crc32c mismatch"), "{msg}");
    assert!(msg.contains("offset 28672"), "{msg}");
}

fn engine(path: &std::path::Path, mode: Mode, depth: u32) -> Engine {
    let spec = JobSpec {
        iodepth: depth,
        ..job(path, Rw::RandRead, mode, 100)
    };
    let target = pollwise_cli::job::prepare_target(&spec).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let q = UringQueue::new(
        &UringOptions {
            entries: depth,
            ..Default::default()
        },
        &[f.as_raw_fd()],
        false,
    )
    .unwrap();
    std::mem::forget(f); // the ring uses the fd for the whole test
    let clock = clock::monotonic();
    Engine::new(
        Box::new(q),
        PolicyConfig::new(mode).build(clock.clone()),
        clock,
        engine_config(&spec, target.size),
    )
    .unwrap()
}

#[test]
fn wait_for_one_handle_and_stale_handles_are_errors() {
    let (_dir, path) = temp_file();
    for &mode in Mode::ALL {
        let mut e = engine(&path, mode, 4);
        let a = e.submit_one(Dir::Read, 0).unwrap();
        let b = e.submit_one(Dir::Read, 4096).unwrap();
        let c = e.submit_one(Dir::Read, 8192).unwrap();
        e.wait_for(b).unwrap();
        // b is done: its handle is stale now, an error and not undefined behaviour.
        let err = e.wait_for(b).unwrap_err();
        assert!(err.to_string().contains("stale request handle"), "{err}");
        // a and c may have completed while we waited for b; each is either still in flight
        // (and waitable) or stale, never both.
        for h in [a, c] {
            if e.is_in_flight(h) {
                e.wait_for(h).unwrap();
            }
            assert!(!e.is_in_flight(h));
            assert!(e.wait_for(h).is_err());
        }
        assert_eq!(e.in_flight(), 0);
        let read = e.stats().read;
        assert_eq!(read.ios, 3);
        // Slots are recycled: a new request reuses a slot under a new generation.
        let d = e.submit_one(Dir::Read, 0).unwrap();
        assert_ne!(d, a);
        assert_ne!(d, b);
        assert_ne!(d, c);
        e.run(Stop::Ios(50)).unwrap();
        assert_eq!(e.in_flight(), 0);
    }
}

#[test]
fn polled_io_without_poll_queues_fails_fast_with_the_reason() {
    // This machine's disk (virtio-blk) has no poll queues; a file on it cannot do IOPOLL.
    let (_dir, path) = temp_file();
    let spec = JobSpec {
        hipri: true,
        runtime: Duration::from_secs(5),
        ..job(&path, Rw::RandRead, Mode::Poll, 100)
    };
    match run_job(&spec) {
        Err(Error::Unsupported(m)) => {
            assert!(m.contains("--hipri"), "{m}");
            assert!(m.contains("poll queues"), "{m}");
            assert!(m.contains("run without --hipri"), "{m}");
        }
        Err(e) => panic!("wrong error: {e}"),
        // A machine whose disk has poll queues does polled I/O: then it must work.
        Ok(s) => assert_eq!(s.read.ios, 100),
    }
}

#[test]
fn blocking_rings_are_set_up_as_fio_sets_them_up() {
    use pollwise::queue::Queue;
    use pollwise_cli::job::uring_for;
    let (_dir, path) = temp_file();
    let spec = job(&path, Rw::RandRead, Mode::Interrupt, 10);
    pollwise_cli::job::prepare_target(&spec).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    // The modes whose waits block (interrupt, adaptive, auto): COOP_TASKRUN | SINGLE_ISSUER |
    // DEFER_TASKRUN, so completions are posted only inside an enter, and TASKRUN_FLAG, so the
    // kernel says when one is due. The polling modes: a plain ring. Either way a poll is a
    // load, without a system call.
    for &mode in Mode::ALL {
        let s = JobSpec {
            policy: PolicyConfig::new(mode),
            ..spec.clone()
        };
        let blocks = matches!(mode, Mode::Interrupt | Mode::Adaptive | Mode::Auto);
        let opts = pollwise_cli::job::uring_options(&s, None);
        assert_eq!(opts.defer_taskrun && opts.coop_taskrun, blocks, "{mode:?}");
        assert!(
            !uring_for(&s, &f, None).unwrap().poll_needs_enter(),
            "{mode:?}"
        );
    }
    // The user's own choice wins.
    let s = JobSpec {
        taskrun_auto: false,
        ..spec.clone()
    };
    assert!(!pollwise_cli::job::uring_options(&s, None).defer_taskrun);
    assert!(!uring_for(&s, &f, None).unwrap().poll_needs_enter());
}
