//! Kernel polled I/O and the published rules through the command: `compare`'s
//! kernel variants refused at once where there are no poll queues, run and named on the
//! platform model; `khybrid` and `dpas` as modes; advise's kernel-polling candidate. (The
//! guest test, scripts/guest/kernel-polling.sh, runs them on a device with poll queues.)

mod common;

use common::{json_of, pollwise, usage_error, with_temp_file};
use serde_json::Value;

/// The bare-metal preset with a cost for a reaping IOPOLL enter.
fn polled_platform(dir: &std::path::Path) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/nvme-baremetal.json"
    ))
    .unwrap()
    .replace("\"cores\": 8,", "\"cores\": 8, \"iopoll_ns\": 200,");
    assert!(text.contains("iopoll_ns"));
    let f = dir.join("polled.json");
    std::fs::write(&f, text).unwrap();
    f.display().to_string()
}

fn job<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {v}"))
}

fn p50(j: &Value) -> f64 {
    j["read"]["lat_ns"]["percentile"]["50.000000"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_kernel_variant_without_poll_queues_ends_compare_before_any_round() {
    // This machine's files (virtio-blk, tmpfs) have no poll queues.
    let (code, out, err) = with_temp_file(
        &["compare"],
        &[
            "--size=4M",
            "--modes=poll,iopoll",
            "--runtime=2s",
            "--rounds=2",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--modes=iopoll") && err.contains("poll queues"),
        "{err}"
    );
    assert!(
        err.contains("drop iopoll and hybrid_iopoll from --modes"),
        "{err}"
    );
    assert!(!out.contains("IOPS"), "no round ran: {out}");
    usage_error(
        &["compare", "--ioengine=sim", "--modes=iopol"],
        &["iopol", "hybrid_iopoll"],
    );
}

#[test]
fn the_model_runs_kernel_polling_beside_interrupts_and_names_the_ring() {
    let d = common::tempdir();
    let plat = format!("--platform={}", polled_platform(d.path()));
    let v = json_of(&[
        "compare",
        "--ioengine=sim",
        &plat,
        "--modes=interrupt,iopoll,khybrid,dpas",
        "--runtime=200ms",
        "--rounds=2",
        "--warmup=0",
        "--output-format=json",
    ]);
    let (irq, iopoll) = (job(&v, "interrupt"), job(&v, "iopoll"));
    assert_eq!(iopoll["pollwise"]["ring"], "IOPOLL");
    assert_eq!(iopoll["pollwise"]["wait_mode"], "interrupt");
    let wait = iopoll["pollwise"]["wait"].as_str().unwrap();
    assert!(wait.starts_with("kernel poll in io_uring_enter"), "{wait}");
    assert!(irq["pollwise"].get("ring").is_none());
    // No wake-up on a polled ring: its latency is below interrupts', at more CPU.
    assert!(p50(iopoll) < p50(irq), "{} {}", p50(iopoll), p50(irq));
    assert!(
        iopoll["pollwise"]["cpu_us_per_io"].as_f64() > irq["pollwise"]["cpu_us_per_io"].as_f64()
    );
    for m in ["khybrid", "dpas"] {
        let j = job(&v, m);
        assert!(j["read"]["total_ios"].as_u64().unwrap() > 1000, "{m}");
        assert!(j["pollwise"]["beliefs"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with(m)));
    }
    // The same platform without the cost refuses a polled job, naming the field.
    usage_error(
        &[
            "run",
            "--ioengine=sim",
            "--platform=nvme-baremetal",
            "--hipri",
            "--runtime=10ms",
        ],
        &["iopoll_ns"],
    );
    // HYBRID_IOPOLL's sleep inside the kernel is not modelled: refused, not run as IOPOLL.
    let (code, _, err) = pollwise(&[
        "compare",
        "--ioengine=sim",
        &plat,
        "--modes=hybrid_iopoll",
        "--runtime=100ms",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hybrid_iopoll"), "{err}");
}

#[test]
fn run_names_what_a_mode_became_on_an_iopoll_ring() {
    let d = common::tempdir();
    let plat = format!("--platform={}", polled_platform(d.path()));
    let (code, out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        &plat,
        "--hipri",
        "--mode=poll",
        "--runtime=50ms",
    ]);
    assert_eq!(code, 0, "{err}");
    // pollwise's block under fio's report: the mode, then what it became on the ring.
    let mode = out
        .lines()
        .position(|l| l.contains("mode=poll"))
        .expect(&out);
    let ring = out.lines().nth(mode + 1).unwrap();
    assert!(
        ring.contains("ring       : IOPOLL: the wait is a spin of non-blocking io_uring_enter"),
        "{out}"
    );
}

#[test]
fn advise_counts_kernel_polling_among_its_candidates_when_the_platform_has_its_cost() {
    let d = common::tempdir();
    let plat = format!("--platform={}", polled_platform(d.path()));
    let v = json_of(&[
        "advise",
        "--ioengine=sim",
        &plat,
        "--time=4s",
        "--output-format=json",
    ]);
    let a = &v["advise"];
    let modes: Vec<&str> = a["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["mode"].as_str().unwrap())
        .collect();
    assert!(modes.contains(&"iopoll"), "{modes:?}");
    let notes = a["notes"].to_string();
    assert!(notes.contains("kernel polled I/O (iopoll"), "{notes}");
    // Without the cost it is not a candidate, and the note says why.
    let v = json_of(&[
        "advise",
        "--ioengine=sim",
        "--platform=nvme-baremetal",
        "--time=4s",
        "--output-format=json",
    ]);
    let cells = v["advise"]["cells"].to_string();
    assert!(!cells.contains("iopoll"));
    assert!(v["advise"]["notes"].to_string().contains("no iopoll_ns"));
}
