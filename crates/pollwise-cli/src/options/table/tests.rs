//! The option table's own checks: names, defaults, scopes, and the scenarios' defaults.

use super::*;
use crate::options::check::parse_value;
use std::collections::HashSet;

#[test]
fn every_option_has_help_and_a_category_title() {
    for o in OPTIONS {
        assert!(!o.help.trim().is_empty(), "{} has no help", o.name);
        assert!(!o.category.title().is_empty());
    }
    for c in COMMANDS {
        assert!(!c.about.is_empty(), "{} has no help", c.name);
    }
}

#[test]
fn names_and_aliases_are_unique_and_canonical() {
    let mut seen = HashSet::new();
    for o in OPTIONS {
        for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
            assert_eq!(*n, normalize(n), "{n}: names are written with underscores");
            assert!(seen.insert(*n), "{n} is declared twice");
        }
    }
    let mut cmds = HashSet::new();
    for c in COMMANDS {
        assert!(cmds.insert(c.name), "command {} declared twice", c.name);
    }
}

#[test]
fn defaults_parse_under_their_own_kind() {
    for o in OPTIONS {
        if let Default::Value(v) = o.default {
            parse_value(o, o.name, Some(v))
                .unwrap_or_else(|e| panic!("{}'s default {v}: {e}", o.name));
        }
    }
    for c in COMMANDS {
        for (n, v) in c.defaults {
            let o = lookup(n).unwrap_or_else(|| panic!("{}: no option {n}", c.name));
            assert!(
                c.accepts(o),
                "{} has a default for {n} it does not take",
                c.name
            );
            if matches!(
                o.kind,
                Kind::Duration { .. } | Kind::Size { .. } | Kind::Int { .. }
            ) && !v.contains(' ')
            {
                parse_value(o, n, Some(v))
                    .unwrap_or_else(|e| panic!("{}'s default {n}={v}: {e}", c.name));
            }
        }
    }
}

#[test]
fn scopes_name_real_commands_and_options() {
    for o in OPTIONS {
        if let Only(list) = o.scope {
            for c in list {
                assert!(command(c).is_some(), "{}: no command {c}", o.name);
            }
        }
    }
    for c in COMMANDS {
        let lists: &[&str] = match c.job {
            JobUse::All => &[],
            JobUse::Except(l) | JobUse::Only(l) => l,
        };
        for n in lists.iter().chain(c.refuse.iter().map(|r| &r.0)) {
            assert!(lookup(n).is_some(), "{}: no option {n}", c.name);
        }
        if !matches!(c.job, JobUse::All) {
            assert!(c.job_refusal.contains("{opt}"), "{}", c.name);
        }
    }
}

#[test]
fn modes_match_the_library() {
    let lib: Vec<&str> = pollwise::policy::Mode::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    assert_eq!(MODES, lib.as_slice());
    let submit: Vec<&str> = pollwise_bench::engine::SubmitMode::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    assert_eq!(SUBMIT_MODES, submit.as_slice());
    let stats: Vec<&str> = pollwise::predict::Statistic::ALL
        .iter()
        .map(|s| s.name())
        .collect();
    // The statistics, after `auto` (the adaptive target, hybrid's default).
    assert_eq!(
        lookup("hybrid_stat").unwrap().kind,
        Kind::Enum {
            choices: &["auto", "mean", "min", "p10"],
            noun: Some("statistic")
        }
    );
    assert_eq!(stats, ["mean", "min", "p10"]);
}

#[test]
fn scenario_defaults_match_the_scenarios() {
    use crate::options::defaults::{
        compare, fairness, hybrid_contention, idle_sources, shared_poller, slow_handler,
    };
    use crate::options::value::Value::{Duration as Dur, Int, Size};
    use std::time::Duration;
    let get = |cmd: &str, n: &str| {
        let o = lookup(n).unwrap();
        match command(cmd).unwrap().default_of(o) {
            Default::Value(v) => parse_value(o, n, Some(v)).unwrap(),
            other => panic!("{cmd} {n}: {other:?}"),
        }
    };
    // One line a command: each option's default in the table against the scenario's constant.
    macro_rules! defaults {
        ($cmd:literal in $m:ident: $($opt:ident = $ctor:ident($c:ident)),+) => {$(
            assert_eq!(get($cmd, stringify!($opt)), $ctor($m::$c.into()), "{} --{}", $cmd, stringify!($opt));
        )+};
    }
    defaults!("fairness" in fairness: burst = Int(DEFAULT_BURST), iodepth = Int(DEFAULT_HEAVY_DEPTH), runtime = Dur(DEFAULT_RUNTIME), poller_depth = Int(DEFAULT_POLLER_DEPTH));
    defaults!("shared-poller" in shared_poller: iodepth = Int(DEFAULT_HEAVY_DEPTH), runtime = Dur(DEFAULT_RUNTIME), sparse_interval = Dur(DEFAULT_SPARSE_INTERVAL), size = Size(DEFAULT_SIZE), rings = Int(DEFAULT_RINGS), rounds = Int(DEFAULT_ROUNDS));
    defaults!("hybrid-contention" in hybrid_contention: batch = Int(DEFAULT_BATCH), thinktime = Dur(DEFAULT_THINK), runtime = Dur(DEFAULT_RUNTIME), size = Size(DEFAULT_SIZE));
    defaults!("idle-sources" in idle_sources: poll_idle_ms = Int(DEFAULT_POLL_IDLE_MS), runtime = Dur(DEFAULT_RUNTIME), ramp_time = Dur(DEFAULT_RAMP), rounds = Int(DEFAULT_ROUNDS), size = Size(DEFAULT_SIZE));
    defaults!("slow-handler" in slow_handler: handler_us = Int(DEFAULT_HANDLER_US), iodepth = Int(DEFAULT_IODEPTH));
    defaults!("compare" in compare: size = Size(DEFAULT_SIZE));
    assert_eq!(get("compare", "warmup"), Dur(Duration::from_millis(500)));
}

#[test]
fn lookups_and_suggestions() {
    assert_eq!(
        lookup("iodepth_batch").unwrap().name,
        "iodepth_batch_submit"
    );
    assert_eq!(lookup("output-format").unwrap().name, "output_format");
    assert_eq!(lookup("readwrite").unwrap().name, "rw");
    assert!(lookup("frobnicate").is_none());
    assert_eq!(suggest("iodpth", None), Some("iodepth"));
    assert_eq!(suggest("runtim", None), Some("runtime"));
    assert_eq!(suggest("frobnicate", None), None);
    assert_eq!(
        suggest("poller_dpth", command("fairness")),
        Some("poller_depth")
    );
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
}

#[test]
fn refusals_say_why() {
    let hc = command("hybrid-contention").unwrap();
    let m = hc.refusal(lookup("numjobs").unwrap(), "numjobs").unwrap();
    assert!(m.contains("--numjobs") && m.contains("--threads"), "{m}");
    let run = command("run").unwrap();
    assert!(run.refusal(lookup("iodepth").unwrap(), "iodepth").is_none());
    let m = run.refusal(lookup("burst").unwrap(), "burst").unwrap();
    assert!(m.contains("`pollwise scenario fairness`"), "{m}");
    let idle = command("idle-sources").unwrap();
    let m = idle
        .refusal(lookup("handler_us").unwrap(), "handler_us")
        .unwrap();
    assert!(m.contains("slow-handler"), "{m}");
    assert!(idle
        .refusal(lookup("thinktime").unwrap(), "thinktime")
        .is_some());
}
