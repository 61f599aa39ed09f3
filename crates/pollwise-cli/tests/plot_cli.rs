//! `pollwise plot` and `--plot=DIR`: a real compare's JSON drawn as SVG charts, one series per
//! mode; bad input exits 2 with one line naming the cause and the fix.

mod common;

use std::path::Path;

use common::{pollwise, tempdir, tiny_platform, usage_error};
use serde_json::Value;

/// The SVG files in `dir`, sorted.
fn svgs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    v.sort();
    v
}

/// Checks that `svg` is one well-formed `<svg>` element: every tag closed in order.
fn assert_well_formed(svg: &str, what: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg.trim();
    assert!(rest.starts_with("<svg"), "{what} does not start with <svg");
    let mut roots = 0;
    while let Some(i) = rest.find('<') {
        let end = rest[i..]
            .find('>')
            .unwrap_or_else(|| panic!("{what}: unclosed <"))
            + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                open.pop(),
                Some(name.trim()),
                "{what}: </{name}> closes nothing"
            );
        } else if !tag.ends_with('/') {
            if open.is_empty() {
                roots += 1;
            }
            open.push(tag.split_whitespace().next().unwrap_or(""));
        } else if open.is_empty() {
            roots += 1;
        }
    }
    assert!(open.is_empty(), "{what}: {open:?} never closed");
    assert_eq!(roots, 1, "{what}: one root element");
    assert!(rest.trim().is_empty(), "{what}: text after </svg>");
}

/// The text of every `<text>` element of `svg`.
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim())
        })
        .collect()
}

