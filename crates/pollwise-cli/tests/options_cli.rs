//! The option table from the command line: help anywhere, `--cmdhelp`, "did you mean", options
//! read in command-line order whatever name sets them, sizes never silently truncated, and each
//! scenario taking only its own options.

mod common;

use common::{assert_contains, json_of, pollwise, usage_error, usage_errors};

/// Runs `args`, expects exit 0 with help on stdout and nothing on stderr; returns stdout.
fn help_of(args: &[&str]) -> String {
    let (code, out, err) = pollwise(args);
    assert_eq!(code, 0, "{args:?}: exit {code}: {err}");
    assert!(err.is_empty(), "{args:?}: stderr: {err}");
    assert!(!out.trim().is_empty(), "{args:?}: no help");
    out
}

#[test]
fn help_anywhere_exits_0_to_stdout() {
    let run = help_of(&["run", "--help"]);
    assert!(run.contains("--iodepth=N"), "{run}");
    assert!(run.contains("--mode="), "{run}");
    assert!(!run.contains("--burst"), "run does not take --burst: {run}");
    assert_eq!(help_of(&["help", "run"]), run);
    assert_eq!(help_of(&["run", "-h"]), run);
    // Anywhere on the line, even after options (and after a bad one).
    assert_eq!(help_of(&["run", "--bs=4k", "--iodpth=3", "--help"]), run);

    let compare = help_of(&["compare", "-h"]);
    assert!(compare.contains("--modes="), "{compare}");
    assert!(compare.contains("--rounds=N"), "{compare}");
    assert_eq!(help_of(&["help", "compare"]), compare);

    let general = help_of(&["help"]);
    assert!(general.contains("pollwise run"), "{general}");
    assert!(general.contains("fairness"), "{general}");
    assert_eq!(help_of(&["--help"]), general);
    let list = help_of(&["scenario", "--help"]);
    assert!(list.contains("idle-sources"), "{list}");
    usage_error(&["help", "bogus"], &["bogus"]);
}

#[test]
fn a_scenarios_help_lists_its_own_options_with_its_defaults() {
    let f = help_of(&["scenario", "fairness", "--help"]);
    assert_contains(
        &f,
        &[
            "--burst=N",
            "[default: 32768]",
            "--poller_depth=N",
            "[default: 128]",
        ],
    );
    assert_contains(&f, &["--iodepth=N", "[default: 32]"]);
    assert!(!f.contains("--sources"), "{f}");
    assert_eq!(help_of(&["help", "scenario", "fairness"]), f);
    let idle = help_of(&["scenario", "idle-sources", "-h"]);
    assert_contains(
        &idle,
        &[
            "--sources=N",
            "[default: 100]",
            "--fdmon=",
            "--poll_idle_ms=N",
        ],
    );
    let slow = help_of(&["scenario", "slow-handler", "--help"]);
    assert_contains(&slow, &["--handler_us=N", "[default: 1]"]);
}

#[test]
fn cmdhelp_explains_one_option_or_all() {
    for args in [
        &["--cmdhelp=iodepth"][..],
        &["--cmdhelp", "iodepth"],
        &["run", "--cmdhelp=iodepth"],
    ] {
        let h = help_of(args);
        assert!(h.contains("name: iodepth"), "{args:?}: {h}");
        assert!(h.contains("1 to 32768"), "{args:?}: {h}");
        assert!(h.contains("default: 1"), "{args:?}: {h}");
        assert!(h.contains("requests in flight"), "{args:?}: {h}");
    }
    let h = help_of(&["--cmdhelp=iodepth_batch"]);
    assert!(h.contains("name: iodepth_batch_submit"), "{h}");
    assert!(h.contains("alias: iodepth_batch"), "{h}");
    let all = help_of(&["--cmdhelp"]);
    assert_eq!(help_of(&["--cmdhelp=all"]), all);
    for name in ["iodepth", "poller_depth", "handler_us", "sim_latency"] {
        assert!(all.lines().any(|l| l.starts_with(name)), "{name}: {all}");
    }
    usage_error(&["--cmdhelp=iodpth"], &["did you mean `--iodepth`?"]);
}

#[test]
fn unknown_options_get_did_you_mean() {
    usage_error(
        &["run", "--iodpth=4"],
        &["unknown option --iodpth", "did you mean `--iodepth`?"],
    );
    usage_error(
        &["scenario", "fairness", "--poller_dpth=4"],
        &["did you mean `--poller_depth`?"],
    );
    let (_, _, err) = pollwise(&["run", "--frobnicate=3"]);
    assert!(!err.contains("did you mean"), "nothing is close: {err}");
}

#[test]
fn aliases_resolve_in_command_line_order() {
    let sim = ["run", "--ioengine=sim", "--runtime=100ms", "--iodepth=4"];
    fn with<'a>(sim: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        sim.iter().chain(extra).copied().collect()
    }
    // The last value, 2, is the one that counts, though an alias set 8 before it.
    let v = json_of(&with(
        &sim,
        &[
            "--iodepth_batch=8",
            "--iodepth_batch_submit=2",
            "--output-format=json",
        ],
    ));
    let job = &v["jobs"][0];
    assert!(job["read"]["total_ios"].as_u64().unwrap() > 0, "{job}");
    assert_eq!(job["job options"]["iodepth_batch_submit"], "2", "{job}");
    // And the other way round: the alias comes last and wins.
    usage_error(
        &with(&sim, &["--iodepth_batch_submit=2", "--iodepth_batch=8"]),
        &["--iodepth_batch_submit=8 exceeds --iodepth=4"],
    );
}

#[test]
fn sizes_are_never_truncated() {
    usage_error(&["run", "--bs=4.7"], &["--bs=4.7", "whole number of bytes"]);
    usage_error(&["run", "--size=0.1k"], &["--size=0.1k"]);
    usage_error(
        &["scenario", "fairness", "--poller_quantum=1.3"],
        &["--poller_quantum=1.3"],
    );
}

#[test]
fn a_scenario_takes_only_its_own_options() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["fairness", "--sources=3"], &["--sources", "idle-sources"]),
        (&["idle-sources", "--burst=3"], &["--burst", "fairness"]),
        (
            &["slow-handler", "--active=1"],
            &["--active", "idle-sources"],
        ),
        (
            &["idle-sources", "--thinktime=5us"],
            &["--thinktime does not apply"],
        ),
    ];
    usage_errors(&["scenario"], cases);
    usage_error(&["run", "--threads=2"], &["--threads", "hybrid-contention"]);
    usage_error(&["run", "--modes=poll"], &["takes one --mode"]);
    usage_error(&["run", "--iodepth"], &["--iodepth needs a value"]);
}
