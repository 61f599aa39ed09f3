//! pollwise's output as fio's consumers read it: fio 3.33's JSON key paths, json+ bins that
//! `fio_jsonplus_clat2csv` reads, the terse v3 line, `--output`, percentiles in numeric order,
//! and fio's latency times (clat is never total latency).
//!
//! The comparisons with fio itself run where fio is installed (`apt-get install fio`); without
//! it they say so and pass, unless POLLWISE_REQUIRE_FIO=1, when they fail.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{have, json_of, json_on_temp_file, pollwise, run_on_temp_file, temp_file, tempdir};
use serde_json::Value;

/// The job both tools run: 4 KiB random O_DIRECT reads on io_uring for 1 s.
fn job(f: &Path) -> Vec<String> {
    [
        "--name=j",
        &format!("--filename={}", f.display()),
        "--size=8M",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=io_uring",
        "--direct=1",
        "--runtime=1",
        "--time_based",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Every key path of `v`: objects by key, lists by their first element (`[0]`), and the keys
/// of percentile and bins objects as `*`.
fn key_paths(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let k = if path.ends_with("percentile") || path.ends_with("bins") {
                    "*"
                } else {
                    k.as_str()
                };
                let p = if path.is_empty() {
                    k.to_string()
                } else {
                    format!("{path}.{k}")
                };
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => match a.first() {
            Some(x) => key_paths(x, &format!("{path}[0]"), out),
            None => {
                out.insert(path.to_string());
            }
        },
        _ => {
            out.insert(path.to_string());
        }
    }
}

#[test]
fn json_has_fios_key_paths() {
    if !have("fio") {
        return;
    }
    let (_d, f) = temp_file("f.dat");
    let mut a = job(&f);
    a.push("--output-format=json".into());
    // pollwise first: it lays out the file, so fio finds it ready.
    let mut pw_args = vec!["run".to_string()];
    pw_args.extend(a.iter().cloned());
    let pw = json_of(&pw_args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let out = Command::new("fio").args(&a).output().expect("run fio");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let fio: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).expect("fio's JSON");
    let (mut want, mut have_) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&fio, "", &mut want);
    key_paths(&pw, "", &mut have_);
    let missing: Vec<&String> = want.difference(&have_).collect();
    let covered = want.len() - missing.len();
    eprintln!(
        "pollwise has {covered} of fio's {} JSON key paths; missing: {missing:?}",
        want.len()
    );
    assert!(want.len() > 150, "fio's JSON looks too small: {want:?}");
    assert!(
        covered * 100 >= want.len() * 95,
        "{covered} of {} fio key paths; missing: {missing:?}",
        want.len()
    );
    // The same job, measured alike: both did I/O and agree on the block size.
    let (fr, pr) = (&fio["jobs"][0]["read"], &pw["jobs"][0]["read"]);
    assert!(fr["total_ios"].as_u64().unwrap() > 0);
    assert!(pr["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(
        pr["io_bytes"].as_u64().unwrap(),
        pr["total_ios"].as_u64().unwrap() * 4096
    );
    assert!(pw["fio version"].as_str().unwrap().starts_with("pollwise-"));
    assert!(pr["bw_samples"].as_u64().unwrap() >= 1, "{pr}");
}

#[test]
fn jsonplus_feeds_fio_jsonplus_clat2csv() {
    let (d, f) = temp_file("f.dat");
    let out = d.path().join("pw.json");
    let mut a = vec!["run".to_string()];
    a.extend(job(&f));
    a.push("--runtime=300ms".into());
    a.push("--output-format=json+".into());
    a.push(format!("--output={}", out.display()));
    let (code, stdout, err) = pollwise(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.is_empty(),
        "--output: nothing on stdout, got {stdout}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let r = &v["jobs"][0]["read"];
    let carrier = if r["clat_ns"]["N"] == r["lat_ns"]["N"] {
        "clat_ns"
    } else {
        "lat_ns"
    };
    let bins = r[carrier]["bins"].as_object().expect("json+ bins");
    let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, r["total_ios"].as_u64().unwrap());
    assert!(v["jobs"][0]["write"]["clat_ns"].get("bins").is_none());
    if !have("fio_jsonplus_clat2csv") {
        return;
    }
    let csv = d.path().join("pw.csv");
    for extra in [&[][..], &["--validate"][..]] {
        let o = Command::new("fio_jsonplus_clat2csv")
            .args(extra)
            .arg(&out)
            .arg(&csv)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{extra:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let rows = std::fs::read_to_string(d.path().join("pw_job0.csv")).unwrap();
    assert_eq!(rows.lines().count(), bins.len() + 1, "a row per bin");
}

/// Fields of fio's terse v3 line before the optional disk utilisation: 5 + 2 x 41 (read and
/// write; trim came with v4) + 5 + 7 + 10 + 12.
const TERSE_FIELDS: usize = 121;

#[test]
fn terse_is_fios_v3_line() {
    let (_d, f) = temp_file("f.dat");
    let mut a = vec!["run".to_string()];
    a.extend(job(&f));
    a.push("--runtime=300ms".into());
    a.push("--output-format=terse".into());
    let (code, out, err) = pollwise(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let p: Vec<&str> = out.trim_end().split(';').collect();
    assert!(
        p.len() == TERSE_FIELDS || p.len() == TERSE_FIELDS + 9,
        "{} fields: {out}",
        p.len()
    );
    assert_eq!(p[0], "3");
    assert!(p[1].starts_with("pollwise-"));
    assert_eq!(p[2], "j");
    assert!(p[5].parse::<u64>().unwrap() > 0, "read KiB: {out}");
    // The 20 percentile fields of read: the 17 default ones, then fio's padding.
    assert_eq!(&p[17][..10], "1.000000%=");
    assert_eq!(
        p[33],
        "99.990000%=".to_string() + p[33].split('=').nth(1).unwrap()
    );
    assert_eq!(p[34], "0%=0");
    if !have("fio") {
        return;
    }
    let mut fa = job(&f);
    fa.push("--runtime=300ms".into());
    fa.push("--output-format=terse".into());
    let o = Command::new("fio").args(&fa).output().unwrap();
    let fio = String::from_utf8_lossy(&o.stdout);
    let line = fio
        .lines()
        .find(|l| l.starts_with("3;"))
        .expect("fio's terse line");
    let q: Vec<&str> = line.split(';').collect();
    assert_eq!(q.len(), p.len(), "fio: {line}\npollwise: {out}");
}

#[test]
fn percentiles_print_in_numeric_order() {
    let (code, out, err) =
        run_on_temp_file(&["--size=4M", "--runtime=200ms", "--output-format=json"]);
    assert_eq!(code, 0, "{err}");
    let pos = |k: &str| {
        out.find(&format!("\"{k}\""))
            .unwrap_or_else(|| panic!("{k}: {out}"))
    };
    for w in pollwise_bench::stats::PERCENTILES.windows(2) {
        let (a, b) = (format!("{:.6}", w[0]), format!("{:.6}", w[1]));
        assert!(pos(&a) < pos(&b), "{a} after {b}");
    }
}

#[test]
fn clat_is_never_total_latency() {
    let v = json_on_temp_file(&["--size=4M", "--runtime=200ms", "--output-format=json"]);
    let j = &v["jobs"][0];
    let r = &j["read"];
    let (clat_n, lat_n) = (
        r["clat_ns"]["N"].as_u64().unwrap(),
        r["lat_ns"]["N"].as_u64().unwrap(),
    );
    assert!(lat_n > 0);
    if clat_n == 0 {
        // Not measured, and said so; the percentiles are total latency's, under lat_ns.
        assert_eq!(
            j["pollwise"]["not_measured"],
            serde_json::json!(["slat_ns", "clat_ns"])
        );
        assert!(r["clat_ns"].get("percentile").is_none());
        assert!(r["lat_ns"]["percentile"]["50.000000"].as_u64().unwrap() > 0);
    } else {
        // Measured: clat excludes submission, so it is below lat, request by request.
        assert_eq!(clat_n, lat_n);
        assert!(r["clat_ns"]["mean"].as_f64().unwrap() < r["lat_ns"]["mean"].as_f64().unwrap());
        assert!(r["slat_ns"]["N"].as_u64().unwrap() == lat_n);
    }
}

#[test]
fn percentile_options_choose_list_and_carrier() {
    let v = json_on_temp_file(&[
        "--size=4M",
        "--runtime=200ms",
        "--percentile_list=99.9:50",
        "--lat_percentiles=1",
        "--clat_percentiles=0",
        "--output-format=json",
    ]);
    let r = &v["jobs"][0]["read"];
    let keys: Vec<&String> = r["lat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["50.000000", "99.900000"]);
    assert!(r["clat_ns"].get("percentile").is_none());
    let opts = &v["jobs"][0]["job options"];
    assert_eq!(opts["percentile_list"], "99.9:50");
    assert!(opts.get("output_format").is_none());
    // Facts ride along.
    let facts = &v["pollwise"]["facts"];
    assert!(facts["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(facts["cpus"].as_u64().unwrap() >= 1);
    assert!(facts.get("timer_lateness_ns").is_some());
}

#[test]
fn report_options_refuse_bad_values() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f.dat").display());
    common::usage_error(
        &["run", &f, "--size=1M", "--percentile_list=50:200"],
        &["--percentile_list", "(0, 100]"],
    );
    common::usage_error(
        &["compare", &f, "--size=1M", "--output-format=terse"],
        &["pollwise run"],
    );
    let (code, _, err) = pollwise(&[
        "run",
        &f,
        "--size=1M",
        "--runtime=100ms",
        "--output=/no/such/dir/out.json",
    ]);
    // Refused before the run: the directory is missing.
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--output") && err.contains("does not exist"),
        "{err}"
    );
}
