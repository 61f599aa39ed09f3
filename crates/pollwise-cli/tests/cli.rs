//! The `pollwise` command end to end: bad input gets exit status 2 and one line naming the
//! cause and the fix; good input gets fio-shaped JSON.

mod common;

use common::{json_of, json_on_temp_file, pollwise, run_on_temp_file, temp_file, usage_error};

/// Runs `args` and checks: exit 2, one stderr line, containing every `needle`.

#[test]
fn bad_input_gets_exit_2_and_the_fix() {
    let (d, f) = temp_file("f.dat");
    let f = f.to_str().unwrap();
    let fname = format!("--filename={f}");
    let dir = format!("--filename={}", d.path().display());
    let missing = format!("--filename={}/no/such/dir/f", d.path().display());
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v = vec!["run".to_string(), fname.clone(), "--size=1M".into()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |extra: &[&str], needles: &[&str]| {
        let v = base(extra);
        let a: Vec<&str> = v.iter().map(|s| s.as_str()).collect();
        usage_error(&a, needles);
    };
    usage_error(
        &["run", &missing, "--size=1M"],
        &["does not exist", "mkdir -p"],
    );
    usage_error(
        &["run", &dir, "--size=1M"],
        &["is a directory", "name a file inside it"],
    );
    // A path that exists but cannot be opened for I/O: a unix socket.
    let sock = d.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    usage_error(
        &[
            "run",
            &format!("--filename={}", sock.display()),
            "--size=4k",
        ],
        &["cannot be opened for I/O", "name a file or a block device"],
    );
    let plain = d.path().join("plain");
    std::fs::write(&plain, b"x").unwrap();
    usage_error(
        &[
            "run",
            &format!("--filename={}/x", plain.display()),
            "--size=4k",
        ],
        &["is a file, not a directory"],
    );
    run(
        &["--bs=1000"],
        &["not a multiple of the logical block size", "--bs=4k"],
    );
    run(&["--bs=8k", "--size=4k"], &["smaller than --bs"]);
    run(
        &["--iodepth=0"],
        &["--iodepth=0 is out of range", "1 to 32768"],
    );
    run(&["--iodepth=100000"], &["out of range"]);
    run(&["--mode=spin"], &["unknown mode 'spin'", "interrupt"]);
    run(&["--rw=sideways"], &["unknown --rw=sideways", "randread"]);
    run(
        &["--runtime=0", "--time_based"],
        &["--time_based needs a --runtime"],
    );
    run(&["--runtime=-5s"], &["negative"]);
    run(&["--bs=4q"], &["is not a size", "4k"]);
    run(&["--hybrid_iopoll"], &["--hybrid_iopoll needs --hipri=1"]);
    run(&["--sqthread_poll_cpu=0"], &["needs --sqthread_poll=1"]);
    run(
        &["--sqthread_poll", "--sqthread_poll_cpu=4096"],
        &["names no online CPU"],
    );
    run(&["--hipri", "--direct=0"], &["--hipri needs --direct=1"]);
    run(
        &["--defer_taskrun", "--sqthread_poll"],
        &["cannot be combined"],
    );
    run(
        &["--iodepth=4", "--iodepth_batch_submit=8"],
        &["exceeds --iodepth"],
    );
    run(&["--frobnicate=3"], &["unknown option --frobnicate"]);
    run(
        &["--bs=1G", "--iodepth=1024"],
        &["more than half this machine's memory"],
    );
    run(
        &["--sqthread_poll", "--sqthread_idle=9999999999s"],
        &["too long"],
    );
    usage_error(
        &["scenario", "idle-sources", "--poll_idle_ms=99999999999999"],
        &["--poll_idle_ms", "too large"],
    );
    usage_error(
        &["scenario", "fairness", "--poller_depth=32768"],
        &["--poller_depth"],
    );
    run(&["--output-format=xml"], &["normal,json,json+,terse"]);
    usage_error(&["explode"], &["unknown command 'explode'"]);
    usage_error(&["scenario", "no-such-scenario"], &["unknown scenario"]);
    usage_error(&["compare", "--mode=poll"], &["--modes"]);
    usage_error(&["compare", "--modes=poll,spin"], &["unknown mode 'spin'"]);
    usage_error(&["compare", "--rounds=0"], &["--rounds must be at least 1"]);
}

#[test]
fn polled_io_on_this_disk_is_refused_clearly() {
    let (code, _out, err) =
        run_on_temp_file(&["--size=1M", "--hipri", "--runtime=2s", "--mode=poll"]);
    if code == 0 {
        // A disk with poll queues: polled I/O works, nothing to refuse.
        return;
    }
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("polled I/O (--hipri) is not supported for"),
        "{err}"
    );
    assert!(err.contains("nvme.poll_queues > 0"), "{err}");
    assert!(err.contains("run without --hipri"), "{err}");
}

