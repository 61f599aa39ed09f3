//! `--fault` under `--platform`: the model's device injects nothing, so the combination is
//! refused with one line (exit 2), on the command line and in a job file (naming its line),
//! rather than giving a clean run that reads as one with faults.

mod common;

use common::{pollwise_env, tempdir};

#[test]
fn a_fault_under_the_platform_model_is_refused() {
    let d = tempdir();
    for fault in ["--fault=eio:1", "--fault=spike:1:1h"] {
        let (code, out, err) = pollwise_env(
            &[
                "run",
                "--ioengine=sim",
                "--platform=nvme-baremetal",
                "--size=16M",
                "--runtime=100ms",
                fault,
            ],
            d.path(),
        );
        assert_eq!(code, 2, "{fault}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("--fault") && err.contains("--platform"),
            "{err}"
        );
    }
    let job = d.path().join("model.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=sim\nplatform=nvme-baremetal\nsize=16M\nruntime=100ms\n[a]\nfault=eio:1\n",
    )
    .unwrap();
    let (code, _out, err) = pollwise_env(&["run", job.to_str().unwrap()], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("model.fio:7"), "{err}");
}
