//! fio's minimum rates (`ratemin`, `rate_iops_min`, `ratecycle`) through the command, on real
//! temp files, as fio 3.33 does them: a job that falls below its minimum over a cycle (looked at
//! from 2 s after its start) fails with fio's line and exit 1; one that keeps it runs to its end;
//! a minimum above the job's own cap is refused before anything runs, as fio refuses it.
//!
//! And fio's request priorities (`prio`, `prioclass`, `cmdprio_percentage`, `cmdprio_class`,
//! `cmdprio`, `cmdprio_bssplit`, `log_prio`) on io_uring and libaio: each request's priority is
//! the one its log line names, fio's JSON splits completion latencies by priority (`prios`),
//! and what fio refuses is refused.

mod common;

use common::{json_of, pollwise, tempdir, usage_error};

#[test]
fn a_job_below_its_minimum_rate_fails_as_fio_fails_it() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("slow.dat").display());
    // 4 KiB every 50 ms is about 80 KiB/s (fio 3.33, the same options: "slow: rate_min=1048576B/s
    // not met, got 81269B/s", exit 1, after about 3 s).
    let t = std::time::Instant::now();
    let (code, _out, err) = pollwise(&[
        "run",
        "--name=slow",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--thinktime=50ms",
        "--ratemin=1m",
        "--runtime=8",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("slow: rate_min=1048576B/s not met, got "),
        "{err}"
    );
    // Not before fio's 2 s settle and its first cycle, and well before the runtime.
    let took = t.elapsed().as_secs_f64();
    assert!((2.9..7.0).contains(&took), "failed after {took:.1} s");
    // The I/O rate the same way (fio: "slow: rate_iops_min=100 not met, got 17 IOPS").
    let (code, _out, err) = pollwise(&[
        "run",
        "--name=slow",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--thinktime=50ms",
        "--rate_iops_min=100",
        "--rate_cycle=500",
        "--runtime=8",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("slow: rate_iops_min=100 not met, got "),
        "{err}"
    );
}

#[test]
fn a_job_that_keeps_its_minimum_runs_to_its_end() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("ok.dat").display());
    // Paced at 1 MiB/s with a 900 KiB/s minimum: 4 MiB in about 4 s, no failure (fio 3.33 alike).
    let v = json_of(&[
        "run",
        "--name=ok",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--rate=1m",
        "--ratemin=900k",
        "--runtime=10",
        "--output-format=json",
    ]);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 4 << 20, "{v}");
    assert_eq!(v["jobs"][0]["error"], 0, "{v}");
}

#[test]
fn the_minimum_is_looked_at_when_a_request_completes_as_fio() {
    // fio's examples/1mbs_clients.fio, one client: 1250 B/s in 4 KiB reads is one read every
    // 3.3 s; fio looks at the rate after each I/O, so the second read (after the 2 s settle) is
    // only the baseline and no look finds a whole silent cycle: fio 3.33 reads 8192 bytes in
    // 5 s and does not fail. A check on a timer would have failed the job at 3 s.
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("c.dat").display());
    let v = json_of(&[
        "run",
        "--name=file1",
        &file,
        "--size=8m",
        "--rw=read",
        "--direct=0",
        "--bs=4k",
        "--rate=1250",
        "--ratemin=1024",
        "--runtime=5",
        "--output-format=json",
    ]);
    assert_eq!(v["jobs"][0]["error"], 0, "{v}");
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 8192, "{v}");
}

#[test]
fn a_minimum_above_the_cap_is_refused_as_fio_refuses_it() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("r.dat").display());
    // fio 3.33: "fio: minimum rate exceeds rate, ddir 0", exit 1, before any I/O.
    usage_error(
        &["run", &file, "--size=1m", "--rate=100k", "--ratemin=1m"],
        &["minimum rate exceeds rate"],
    );
    usage_error(
        &[
            "run",
            &file,
            "--size=1m",
            "--rate_iops=10",
            "--rate_iops_min=20",
        ],
        &["minimum rate exceeds rate"],
    );
}

