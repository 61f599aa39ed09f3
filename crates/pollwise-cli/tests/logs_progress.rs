//! fio's logs (`--write_lat_log`, `--write_bw_log`, `--write_iops_log`, `--log_avg_msec`,
//! `--log_offset`) as fio writes them and fio's tools read them, and the progress output
//! (`--eta`, `--status-interval`).
//!
//! The comparisons with fio itself and fio2gnuplot run where fio is installed (`apt-get install
//! fio`); without it they say so and pass, unless POLLWISE_REQUIRE_FIO=1, when they fail.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{have, pollwise, temp_file, tempdir, usage_error};

/// The job both tools run: 4 KiB random O_DIRECT reads and writes on io_uring for 1 s.
fn job(f: &Path, log: &Path, extra: &[&str]) -> Vec<String> {
    let name = log.display().to_string();
    let mut v: Vec<String> = [
        "--name=j".to_string(),
        format!("--filename={}", f.display()),
        "--size=8M".into(),
        "--rw=randrw".into(),
        "--bs=4k".into(),
        "--ioengine=io_uring".into(),
        "--direct=1".into(),
        "--runtime=1".into(),
        "--time_based".into(),
        format!("--write_lat_log={name}"),
        format!("--write_bw_log={name}"),
        format!("--write_iops_log={name}"),
    ]
    .to_vec();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// A log's lines as numbers.
fn lines(p: &Path) -> Vec<Vec<u64>> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| {
            l.split(", ")
                .map(|x| x.parse().unwrap_or_else(|_| panic!("{p:?}: '{l}'")))
                .collect()
        })
        .collect()
}

const KINDS: [&str; 5] = ["lat", "clat", "slat", "bw", "iops"];

fn run_pollwise(args: &[String]) {
    let a: Vec<&str> = std::iter::once("run")
        .chain(args.iter().map(String::as_str))
        .collect();
    let (code, _out, err) = pollwise(&a);
    assert_eq!(code, 0, "{a:?}: {err}");
}

