//! The storage daemon (the reactor scenarios' server): real O_DIRECT reads through the reactor,
//! with and without pruning, on each fd monitor.

use std::time::Duration;

use pollwise::reactor::{FdMonKind, ReactorConfig};
use pollwise_cli::scenario::daemon::{self, DaemonConfig};

fn daemon_cfg(kind: FdMonKind, path: &std::path::Path, idle: Option<u64>) -> DaemonConfig {
    DaemonConfig {
        filename: path.to_path_buf(),
        size: 8 << 20,
        direct: true,
        block_size: 4096,
        sources: 6,
        active: 2,
        iodepth: 2,
        warm_idle: true,
        handler_ns: 0,
        ramp: Duration::from_millis(50),
        runtime: Duration::from_millis(200),
        reactor: ReactorConfig {
            fdmon: kind,
            poll_idle_ns: idle,
            ..Default::default()
        },
        seed: 7,
    }
}

#[test]
fn daemon_serves_real_reads_with_each_fdmon() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let path = dir.path().join("d.dat");
    let spec = pollwise_cli::job::JobSpec {
        filename: path.clone(),
        size: 8 << 20,
        ..Default::default()
    };
    pollwise_cli::job::prepare_target(&spec).unwrap();
    for kind in FdMonKind::ALL {
        for idle in [Some(5_000_000), None] {
            let cfg = daemon_cfg(kind, &path, idle);
            let rep = daemon::run(&cfg).unwrap();
            assert!(rep.lat.ios > 0, "{kind:?} {idle:?}");
            assert!(rep.lat.pct(50.0) > 0);
            assert_eq!(rep.prunes, idle.is_some() && kind == FdMonKind::IoUring);
            // Every channel joined the polling set with its first read; without pruning none
            // leaves it. (Whether idle ones were pruned depends on timing: only polling prunes.)
            if !rep.prunes {
                assert_eq!(rep.polling_set_end, 7, "six channels and the ring");
            }
        }
    }
    // Bad configurations are usage errors, not panics.
    let mut bad = daemon_cfg(FdMonKind::Epoll, &path, None);
    bad.active = 7;
    assert!(matches!(
        daemon::run(&bad),
        Err(pollwise_cli::Error::Usage(_))
    ));
}

/// A round that completed no read fails the scenario with one line naming the variant and the
/// round, instead of reporting IOPS 0 (and a median pulled to 0) with exit status 0. A runtime of
/// 1 ns measures nothing: the client's measured period ends before any read completes.
#[test]
fn a_round_without_reads_fails_the_scenario() {
    use pollwise_cli::scenario::idle_sources::{run_rounds, Variant};
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let path = dir.path().join("d.dat");
    let spec = pollwise_cli::job::JobSpec {
        filename: path.clone(),
        size: 8 << 20,
        ..Default::default()
    };
    pollwise_cli::job::prepare_target(&spec).unwrap();
    let good = daemon_cfg(FdMonKind::IoUring, &path, None);
    let mut empty = good.clone();
    empty.runtime = Duration::from_nanos(1);
    let variants = [
        Variant {
            name: "good",
            cfg: good,
        },
        Variant {
            name: "empty",
            cfg: empty,
        },
    ];
    let Err(e) = run_rounds("test-scenario", &variants, 2) else {
        panic!("a round without reads was reported as a measurement");
    };
    let msg = e.to_string();
    assert!(matches!(e, pollwise_cli::Error::Io(_)), "{msg}");
    assert!(
        msg.contains("test-scenario") && msg.contains("empty variant") && msg.contains("no reads"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}
