//! Every request completes exactly once under the hybrid, adaptive and auto policies, on a real
//! file through real io_uring (O_DIRECT, in the temp directory), with data checked by `--verify`.

use std::time::Duration;

use pollwise::policy::{Mode, PolicyConfig};
use pollwise_cli::job::{run_job, JobSpec, Rw};

fn job(mode: Mode, rw: Rw, iodepth: u32, path: std::path::PathBuf) -> JobSpec {
    JobSpec {
        filename: path,
        size: 2 << 20,
        rw,
        iodepth,
        iodepth_batch_complete_min: 1,
        runtime: Duration::from_secs(30),
        policy: PolicyConfig::new(mode),
        ..JobSpec::default()
    }
}

#[test]
fn hybrid_and_adaptive_complete_every_read_once() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [Mode::Hybrid, Mode::Adaptive, Mode::Auto] {
        for iodepth in [1, 8] {
            let spec = job(mode, Rw::RandRead, iodepth, dir.path().join("r.dat"));
            let s = run_job(&spec).unwrap();
            // Not time-based: it stops after io_size (= size) bytes of requests.
            let want = spec.size / spec.bs as u64;
            assert_eq!(s.read.ios, want, "{mode:?} QD{iodepth}");
            assert_eq!(s.queue.submitted, want, "{mode:?} QD{iodepth}");
            assert_eq!(s.queue.completed, want, "{mode:?} QD{iodepth}");
        }
    }
}

#[test]
fn hybrid_and_adaptive_write_and_read_back_verified() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [Mode::Hybrid, Mode::Adaptive, Mode::Auto] {
        let mut spec = job(mode, Rw::RandRw, 4, dir.path().join("w.dat"));
        spec.verify = true;
        let s = run_job(&spec).unwrap();
        // The measured period's; the verify read-back's reads come on top (fio counts them as
        // reads too).
        assert_eq!(s.measured_ios(), spec.size / spec.bs as u64, "{mode:?}");
        assert!(s.read.verify_ios > 0, "{mode:?}");
        assert_eq!(s.queue.submitted, s.queue.completed, "{mode:?}");
    }
}

#[test]
fn hybrid_learns_a_prediction_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = job(Mode::Hybrid, Rw::RandRead, 1, dir.path().join("p.dat"));
    let s = run_job(&spec).unwrap();
    // 512 reads is more than the predictor's bootstrap: it believes something about 4k reads,
    // and the policy slept on that belief (a sleep is at most one per request).
    let mean = s
        .beliefs
        .iter()
        .find(|(n, _)| n == "predict.read.4k.mean_ns")
        .map(|b| b.1);
    assert!(mean.is_some_and(|m| m > 0.0), "{:?}", s.beliefs);
    assert!(s.policy.wait.sleeps >= 1, "{:?}", s.policy);
    assert!(s.policy.wait.sleeps <= s.read.ios, "{:?}", s.policy);
}