fn run_fio(args: &[String]) {
    let o = Command::new("fio")
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("run fio");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Checks what a per-I/O log set (from either tool) must hold: 5 columns, ns latencies with
/// lat = slat + clat in distribution, bw = bytes x 10^6 / clat per line, iops 1 per I/O, both
/// directions, bs 4096. Returns the median lat.
fn check_per_io(base: &str, dir: &Path, who: &str) -> u64 {
    let get = |k: &str| lines(&dir.join(format!("{base}_{k}.1.log")));
    let logs: BTreeMap<&str, Vec<Vec<u64>>> = KINDS.iter().map(|k| (*k, get(k))).collect();
    for (k, l) in &logs {
        assert!(l.len() > 50, "{who} {k}: {} lines", l.len());
        for x in l {
            assert_eq!(x.len(), 5, "{who} {k}: {x:?}");
            assert!(x[2] <= 1, "{who} {k}: ddir {x:?}");
            assert_eq!(x[3], 4096, "{who} {k}: bs {x:?}");
            assert_eq!(x[4], 0, "{who} {k}: prio {x:?}");
        }
        assert!(
            l.iter().any(|x| x[2] == 0) && l.iter().any(|x| x[2] == 1),
            "{who} {k}"
        );
        // Times are ms within the 1 s run (a slat may be stamped a little before 0 by nobody).
        assert!(l.iter().all(|x| x[0] <= 1500), "{who} {k}");
    }
    let n = logs["lat"].len();
    assert_eq!(logs["clat"].len(), n, "{who}");
    assert_eq!(logs["bw"].len(), n, "{who}");
    assert!(logs["iops"].iter().all(|x| x[1] == 1), "{who}");
    // bw and clat lines are the same I/Os in the same order: fio's per-I/O bandwidth.
    for (b, c) in logs["bw"].iter().zip(&logs["clat"]) {
        assert_eq!(
            b[1],
            4096 * 1_000_000 / c[1].max(1),
            "{who}: bw {b:?} clat {c:?}"
        );
        // pollwise stamps both lines from one clock read (the ms may still round apart); fio
        // reads the clock for each, and on a loaded machine it was seen 4 ms apart.
        let apart = if who == "fio" { 50 } else { 1 };
        assert!(b[0].abs_diff(c[0]) <= apart, "{who}: bw {b:?} clat {c:?}");
    }
    let median = |k: &str| {
        let mut v: Vec<u64> = logs[k].iter().map(|x| x[1]).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    // ns: a 4 KiB O_DIRECT I/O takes between 1 us and 1 s.
    let lat = median("lat");
    assert!(
        (1_000..1_000_000_000).contains(&lat),
        "{who}: lat p50 {lat}"
    );
    assert!(median("clat") <= lat && median("slat") <= lat, "{who}");
    lat
}

#[test]
fn per_io_logs_have_fios_format_and_units() {
    let (d, f) = temp_file("data");
    let pw = d.path().join("pw");
    run_pollwise(&job(&f, &pw, &[]));
    let ours = check_per_io("pw", d.path(), "pollwise");
    if !have("fio") {
        return;
    }
    let fio = d.path().join("fio");
    run_fio(&job(&f, &fio, &[]));
    let theirs = check_per_io("fio", d.path(), "fio");
    // Same job, same file, same units: the medians are of one order of magnitude.
    assert!(
        ours < theirs * 10 && theirs < ours * 10,
        "lat p50: pollwise {ours} ns, fio {theirs} ns"
    );
}

#[test]
fn averaged_logs_with_offsets_have_fios_format() {
    let (d, f) = temp_file("data");
    let extra = ["--log_avg_msec=100", "--log_offset=1"];
    let check = |base: &str, who: &str| {
        for k in KINDS {
            let l = lines(&d.path().join(format!("{base}_{k}.1.log")));
            // One line per direction per 100 ms window over 1 s.
            assert!((12..=24).contains(&l.len()), "{who} {k}: {} lines", l.len());
            for x in &l {
                assert_eq!(x.len(), 6, "{who} {k}: {x:?}");
                assert_eq!(&x[3..], [0, 0, 0], "{who} {k}: bs, offset, prio {x:?}");
            }
            // Each direction's lines come about every 100 ms (fio stamps a window when it
            // closes it, a little after its end; pollwise at its end); the last window may be
            // shorter.
            for ddir in 0..2 {
                let t: Vec<u64> = l.iter().filter(|x| x[2] == ddir).map(|x| x[0]).collect();
                assert!(t.len() >= 6, "{who} {k}: {t:?}");
                let gaps = &t
                    .windows(2)
                    .map(|w| w[1] as i64 - w[0] as i64)
                    .collect::<Vec<_>>();
                let inner = &gaps[..gaps.len() - 1];
                if who == "fio" {
                    // fio's stat thread stamps a window when it gets the CPU: on a busy
                    // machine a window can close late.
                    assert!(
                        inner.iter().all(|g| (50..=400).contains(g)),
                        "{who} {k}: {t:?}"
                    );
                } else {
                    // pollwise stamps each window at its end; a window in which no I/O
                    // completed (a stall of the machine) has no latency line.
                    assert!(
                        t[..t.len() - 1].iter().all(|x| x % 100 == 0)
                            && inner.iter().all(|g| *g >= 100),
                        "{who} {k}: {t:?}"
                    );
                }
            }
            if k == "iops" {
                // Per second over the window: a disk doing I/O does more than 10 a second.
                assert!(
                    l.iter().filter(|x| x[1] > 10).count() > l.len() / 2,
                    "{who}"
                );
            }
        }
        let bw = lines(&d.path().join(format!("{base}_bw.1.log")));
        let iops = lines(&d.path().join(format!("{base}_iops.1.log")));
        // KiB/s = 4 x I/O per second, window by window (within 1%: fio rounds each of its
        // windows on its own).
        for (b, i) in bw.iter().zip(&iops) {
            assert!(
                b[1].abs_diff(4 * i[1]) <= 4.max(4 * i[1] / 100),
                "{who}: bw {b:?} iops {i:?}"
            );
        }
    };
    run_pollwise(&job(&f, &d.path().join("pw"), &extra));
    check("pw", "pollwise");
    if have("fio") {
        run_fio(&job(&f, &d.path().join("fio"), &extra));
        check("fio", "fio");
    }
}

#[test]
fn fio2gnuplot_reads_pollwises_logs() {
    if !have("fio2gnuplot") {
        return;
    }
    let (d, f) = temp_file("data");
    let logs = d.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    run_pollwise(&job(&f, &logs.join("pw"), &["--numjobs=2"]));
    // numjobs=2: threads 1 and 2 each write their own files.
    for n in [1, 2] {
        assert!(logs.join(format!("pw_bw.{n}.log")).exists());
    }
    for (flag, out) in [("-b", "bw"), ("-i", "iops")] {
        let out_dir = d.path().join(out);
        let o = Command::new("fio2gnuplot")
            .args([flag, "-d", out_dir.to_str().unwrap()])
            .current_dir(&logs)
            .output()
            .expect("run fio2gnuplot");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("pw_") && !text.contains("Error"), "{text}");
        // It read both files' lines into its data file and wrote a gnuplot script.
        let data = std::fs::read_to_string(out_dir.join("result")).unwrap();
        assert!(
            data.lines().filter(|l| l.starts_with("0 ")).count() > 50,
            "{data:.300}"
        );
        assert!(data.lines().any(|l| l.starts_with("1 ")), "{data:.300}");
        assert!(std::fs::read_dir(&out_dir).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".gnuplot")));
    }
}

#[test]
fn log_options_are_checked() {
    usage_error(
        &[
            "run",
            "--ioengine=sim",
            "--runtime=100ms",
            "--write_bw_log=/nonexistent-pollwise-dir/x",
        ],
        &["--write_bw_log", "/nonexistent-pollwise-dir/x_bw.1.log"],
    );
    usage_error(
        &["compare", "--write_lat_log=x"],
        &["--write_lat_log", "pollwise run"],
    );
    usage_error(&["run", "--log_avg_msec=-1"], &["--log_avg_msec"]);
    usage_error(&["run", "--eta=sometimes"], &["--eta"]);
}

