//! Under an address-space limit (`ulimit -v`) a scenario runs, or is refused with one line
//! naming the limit, before it allocates: never an abort ("memory allocation failed", exit 134)
//! nor a thread that cannot start half-way. Buffers of a page take a page of address space
//! (they took two, aligned by the allocator, and the check counted one).

mod common;

use std::process::Command;

use common::{outcome, tempdir};

fn fairness_under(kib: u64) -> (i32, String, String) {
    let d = tempdir();
    let bin = env!("CARGO_BIN_EXE_pollwise");
    let out = Command::new("bash")
        .args([
            "-c",
            &format!("ulimit -v {kib} && exec {bin} scenario fairness --runtime=300ms"),
        ])
        .env("TMPDIR", d.path())
        .output()
        .unwrap();
    outcome(out)
}

#[test]
fn fairness_under_an_address_space_limit_runs_or_is_refused_in_one_line() {
    for kib in [300_000, 290_000] {
        let (code, _out, err) = fairness_under(kib);
        assert_eq!(code, 0, "ulimit -v {kib}: {err}");
    }
    let (code, _out, err) = fairness_under(150_000);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("ulimit -v"), "{err}");
}
