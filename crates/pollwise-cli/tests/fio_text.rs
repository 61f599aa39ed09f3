//! pollwise's normal report against fio 3.33's for the same job: the same lines in the same
//! order, each with the same prefix and the same field names in the same order (the values, the
//! units fio picks per figure and where the percentile table breaks its lines are the run's).
//! pollwise's own figures come after fio's part, under `pollwise:`.
//!
//! fio must be installed (the test command installs it); without it these tests say so and pass,
//! unless POLLWISE_REQUIRE_FIO is set, when they fail.

mod common;

use std::path::Path;
use std::process::Command;

use common::{have, pollwise, tempdir};

/// One line's shape: its prefix (units made `(unit)`) and the names of its `name=value` fields.
/// A percentile table becomes one entry per percentile, a latency distribution one entry.
fn shape(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line == "pollwise:" {
            // pollwise's own part (and the empty line before it): not fio's.
            if out
                .last()
                .is_some_and(|l| l.trim().is_empty() || l == " | ")
            {
                out.pop();
            }
            break;
        }
        let t = line.trim_start();
        if line.starts_with("fio-") || line.starts_with("pollwise-") {
            out.push("VERSION".into());
            continue;
        }
        if line.starts_with("Starting ") {
            out.push("Starting N".into());
            continue;
        }
        if line.contains(": Laying out IO file") {
            continue;
        }
        if let Some(rest) = t.strip_prefix('|') {
            for name in field_names(rest) {
                out.push(format!("percentile {name}"));
            }
            continue;
        }
        if t.starts_with("lat (") && t.contains(")   : ") {
            if out.last().map(String::as_str) != Some("latency distribution") {
                out.push("latency distribution".into());
            }
            continue;
        }
        let (head, rest) = line.split_once(": ").unwrap_or((line, ""));
        let head = head
            .replace("(nsec)", "(unit)")
            .replace("(usec)", "(unit)")
            .replace("(msec)", "(unit)")
            .replace("MiB/s", "KiB/s");
        out.push(format!("{head} | {}", field_names(rest).join(" ")));
    }
    out
}

/// The names of the `name=value` fields of `s`, in order (`>=64=0.0%` is `>=64`).
fn field_names(s: &str) -> Vec<String> {
    s.split_whitespace()
        .flat_map(|w| w.split(','))
        .filter_map(|tok| {
            let i = tok.rfind('=')?;
            // `(groupid=0`; `err= 0` (the value is the next word).
            let name = tok[..i].trim_start_matches('(');
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

fn fio_text(args: &[String], dir: &Path) -> String {
    let out = Command::new("fio")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pollwise_text(args: &[String]) -> String {
    let mut a = vec!["run".to_string()];
    a.extend(args.iter().cloned());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, out, err) = pollwise(&a);
    assert_eq!(code, 0, "{a:?}: {err}");
    out
}

/// Both tools' reports of `args` have the same shape, line for line.
fn same_shape(args: &[String], dir: &Path) -> (String, String) {
    // pollwise first: it lays the file out, so fio finds it ready (no "Laying out" line).
    let pw = pollwise_text(args);
    let fio = fio_text(args, dir);
    let (a, b) = (shape(&fio), shape(&pw));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x, y,
            "line {i} of the shapes differs\n--- fio:\n{fio}\n--- pollwise:\n{pw}"
        );
    }
    assert_eq!(
        a.len(),
        b.len(),
        "one report has more lines\n--- fio:\n{fio}\n--- pollwise:\n{pw}"
    );
    (fio, pw)
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_mixed_job_reports_in_fios_shape() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let f = d.path().join("f.dat");
    let args = words(&[
        "--name=mixed",
        &format!("--filename={}", f.display()),
        "--size=16M",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=4",
        "--ioengine=io_uring",
        "--direct=1",
        "--runtime=2",
        "--time_based",
    ]);
    let (fio, pw) = same_shape(&args, d.path());
    // The shape holds every block a script looks for, in both.
    for needle in [
        "mixed: (groupid=0, jobs=1): err= 0: pid=",
        "  read: IOPS=",
        "  write: IOPS=",
        "clat percentiles (",
        "|  1.00th=[",
        "   bw (  ",
        "   iops        : min=",
        "  cpu          : usr=",
        "  IO depths    : 1=",
        "     submit    : 0=",
        "     complete  : 0=",
        "     issued rwts: total=",
        "     latency   : target=0, window=0, percentile=100.00%, depth=4",
        "Run status group 0 (all jobs):",
        "   READ: bw=",
        "  WRITE: bw=",
        "Disk stats (read/write):",
    ] {
        assert!(fio.contains(needle), "fio lacks '{needle}':\n{fio}");
        assert!(pw.contains(needle), "pollwise lacks '{needle}':\n{pw}");
    }
    // pollwise's figures follow fio's part.
    let tail = pw.split("\npollwise:\n").nth(1).expect("a pollwise: part");
    assert!(tail.contains("mode=interrupt"), "{tail}");
    assert!(tail.contains("kernel enters/IO"), "{tail}");
}

#[test]
fn groups_report_in_fios_shape() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let f = d.path().join("f.dat");
    let job = d.path().join("two.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={}\nsize=8M\nbs=4k\nioengine=io_uring\ndirect=1\nruntime=1200ms\ntime_based\n\n[a]\nrw=read\n\n[b]\nrw=randwrite\nstonewall\n",
            f.display()
        ),
    )
    .unwrap();
    let (fio, pw) = same_shape(&words(&[&job.display().to_string()]), d.path());
    for t in [&fio, &pw] {
        assert!(t.contains("a: (groupid=0, jobs=1)"), "{t}");
        assert!(t.contains("b: (groupid=1, jobs=1)"), "{t}");
        assert!(
            t.contains("Run status group 1 (all jobs):\n  WRITE: bw="),
            "{t}"
        );
    }
}