#[test]
fn a_bare_log_flag_uses_the_job_name() {
    let d = tempdir();
    let name = d.path().join("myjob").display().to_string();
    let (code, _, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--runtime=200ms",
        &format!("--name={name}"),
        "--write_iops_log",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!lines(Path::new(&format!("{name}_iops.1.log"))).is_empty());
}

#[test]
fn eta_line_on_stderr() {
    let sim = ["run", "--ioengine=sim", "--runtime=2500ms", "--time_based"];
    let (code, _out, err) = pollwise(&[&sim[..], &["--eta=always"]].concat());
    assert_eq!(code, 0, "{err}");
    // Redrawn in place with '\r', about once a second, ended by a newline.
    let drawn: Vec<&str> = err
        .split(['\r', '\n'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(drawn.len() >= 2, "{err:?}");
    for l in &drawn {
        assert!(l.starts_with("Jobs: "), "{l}");
        assert!(l.contains("[r(1)]") || l.contains("[_(1)]"), "{l}");
        assert!(l.contains(" IOPS][eta ") && l.ends_with("s]"), "{l}");
    }
    // The simulated device does I/O: some line shows a non-zero rate.
    assert!(drawn.iter().any(|l| !l.contains("[r=0 IOPS]")), "{err:?}");
    assert!(err.ends_with('\n'), "{err:?}");
    // Not a terminal: auto prints nothing, never nothing.
    for eta in ["--eta=auto", "--eta=never"] {
        let (code, _out, err) = pollwise(&[&sim[..], &[eta]].concat());
        assert_eq!(code, 0);
        assert!(!err.contains("Jobs:"), "{eta}: {err}");
    }
}

#[test]
fn status_interval_prints_interim_reports() {
    let (code, out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--runtime=3",
        "--time_based",
        "--status-interval=1",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {out:.500}"));
    // At 1 s and 2 s (and perhaps 3 s), then the final report.
    assert!(docs.len() >= 3, "{} reports", docs.len());
    let ios: Vec<u64> = docs
        .iter()
        .map(|d| d["jobs"][0]["read"]["total_ios"].as_u64().unwrap())
        .collect();
    // Each report holds the run so far: never less I/O than the one before (an interim report
    // that falls at the very end of the run may equal the final one), the final more than the
    // first.
    assert!(ios.windows(2).all(|w| w[0] <= w[1]), "{ios:?}");
    assert!(ios[0] > 0 && ios[0] < *ios.last().unwrap(), "{ios:?}");
    // The final report alone has the machine's facts.
    assert!(docs.last().unwrap()["pollwise"].get("facts").is_some());
    assert!(docs[0]
        .get("pollwise")
        .and_then(|p| p.get("facts"))
        .is_none());
    // Normal output: the report's text more than once.
    let (code, out, _) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--runtime=2500ms",
        "--time_based",
        "--status-interval=1",
    ]);
    assert_eq!(code, 0);
    assert!(out.matches("read: IOPS=").count() >= 3, "{out}");
}

/// `--write_auto_log`: a line a second (and one for the rest), nine fields each, whose
/// completions add up to the run's and whose switches add up to auto's in the JSON.
#[test]
fn auto_log_has_a_line_a_second_that_adds_up() {
    let d = tempdir();
    let name = d.path().join("a").display().to_string();
    let arg = format!("--write_auto_log={name}");
    let out = common::json_of(&[
        "run",
        "--mode=auto",
        "--ioengine=sim",
        "--sim_latency=fixed:10us",
        "--runtime=2500ms",
        "--time_based",
        "--output-format=json",
        &arg,
    ]);
    let text = std::fs::read_to_string(format!("{name}_auto.1.log")).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(", ").collect()).collect();
    assert!((3..=4).contains(&rows.len()), "{text}");
    assert!(rows.iter().all(|r| r.len() == 9), "{text}");
    let num = |r: &Vec<&str>, i: usize| r[i].parse::<u64>().unwrap();
    assert!(
        rows.windows(2).all(|w| num(&w[1], 0) > num(&w[0], 0)),
        "{text}"
    );
    assert!(rows
        .iter()
        .all(|r| ["poll", "hybrid", "interrupt", "adaptive"].contains(&r[1])));
    let job = &out["jobs"][0];
    let done: u64 = rows.iter().map(|r| num(r, 8)).sum();
    let ios = job["read"]["total_ios"].as_u64().unwrap();
    // The log counts what auto reaped in the measured period: the engine's I/Os.
    assert!(done >= ios && done <= ios + 64, "{done} vs {ios}: {text}");
    let switches: u64 = rows.iter().map(|r| num(r, 2)).sum();
    assert_eq!(
        switches,
        job["pollwise"]["auto_switches"].as_u64().unwrap(),
        "{text}"
    );
}

#[test]
fn auto_log_needs_auto() {
    usage_error(
        &["run", "--mode=poll", "--ioengine=sim", "--write_auto_log=x"],
        &["--write_auto_log", "--mode=auto"],
    );
}