/// The last column of each line of `path`, counted.
fn prio_column(path: &std::path::Path) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        *m.entry(l.rsplit(", ").next().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

#[test]
fn cmdprio_percentage_gives_a_share_of_requests_their_priority_as_fio() {
    for engine in ["libaio", "io_uring"] {
        let d = tempdir();
        let file = format!("--filename={}", d.path().join("p.dat").display());
        let log = format!("--write_lat_log={}", d.path().join("prio").display());
        // fio's examples/cmdprio-percentage.fio: idle by default, 20% real-time.
        let v = json_of(&[
            "run",
            "--name=randread",
            &file,
            &format!("--ioengine={engine}"),
            "--size=4m",
            "--bs=16k",
            "--rw=randread",
            "--iodepth=8",
            "--prioclass=3",
            "--cmdprio_percentage=20",
            "--cmdprio_class=1",
            &log,
            "--log_prio=1",
            "--output-format=json",
        ]);
        let r = &v["jobs"][0]["read"];
        assert_eq!(r["total_ios"], 256, "{engine}");
        // fio's shape: the default first, then the request priority, each with its clat.
        let prios = r["prios"]
            .as_array()
            .unwrap_or_else(|| panic!("{engine}: {r}"));
        assert_eq!(prios.len(), 2, "{engine}: {prios:?}");
        assert_eq!(
            (&prios[0]["prioclass"], &prios[0]["prio"]),
            (&3.into(), &0.into())
        );
        assert_eq!(
            (&prios[1]["prioclass"], &prios[1]["prio"]),
            (&1.into(), &0.into())
        );
        let n: Vec<u64> = prios
            .iter()
            .map(|p| p["clat_ns"]["N"].as_u64().unwrap())
            .collect();
        assert_eq!(n[0] + n[1], 256, "{engine}");
        assert!(
            (20..110).contains(&n[1]),
            "{engine}: {n:?} real-time of 256"
        );
        assert!(
            prios[1]["clat_ns"]["percentile"]["50.000000"]
                .as_u64()
                .unwrap()
                > 0
        );
        // The log names each request's priority, and the counts are the JSON's.
        let col = prio_column(&d.path().join("prio_clat.1.log"));
        assert_eq!(col.get("0x6000"), Some(&n[0]), "{engine}: {col:?}");
        assert_eq!(col.get("0x2000"), Some(&n[1]), "{engine}: {col:?}");
        assert_eq!(col.len(), 2, "{engine}: {col:?}");
    }
    // fio's text: a latency line and a percentile table per priority, at fio's places.
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("t.dat").display());
    let (code, out, err) = pollwise(&[
        "run",
        "--name=t",
        &file,
        "--ioengine=libaio",
        "--size=2m",
        "--bs=16k",
        "--rw=randread",
        "--iodepth=4",
        "--prioclass=3",
        "--cmdprio_percentage=20",
    ]);
    assert_eq!(code, 0, "{err}");
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{out}"));
    assert!(
        at("    clat prio 3/0 (") < at("    clat prio 1/0 ("),
        "{out}"
    );
    assert!(
        at("    clat prio 1/0 (") < at("    clat percentiles"),
        "{out}"
    );
    assert!(
        at("    clat percentiles") < at("% of IOs) percentiles"),
        "{out}"
    );
}

#[test]
fn without_log_prio_the_column_says_real_time_or_not_as_fio() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("p.dat").display());
    let log = format!("--write_lat_log={}", d.path().join("rt").display());
    let v = json_of(&[
        "run",
        "--name=r",
        &file,
        "--ioengine=libaio",
        "--size=2m",
        "--bs=16k",
        "--rw=randread",
        "--iodepth=4",
        "--cmdprio_percentage=50",
        &log,
        "--output-format=json",
    ]);
    let prios = v["jobs"][0]["read"]["prios"].as_array().unwrap().clone();
    // No prio/prioclass: the default is 0 (fio's 0/0), the others real-time (fio's default
    // cmdprio_class).
    assert_eq!(prios[0]["prioclass"], 0);
    assert_eq!(prios[1]["prioclass"], 1);
    let col = prio_column(&d.path().join("rt_lat.1.log"));
    assert_eq!(col.get("1").copied(), prios[1]["clat_ns"]["N"].as_u64());
    assert_eq!(col.get("0").copied(), prios[0]["clat_ns"]["N"].as_u64());
}

