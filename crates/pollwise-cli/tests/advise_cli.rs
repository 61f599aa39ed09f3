//! `pollwise advise`: options through the table, deterministic figures on a modelled platform,
//! and recommendations that are the full sweep's best.

mod common;

use common::{json_of, pollwise, tiny_platform, usage_error};
use serde_json::Value;

fn advise(platform: &str, extra: &[&str]) -> Value {
    let p = format!("--platform={platform}");
    let mut args = vec![
        "advise",
        "--ioengine=sim",
        &p,
        "--time=600s",
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    json_of(&args)
}

#[test]
fn help_exits_0_and_typos_are_caught() {
    let (code, out, _) = pollwise(&["advise", "--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("--latency_target") && out.contains("--time") && out.contains("--plot"),
        "{out}"
    );
    usage_error(
        &["advise", "--latency_targt=p99:1ms", "--ioengine=sim"],
        &["latency_target"],
    );
    usage_error(
        &["advise", "--ioengine=sim", "--latency_target=99:1ms"],
        &["--latency_target=99:1ms"],
    );
    usage_error(
        &["advise", "--ioengine=sim", "--mode=poll"],
        &["--mode", "advise"],
    );
    usage_error(&["advise"], &["--filename"]);
}

fn f(v: &Value, k: &str) -> f64 {
    v["model"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("no {k} in {v}"))
}

#[test]
fn same_figures_twice_and_the_picks_are_the_sweeps_best() {
    let dir = tempfile::tempdir().unwrap();
    let p = tiny_platform(dir.path());
    let a = advise(&p, &["--latency_target=p99:400us"]);
    let b = advise(&p, &["--latency_target=p99:400us"]);
    let (a, b) = (&a["advise"], &b["advise"]);
    // Determinism: the same figures, bit for bit (only the phases' wall times may differ).
    for k in ["cells", "recommendations", "frontier"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    // Nothing was cut: the full sweep, 2 thread counts x 4 depths x 3 loads x 5 modes.
    assert_eq!(a["cells_cut"], 0);
    let cells = a["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 4 * 3 * 5);
    assert!(cells.iter().all(|c| f(c, "iops") > 0.0));
    // Each objective's pick is the best cell of the whole sweep, found here independently.
    let rec = &a["recommendations"];
    let lowest = cells
        .iter()
        .map(|c| f(c, "p50_ns"))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(f(&rec["lowest_latency"], "p50_ns"), lowest);
    let cheapest = cells
        .iter()
        .filter(|c| f(c, "target_pct_ns") <= 400_000.0)
        .map(|c| f(c, "cpu_us_per_io"))
        .fold(f64::INFINITY, f64::min);
    assert!(cheapest.is_finite());
    let pick = &rec["least_cpu_within_target"];
    assert_eq!(f(pick, "cpu_us_per_io"), cheapest);
    assert!(f(pick, "target_pct_ns") <= 400_000.0);
    let most = cells
        .iter()
        .filter(|c| c["threads"].as_u64().unwrap() > 1)
        .map(|c| f(c, "iops"))
        .fold(0.0, f64::max);
    assert_eq!(f(&rec["best_throughput_under_contention"], "iops"), most);
    // The pick's figures are what a plain run of that cell on the platform gives.
    let mut args = vec![
        "run".to_string(),
        "--ioengine=sim".into(),
        format!("--platform={p}"),
        format!("--mode={}", pick["mode"].as_str().unwrap()),
        format!("--iodepth={}", pick["iodepth"]),
        format!("--numjobs={}", pick["threads"]),
        "--runtime=5ms".into(),
        "--ramp_time=1ms".into(),
        "--time_based=1".into(),
        "--group_reporting=1".into(),
        "--output-format=json".into(),
    ];
    if let Some(r) = pick["rate_iops"].as_u64() {
        args.push(format!("--rate_iops={r}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json_of(&args);
    let run_iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
    let iops = f(pick, "iops");
    assert!(
        (run_iops - iops).abs() <= 0.01 * iops,
        "run: {run_iops} IOPS; advise: {iops}"
    );
}

#[test]
fn a_short_time_cuts_the_sweep_and_says_so() {
    // nvme-baremetal's 8 cores make 16-thread cells: far more than 3 s of modelling.
    let t = std::time::Instant::now();
    let v = json_of(&[
        "advise",
        "--ioengine=sim",
        "--platform=nvme-baremetal",
        "--time=3s",
        "--output-format=json",
    ]);
    let a = &v["advise"];
    assert!(a["cells_modelled"].as_u64().unwrap() > 0, "{a}");
    assert!(a["cells_cut"].as_u64().unwrap() > 0, "{a}");
    assert!(a["notes"].to_string().contains("the sweep was cut"), "{a}");
    // Within its time, with room for a loaded machine (one cell may overrun the estimate).
    assert!(t.elapsed().as_secs_f64() < 10.0, "{:?}", t.elapsed());
    // A second leaves no time for one cell: one line naming the fix, not an empty report.
    usage_error(
        &[
            "advise",
            "--ioengine=sim",
            "--platform=nvme-baremetal",
            "--time=1s",
        ],
        &["--time=1s", "give --time="],
    );
}

#[test]
fn scenarios_take_platform_or_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = tiny_platform(dir.path());
    // hybrid-contention runs on the model; its thread counts follow the platform's cores (1).
    let v = json_of(&[
        "scenario",
        "hybrid-contention",
        "--ioengine=sim",
        &format!("--platform={p}"),
        "--modes=poll,hybrid",
        "--runtime=2ms",
        "--ramp_time=1ms",
        "--output-format=json",
    ]);
    let mut threads: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    threads.dedup();
    assert_eq!(threads, [1, 2, 4]);
    for name in ["shared-poller", "fairness", "idle-sources", "slow-handler"] {
        usage_error(&["scenario", name, "--platform=optane"], &["--platform"]);
    }
}

#[test]
fn sigint_ends_the_sweep_and_prints_what_it_found() {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "advise",
            "--ioengine=sim",
            "--platform=nvme-baremetal",
            "--time=120s",
            "--output-format=json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough to model a few cells, far from the 120 s the sweep would take.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let (code, stdout) = (out.status.code(), String::from_utf8_lossy(&out.stdout));
    assert_eq!(code, Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["interrupted"], "SIGINT");
    assert!(
        v["advise"]["cells_modelled"].as_u64().unwrap() > 0,
        "{stdout}"
    );
    assert!(v["advise"]["cells_cut"].as_u64().unwrap() > 0, "{stdout}");
}

/// On a real file the lowest-latency pick is decided by real runs among the cells the model
/// puts close to it: every such cell ran for real, and the pick is the one the rule names
/// (found here again from the report's own figures).
#[test]
fn real_runs_decide_among_the_close_cells_for_lowest_latency() {
    let (_dir, file) = common::temp_file("f.dat");
    // Written, not sparse: reads of a hole never reach the disk.
    std::fs::write(&file, vec![0xa5u8; 32 << 20]).unwrap();
    let name = format!("--filename={}", file.display());
    let v = json_of(&["advise", &name, "--time=12s", "--output-format=json"]);
    let a = &v["advise"];
    let rec = &a["recommendations"]["lowest_latency"];
    let notes: Vec<&str> = a["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    // The note on the close cells' real runs (not the one saying the model missed its pick,
    // which also starts with the objective's words).
    let close = |n: &&&str| {
        n.starts_with("lowest latency:")
            && (n.contains("the pick follows the real runs")
                || n.contains("the model's pick stands"))
    };
    let Some(note) = notes.iter().find(close) else {
        // No cell of another mode came within 10% in the model, or none ran for real: then the
        // pick was checked alone, and where the model missed it (a loaded machine), the real
        // run decided and the recommendation carries its figures.
        assert!(
            notes.iter().any(|n| n.starts_with("no real checks")) || !rec["real"].is_null(),
            "{notes:?}"
        );
        if notes
            .iter()
            .any(|n| n.starts_with("lowest latency: the model misses its pick"))
        {
            assert_eq!(rec["decided_by"], "real runs", "{notes:?}: {rec}");
        }
        return;
    };
    let real = |c: &Value, k: &str| c["real"][k].as_f64().unwrap();
    // The cells at the pick's depth, threads and load that ran for real.
    let same = |c: &&Value| {
        c["iodepth"] == rec["iodepth"]
            && c["threads"] == rec["threads"]
            && c["rate_iops"] == rec["rate_iops"]
            && !c["real"].is_null()
    };
    let cells: Vec<&Value> = a["cells"].as_array().unwrap().iter().filter(same).collect();
    assert!(cells.len() >= 2, "{note}: {cells:?}");
    if note.contains("the pick follows the real runs") {
        // The pick is ahead of the model's first by the rule: its real p50 is the lowest of
        // those ahead, so no checked cell has a lower real p50 and also leads it on p99.
        let p50 = real(rec, "p50_ns");
        for c in &cells {
            assert!(
                real(c, "p50_ns") >= p50 || real(c, "p99_ns") >= real(rec, "p99_ns") * 0.95,
                "{note}: {c} beats the pick {rec}"
            );
        }
    } else {
        assert!(note.contains("the model's pick stands"), "{note}");
        // No checked cell is ahead of the pick by more than 3% on p50.
        let p50 = real(rec, "p50_ns");
        for c in &cells {
            assert!(real(c, "p50_ns") >= p50 * 0.97, "{note}: {c} against {rec}");
        }
    }
}

/// A 32 MiB file written in a fresh temp dir (keep the dir: dropping it removes the file).
fn written_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, file) = common::temp_file("f.dat");
    // Written, not sparse: reads of a hole never reach the disk.
    std::fs::write(&file, vec![0xa5u8; 32 << 20]).unwrap();
    (dir, file)
}

fn cells(a: &Value) -> &Vec<Value> {
    a["cells"].as_array().unwrap()
}

/// The job given is the job modelled and checked: its block size reaches the calibration, every
/// modelled cell and every real check (each did requests of that size), and its depth and
/// threads are the only ones swept.
#[test]
fn the_jobs_block_size_depth_and_threads_are_what_is_modelled_and_checked() {
    let (_dir, file) = written_file();
    let name = format!("--filename={}", file.display());
    let v = json_of(&[
        "advise",
        &name,
        "--bs=128k",
        "--iodepth=2",
        "--numjobs=1",
        "--time=10s",
        "--output-format=json",
    ]);
    let a = &v["advise"];
    assert_eq!(a["job"]["bs"], 128 << 10, "{}", a["job"]);
    assert_eq!(a["job"]["ioengine"], "io_uring");
    assert_eq!(a["calibration"]["bs"], 128 << 10, "{}", a["calibration"]);
    assert!(!cells(a).is_empty());
    let mut checked = 0;
    for c in cells(a) {
        assert_eq!(
            (c["iodepth"].as_u64(), c["threads"].as_u64()),
            (Some(2), Some(1)),
            "{c}"
        );
        assert_eq!(c["model"]["bytes_per_io"], 128 << 10, "{c}");
        if !c["real"].is_null() {
            checked += 1;
            assert_eq!(c["real"]["bytes_per_io"], 128 << 10, "{c}");
        }
    }
    let notes = a["notes"].to_string();
    assert!(checked > 0 || notes.contains("no real checks"), "{notes}");
    for (k, r) in a["recommendations"].as_object().unwrap() {
        if r.get("none").is_none() {
            assert_eq!(r["model"]["bytes_per_io"], 128 << 10, "{k}: {r}");
            assert!(r["decided_by"].is_string(), "{k}: {r}");
        }
    }
}

/// An engine the platform model has no queue for is run, not modelled as io_uring: every cell
/// is a real run of that engine, and real runs decide.
#[test]
fn an_engine_the_model_cannot_represent_is_run_not_replaced() {
    let (_dir, file) = written_file();
    let name = format!("--filename={}", file.display());
    for (engine, extra) in [
        ("libaio", name.as_str()),
        ("psync", name.as_str()),
        ("null", "--size=16m"),
    ] {
        let e = format!("--ioengine={engine}");
        let v = json_of(&[
            "advise",
            &e,
            extra,
            "--iodepth=1",
            "--numjobs=1",
            "--time=5s",
            "--output-format=json",
        ]);
        let a = &v["advise"];
        assert_eq!(a["job"]["ioengine"], engine, "{}", a["job"]);
        assert!(!cells(a).is_empty(), "{engine}: {a}");
        for c in cells(a) {
            assert!(c["model"].is_null(), "{engine}: {c}");
            assert!(c["real"]["iops"].as_f64().unwrap() > 0.0, "{engine}: {c}");
            assert_eq!(c["ioengine"], engine, "{c}");
            if engine == "psync" {
                // It does each request inside its system call: there is no wait to choose.
                assert_eq!(c["mode"], "interrupt", "{c}");
            }
        }
        let rec = &a["recommendations"]["lowest_latency"];
        assert_eq!(rec["decided_by"], "real runs", "{engine}: {rec}");
        assert!(
            a["notes"].to_string().contains("real runs decide"),
            "{engine}: {}",
            a["notes"]
        );
    }
}

/// A --time too short for anything to be modelled is a usage error of one line naming the
/// option and the fix, not an empty report that exits 0.
#[test]
fn too_short_a_time_fails_with_one_line() {
    let (_dir, file) = written_file();
    let name = format!("--filename={}", file.display());
    usage_error(
        &["advise", &name, "--time=1s"],
        &["--time=1s", "give --time="],
    );
}

/// `pollwise calibrate` times the requests it is given (4 KiB random reads by default), so a
/// platform file can be a job's; a size it cannot time is one line.
#[test]
fn calibrate_times_the_requests_it_is_given() {
    let (_dir, file) = written_file();
    let name = format!("--filename={}", file.display());
    let v = json_of(&["calibrate", &name, "--bs=64k", "--output-format=json"]);
    let c = &v["calibration"];
    assert_eq!(
        (c["bs"].as_u64(), c["rw"].as_str()),
        (Some(64 << 10), Some("randread")),
        "{c}"
    );
    let v = json_of(&["calibrate", &name, "--output-format=json"]);
    assert_eq!(v["calibration"]["bs"], 4096);
    usage_error(
        &["calibrate", &name, "--bs=100"],
        &["--bs=100", "e.g. --bs=4k"],
    );
    usage_error(
        &["calibrate", &name, "--rw=trim"],
        &["--rw=trim", "randread"],
    );
}