#[test]
fn run_json_has_fio_fields() {
    let v = json_on_temp_file(&[
        "--size=4M",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=4",
        "--io_size=2M",
        "--mode",
        "poll",
        "--output-format",
        "json",
    ]);
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["total_ios"], 512);
    assert!(j["read"]["iops"].as_f64().unwrap() > 0.0);
    assert!(j["read"]["bw_bytes"].as_u64().unwrap() > 0);
    // fio's times: clat_ns holds completion latency or, where the engine measured only the
    // total, nothing (N 0, named under pollwise.not_measured); the percentiles then go to lat_ns.
    let r = &j["read"];
    let split = r["clat_ns"]["N"] == r["lat_ns"]["N"];
    let carrier = if split { "clat_ns" } else { "lat_ns" };
    if !split {
        assert_eq!(r["clat_ns"]["N"], 0, "{r}");
        assert!(j["pollwise"]["not_measured"]
            .as_array()
            .unwrap()
            .contains(&"clat_ns".into()));
    }
    let p = &r[carrier]["percentile"];
    let p50 = p["50.000000"].as_u64().unwrap();
    let p99 = p["99.000000"].as_u64().unwrap();
    assert!(p50 > 0 && p99 >= p50);
    assert!(p["99.990000"].as_u64().is_some());
    assert_eq!(j["pollwise"]["mode"], "poll");
    assert!(j["pollwise"]["polls"].as_u64().unwrap() >= 512);
    assert!(j["usr_cpu"].as_f64().is_some() && j["ctx"].as_u64().is_some());
}

#[test]
fn compare_reports_every_mode_as_a_job() {
    let (_d, f) = temp_file("f.dat");
    let v = json_of(&[
        "compare",
        &format!("--filename={}", f.display()),
        "--size=4M",
        "--runtime=400ms",
        "--rounds=2",
        "--warmup=0",
        "--output-format=json",
    ]);
    let jobs = v["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    let (code, help, _) = pollwise(&["help"]);
    assert_eq!(code, 0);
    for n in &names {
        assert!(help.contains(n), "mode {n} missing from help");
    }
    assert!(
        names.contains(&"interrupt") && names.contains(&"poll"),
        "{names:?}"
    );
    for j in jobs {
        assert!(j["read"]["iops"].as_f64().unwrap() > 0.0, "{j}");
        assert_eq!(j["pollwise"]["rounds"], 2);
        assert!(j["pollwise"]["cpu_us_per_io"].as_f64().unwrap() > 0.0);
        // The table's p50 column is lat's (medians over rounds): the JSON carries lat's
        // percentiles in lat_ns, within lat's range and in order.
        let lat = &j["read"]["lat_ns"];
        let p50 = lat["percentile"]["50.000000"].as_u64().expect("lat p50");
        let p99 = lat["percentile"]["99.000000"].as_u64().expect("lat p99");
        assert!(p50 >= lat["min"].as_u64().unwrap() && p99 <= lat["max"].as_u64().unwrap());
        assert!(p50 <= p99);
    }
}