#[test]
fn cmdprio_bssplit_gives_each_block_size_its_priorities() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("b.dat").display());
    let log = format!("--write_lat_log={}", d.path().join("bs").display());
    // Every 4k read real-time level 3, no 8k read any: the log pairs each size with its own.
    json_of(&[
        "run",
        "--name=split",
        &file,
        "--ioengine=io_uring",
        "--size=4m",
        "--rw=randread",
        "--bssplit=4k/50:8k/50",
        "--cmdprio_bssplit=4k/100/1/3:8k/0",
        &log,
        "--log_prio=1",
        "--output-format=json",
    ]);
    let text = std::fs::read_to_string(d.path().join("bs_clat.1.log")).unwrap();
    let mut sizes = std::collections::BTreeSet::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(", ").collect();
        let want = if f[3] == "4096" { "0x2003" } else { "0x0000" };
        assert_eq!(f[4], want, "{l}");
        sizes.insert(f[3].to_string());
    }
    assert_eq!(sizes.len(), 2, "both sizes ran: {sizes:?}");
}

#[test]
fn what_fio_refuses_of_priorities_is_refused() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("r.dat").display());
    let f = file.as_str();
    // cmdprio options are io_uring's and libaio's engine options in fio.
    usage_error(
        &[
            "run",
            f,
            "--size=1m",
            "--ioengine=psync",
            "--cmdprio_percentage=20",
        ],
        &["cmdprio", "psync"],
    );
    usage_error(
        &[
            "run",
            f,
            "--size=1m",
            "--ioengine=libaio",
            "--cmdprio_percentage=20",
            "--cmdprio_bssplit=4k/10",
        ],
        &["mutually exclusive"],
    );
    usage_error(
        &[
            "run",
            f,
            "--size=1m",
            "--ioengine=libaio",
            "--cmdprio_bssplit=4k/60/1/0:4k/50/3/0",
        ],
        &["exceeds 100"],
    );
    usage_error(&["run", f, "--size=1m", "--prioclass=4"], &["prioclass"]);
}

#[test]
fn a_mixed_random_split_by_direction_is_refused_unless_fio_and_pollwise_agree() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("s.dat").display());
    let base = [
        "run",
        "--name=j",
        file.as_str(),
        "--size=8m",
        "--rw=randrw",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=16",
        "--output-format=json",
    ];
    let with = |extra: &[&'static str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a
    };
    // fio 3.33 ends this job (examples/cmdprio-bssplit.fio's first) after 5439488 of 8 MiB,
    // by its random map's rule: refused, naming the way out.
    usage_error(
        &with(&["--bssplit=64k/40:1024k/60,1024k/100"]),
        &["bssplit", "norandommap", "5.2 of 8 MiB"],
    );
    // With norandommap both end it by its size (fio 3.33: 8585216 bytes): at least 8 MiB,
    // less than one more 1 MiB request.
    let v = json_of(&with(&[
        "--bssplit=64k/40:1024k/60,1024k/100",
        "--norandommap",
    ]));
    let j = &v["jobs"][0];
    let moved = j["read"]["io_bytes"].as_u64().unwrap() + j["write"]["io_bytes"].as_u64().unwrap();
    assert!(((8 << 20)..(9 << 20)).contains(&moved), "{moved}");
    // The same sizes both ways: exactly the size (fio 3.33: 8388608).
    let v = json_of(&with(&["--bssplit=64k/40:1024k/60"]));
    let j = &v["jobs"][0];
    let moved = j["read"]["io_bytes"].as_u64().unwrap() + j["write"]["io_bytes"].as_u64().unwrap();
    assert_eq!(moved, 8 << 20);
}