#[test]
fn json_then_normal_whatever_the_list_order_as_fio() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let f = d.path().join("f.dat");
    for list in ["normal,json", "json,normal"] {
        let args = words(&[
            "--name=j",
            &format!("--filename={}", f.display()),
            "--size=4M",
            "--rw=randread",
            "--ioengine=io_uring",
            "--direct=1",
            "--runtime=300ms",
            &format!("--output-format={list}"),
        ]);
        let pw = pollwise_text(&args);
        let fio = fio_text(&args, d.path());
        for (who, t) in [("fio", &fio), ("pollwise", &pw)] {
            // fio's lines before the run, then the JSON document, then the normal report.
            let open = t
                .find("\n{\n")
                .unwrap_or_else(|| panic!("{who}: no JSON: {t}"));
            let close = t
                .find("\n}\n")
                .unwrap_or_else(|| panic!("{who}: no JSON end: {t}"));
            let v: serde_json::Value = serde_json::from_str(&t[open + 1..close + 2])
                .unwrap_or_else(|e| panic!("{who}: {e}: {t}"));
            assert_eq!(v["jobs"][0]["jobname"], "j", "{who}");
            let intro = t
                .find("j: (g=0): rw=randread")
                .unwrap_or_else(|| panic!("{who}: {t}"));
            let report = t
                .find("Run status group 0")
                .unwrap_or_else(|| panic!("{who}: {t}"));
            assert!(intro < open && close < report, "{who} with {list}: {t}");
        }
    }
}

#[test]
fn the_shape_helper_sees_differences() {
    // A line fio has and pollwise lacks, a renamed field, units that differ: each one shows.
    let fio = "j: (groupid=0, jobs=1): err= 0: pid=1: x\n  read: IOPS=1, BW=2\n    clat (nsec): min=1, max=2, avg=1, stdev=0\n";
    assert_eq!(
        shape(fio),
        [
            "j | groupid jobs err pid",
            "  read | IOPS BW",
            "    clat (unit) | min max avg stdev"
        ]
    );
    assert_ne!(shape(fio), shape(&fio.replace("BW=2", "bw=2")));
    assert_eq!(
        shape(fio),
        shape(&fio.replace("(nsec)", "(usec)")),
        "units are the run's"
    );
    assert_eq!(
        shape("  IO depths    : 1=100.0%, >=64=0.0%\n"),
        ["  IO depths     | 1 >=64"]
    );
}