#[test]
fn compare_then_plot_draws_one_series_per_mode() {
    let d = tempdir();
    let p = |n: &str| d.path().join(n).display().to_string();
    let (file, report, after, later) = (p("f.dat"), p("R.json"), p("after"), p("later"));
    let modes = ["interrupt", "poll"];
    // 1.2 s per mode in two rounds: each round holds one whole 500 ms sampling interval.
    let (code, out, err) = pollwise(&[
        "compare",
        &format!("--filename={file}"),
        "--size=4M",
        "--runtime=1200ms",
        "--rounds=2",
        "--warmup=0",
        "--iodepth=2",
        &format!("--modes={}", modes.join(",")),
        "--output-format=json",
        &format!("--output={report}"),
        "--plot",
        &after,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "the report went to --output: {out}");
    let (code, out, err) = pollwise(&["plot", &report, "--out", &later]);
    assert_eq!(code, 0, "{err}");
    let expected = ["cpu_frontier.svg", "iops.svg", "latency_cdf.svg"];
    assert_eq!(svgs(Path::new(&later)), expected, "{out}");
    assert_eq!(
        svgs(Path::new(&after)),
        expected,
        "--plot draws the same charts"
    );
    for f in expected {
        assert!(out.contains(f), "{out}");
        let svg = std::fs::read_to_string(Path::new(&later).join(f)).unwrap();
        assert_well_formed(&svg, f);
        let t = texts(&svg);
        for m in modes {
            assert_eq!(
                t.iter().filter(|x| **x == m).count(),
                if f == "cpu_frontier.svg" { 2 } else { 1 },
                "{f}: one legend entry (or one point label per panel) for {m}: {t:?}"
            );
        }
        assert!(!t.contains(&"hybrid"), "{f}: only the modes run: {t:?}");
        assert!(
            t.iter().any(|x| x.contains("µs") || x.contains("IOPS")),
            "{f}: {t:?}"
        );
    }
    let cdf = std::fs::read_to_string(Path::new(&later).join("latency_cdf.svg")).unwrap();
    let labels = texts(&cdf);
    assert!(
        labels
            .iter()
            .any(|x| x.starts_with("pollwise compare randread iodepth=2 bs=4096")),
        "the title says what ran: {labels:?}"
    );
    assert!(
        labels.contains(&"99.9%"),
        "the tail axis counts nines: {labels:?}"
    );
    assert!(labels.iter().any(|x| x.contains("log scale")), "{labels:?}");
}

/// The `<circle>` elements of `svg`: (radius, fill), the fill "none" for a ring.
fn circles(svg: &str) -> Vec<(String, String)> {
    let attr = |el: &str, name: &str| {
        let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(el[at..at + el[at..].find('"')?].to_string())
    };
    svg.split("<circle")
        .skip(1)
        .map(|el| {
            let el = &el[..el.find("/>").unwrap_or(el.len())];
            (attr(el, "r").unwrap(), attr(el, "fill").unwrap())
        })
        .collect()
}

/// How many of `items` each distinct value has, sorted.
fn counts<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Vec<(T, usize)> {
    let mut m = std::collections::BTreeMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m.into_iter().collect()
}

#[test]
fn advise_plots_every_modelled_cell_and_its_picks() {
    let d = tempdir();
    let platform = tiny_platform(d.path());
    let p = |n: &str| d.path().join(n).display().to_string();
    let (plots, again, report) = (p("plots"), p("again"), p("A.json"));
    let (code, _, err) = pollwise(&[
        "advise",
        "--ioengine=sim",
        &format!("--platform={platform}"),
        "--time=600s",
        "--latency_target=p99:400us",
        "--output-format=json",
        &format!("--output={report}"),
        &format!("--plot={plots}"),
    ]);
    assert_eq!(code, 0, "{err}");
    let files = [
        "advise_frontier.svg",
        "advise_load.svg",
        "advise_threads.svg",
    ];
    assert_eq!(svgs(Path::new(&plots)), files, "{err}");
    for f in files {
        assert!(err.contains(f), "--plot says what it wrote: {err}");
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let a = &v["advise"];
    assert_eq!(a["cells_cut"], 0, "the whole sweep");
    let cells = a["cells"].as_array().unwrap();
    let modes: Vec<&str> = {
        let mut m: Vec<&str> = cells.iter().map(|c| c["mode"].as_str().unwrap()).collect();
        m.dedup();
        m.sort();
        m.dedup();
        m
    };
    assert_eq!(modes.len(), 5, "{modes:?}");
    let read = |f: &str| std::fs::read_to_string(Path::new(&plots).join(f)).unwrap();
    let title = format!(
        "pollwise advise on the model (platform {}, 1 core)",
        a["platform"]["name"].as_str().unwrap()
    );
    for f in files {
        let svg = read(f);
        assert_well_formed(&svg, f);
        let t = texts(&svg);
        assert!(t.iter().any(|x| x.starts_with(&title)), "{f}: {t:?}");
        for m in &modes {
            assert_eq!(
                t.iter().filter(|x| *x == m).count(),
                1,
                "{f}: one legend entry for {m}: {t:?}"
            );
        }
        assert!(t.iter().any(|x| x.contains("µs")), "{f}: {t:?}");
    }
    // The frontier: a dot per modelled cell in each of its two panels, in its mode's colour.
    let svg = read("advise_frontier.svg");
    let dots: Vec<(String, String)> = circles(&svg)
        .into_iter()
        .filter(|c| c.1 != "none")
        .collect();
    assert_eq!(dots.len(), 2 * cells.len(), "one dot per cell and panel");
    let per_mode = counts(cells.iter().map(|c| c["mode"].as_str().unwrap()));
    let per_colour = counts(dots.iter().map(|c| c.1.as_str()));
    assert_eq!(
        per_colour.len(),
        modes.len(),
        "a colour per mode: {per_colour:?}"
    );
    let mut want: Vec<usize> = per_mode.iter().map(|m| 2 * m.1).collect();
    let mut got: Vec<usize> = per_colour.iter().map(|c| c.1).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{per_colour:?} against {per_mode:?}");
    // Each recommendation ringed in both panels and named in the legend.
    let recs: Vec<&Value> = a["recommendations"]
        .as_object()
        .unwrap()
        .values()
        .filter(|r| r["mode"].is_string())
        .collect();
    assert!(recs.len() >= 2, "{}", a["recommendations"]);
    let mut picked: Vec<String> = recs.iter().map(|r| r["model"].to_string()).collect();
    picked.sort();
    picked.dedup();
    let rings = circles(&svg)
        .iter()
        .filter(|c| c.1 == "none" && c.0 == "10")
        .count();
    assert_eq!(rings, 2 * picked.len());
    let t = texts(&svg);
    for r in &recs {
        let entry = format!(
            "{}, qd {}, {} thread",
            r["mode"].as_str().unwrap(),
            r["iodepth"],
            r["threads"]
        );
        assert!(
            t.iter().any(|x| x.contains(&entry)),
            "{entry} in the legend: {t:?}"
        );
    }
    assert!(
        t.iter().any(|x| x.starts_with("target p99 ≤ 400 µs")),
        "{t:?}"
    );
    // Latency against load: QD1, one thread, 3 loads per mode; IOPS and CPU against threads:
    // QD1 unpaced, 2 thread counts per mode. A dot per point and panel.
    let points = |keep: &dyn Fn(&Value) -> bool| cells.iter().filter(|c| keep(c)).count();
    let qd1 = |c: &Value| c["iodepth"] == 1;
    let load_points = points(&|c| qd1(c) && c["threads"] == 1);
    let thread_points = points(&|c| qd1(c) && c["rate_iops"].is_null());
    assert_eq!((load_points, thread_points), (3 * 5, 2 * 5));
    for (f, n, words) in [
        ("advise_load.svg", load_points, "offered load"),
        ("advise_threads.svg", thread_points, "threads (on 1 core)"),
    ] {
        let svg = read(f);
        assert_eq!(circles(&svg).len(), 2 * n, "{f}");
        let t = texts(&svg);
        assert!(t.iter().any(|x| x.starts_with(words)), "{f}: {t:?}");
    }
    // `pollwise plot` on advise's JSON draws the same charts, byte for byte.
    let (code, out, err) = pollwise(&["plot", &report, &format!("--out={again}")]);
    assert_eq!(code, 0, "{err}");
    for f in files {
        assert!(out.contains(f), "{out}");
        let other = std::fs::read_to_string(Path::new(&again).join(f)).unwrap();
        assert!(
            other == read(f),
            "{f} differs between --plot and pollwise plot"
        );
    }
}

#[test]
fn advise_refuses_a_bad_plot_dir_before_it_starts() {
    let d = tempdir();
    let p = |n: &str| d.path().join(n).display().to_string();
    let file = p("in-the-way");
    std::fs::write(&file, "keep me").unwrap();
    let target = p("f.dat");
    for dir in [file.clone(), format!("{file}/d")] {
        usage_error(
            &[
                "advise",
                &format!("--filename={target}"),
                &format!("--plot={dir}"),
            ],
            &["cannot write plots in", "choose a directory"],
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    assert!(
        !Path::new(&target).exists(),
        "nothing calibrated or laid out"
    );
    // A report that is not advise's, nor any other, is refused naming what it lacks.
    std::fs::write(
        p("bad.json"),
        r#"{"advise": {"cells": [{"mode": "poll"}]}}"#,
    )
    .unwrap();
    usage_error(
        &["plot", &p("bad.json"), &format!("--out={}", p("o"))],
        &["lacks mode, iodepth", "pollwise advise"],
    );
}

#[test]
fn a_scenario_with_modes_plots_one_set_per_thread_count() {
    let d = tempdir();
    let out_dir = d.path().join("plots");
    let (code, out, err) = pollwise(&[
        "scenario",
        "hybrid-contention",
        &format!("--filename={}", d.path().join("f.dat").display()),
        "--threads=1,2",
        "--modes=interrupt,poll",
        "--runtime=100ms",
        "--ramp_time=0",
        "--batch=4",
        "--size=8M",
        &format!("--plot={}", out_dir.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("threads"),
        "the report still goes to stdout: {out}"
    );
    assert!(err.contains("no IOPS over time"), "said, not silent: {err}");
    assert_eq!(
        svgs(&out_dir),
        [
            "cpu_frontier_threads1.svg",
            "cpu_frontier_threads2.svg",
            "latency_cdf_threads1.svg",
            "latency_cdf_threads2.svg"
        ]
    );
    let svg = std::fs::read_to_string(out_dir.join("latency_cdf_threads2.svg")).unwrap();
    assert_well_formed(&svg, "latency_cdf_threads2.svg");
    let t = texts(&svg);
    assert!(t.contains(&"poll") && t.contains(&"interrupt"), "{t:?}");
}

#[test]
fn bad_input_exits_2_naming_the_fix() {
    let d = tempdir();
    let p = |n: &str| d.path().join(n).display().to_string();
    let out = format!("--out={}", p("out"));
    usage_error(
        &["plot", &p("missing.json"), &out],
        &["cannot read", "--output-format=json"],
    );
    std::fs::write(p("text.json"), "IOPS 1000\n").unwrap();
    usage_error(
        &["plot", &p("text.json"), &out],
        &["is not JSON", "--output-format=json"],
    );
    std::fs::write(p("other.json"), r#"{"a": 1}"#).unwrap();
    usage_error(
        &["plot", &p("other.json"), &out],
        &["neither `jobs`", "pollwise compare"],
    );
    let fio =
        r#"{"fio version": "fio-3.33", "jobs": [{"jobname": "j", "read": {"total_ios": 1}}]}"#;
    std::fs::write(p("fio.json"), fio).unwrap();
    usage_error(&["plot", &p("fio.json"), &out], &["pollwise.mode"]);
    let no_pcts = r#"{"jobs": [{"jobname": "poll", "read": {"total_ios": 5}, "pollwise": {"mode": "poll"}}]}"#;
    std::fs::write(p("bare.json"), no_pcts).unwrap();
    usage_error(
        &["plot", &p("bare.json"), &out],
        &["nothing to plot", "no latency percentiles"],
    );
    // A directory under a regular file cannot be made, root or not.
    let job = r#"{"jobs": [{"jobname": "poll", "read": {"total_ios": 5, "clat_ns": {"percentile": {"50.000000": 1000}}}, "pollwise": {"mode": "poll"}}]}"#;
    std::fs::write(p("ok.json"), job).unwrap();
    let under_file = format!("--out={}", Path::new(&p("ok.json")).join("d").display());
    usage_error(
        &["plot", &p("ok.json"), &under_file],
        &["cannot write plots in", "choose a directory"],
    );
    usage_error(&["plot", &p("ok.json")], &["needs --out=DIR"]);
    usage_error(
        &["plot", &out],
        &["given 0", "pollwise plot RESULT.json --out=DIR"],
    );
    usage_error(&["plot", &p("ok.json"), &p("ok.json"), &out], &["given 2"]);
    usage_error(
        &["plot", &p("ok.json"), &out, "--output-format=json"],
        &["--out=DIR"],
    );
    usage_error(
        &["plot", &p("ok.json"), &out, "--iodepth=4"],
        &["runs no job"],
    );
    // --plot is checked before the run, not after it.
    let bad_plot = format!("--plot={}", Path::new(&p("ok.json")).join("d").display());
    usage_error(
        &["compare", "--runtime=1h", &bad_plot],
        &["cannot write plots in"],
    );
    usage_error(&["run", "--plot=x"], &["--plot", "compare"]);
    // And the one report that is good after all draws its one chart.
    let (code, text, err) = pollwise(&["plot", &p("ok.json"), &out]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("latency_cdf.svg") && text.contains("no IOPS over time"),
        "{text}"
    );
}

#[test]
fn plot_has_help() {
    let (code, out, _) = pollwise(&["plot", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("pollwise plot RESULT.json --out=DIR"), "{out}");
    assert!(out.contains("--out=STR"), "{out}");
    let (code, out, _) = pollwise(&["help"]);
    assert_eq!(code, 0);
    assert!(out.contains("pollwise plot"), "{out}");
    let (code, out, _) = pollwise(&["compare", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--plot=STR"), "{out}");
}
