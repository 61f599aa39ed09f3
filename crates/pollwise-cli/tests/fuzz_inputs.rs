//! Fuzzing on stable: the option parser, job files and the simulated
//! device's latency grammar get generated inputs, near-valid and random, and must never panic or
//! hang, and fail only with usage errors (exit 2). The surfaces are `fuzz_harness`'s, the same
//! the cargo-fuzz targets in `fuzz/` drive on nightly.
//!
//! Cases per property: `POLLWISE_FUZZ_CASES` (default 2000: CI's share; the README records the
//! large runs). Every input in `fuzz/corpus/` is replayed too.

mod fuzz_harness;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use fuzz_harness::{check_words, fuzz_jobfile, fuzz_latency, fuzz_words, COMMANDS};
use pollwise_cli::options::table::{self, OPTIONS};

fn cases() -> u32 {
    std::env::var("POLLWISE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Option names: canonical, aliases, with dashes, and a few that are not options.
fn name() -> impl Strategy<Value = String> {
    let mut names: Vec<String> = Vec::new();
    for o in OPTIONS {
        names.push(o.name.to_string());
        names.push(o.name.replace('_', "-"));
        names.extend(o.aliases.iter().map(|a| a.to_string()));
    }
    names.extend(
        [
            "help",
            "cmdhelp",
            "name",
            "bogus",
            "",
            "=",
            "bs=",
            "iodepth_batch_complete_max",
        ]
        .map(String::from),
    );
    prop_oneof![
        8 => proptest::sample::select(names),
        1 => "[a-z_-]{0,12}",
    ]
}

/// Values: what each kind takes, its edges, and junk.
fn value() -> impl Strategy<Value = String> {
    let tokens: Vec<&str> = vec![
        "0",
        "1",
        "-1",
        "4k",
        "4K",
        "1.5k",
        "4.7",
        "0.1",
        "2G",
        "8G",
        "1t",
        "99999999999t",
        "18446744073709551615",
        "18446744073709551616",
        "340282366920938463463374607431768211456",
        "1e9",
        "nan",
        "inf",
        "-0",
        ".",
        "..",
        "1.2.3",
        "50%",
        "0%",
        "100%",
        "101%",
        "%",
        "1,2",
        ",",
        ",,",
        "4k,64k",
        "4k,,",
        "4k,8k,16k,32k",
        "10s",
        "500ms",
        "40us",
        "40µs",
        "1h",
        "1m",
        "-5s",
        "9999999999s",
        "0ns",
        "true",
        "off",
        "yes",
        "maybe",
        "randread",
        "randrw",
        "rw",
        "read:4k",
        "trim",
        "io_uring",
        "sim",
        "libaio",
        "interrupt",
        "poll",
        "hybrid",
        "adaptive",
        "poll,hybrid",
        "json",
        "json+",
        "terse",
        "normal",
        "crc32c",
        "0-3,6",
        "3-1",
        "0-",
        "linear",
        "poisson",
        "fixed:10us",
        "uniform:8us,12us",
        "normal:10us,1us",
        "lognormal:10us,0.5",
        "bimodal:10us,100us,0.1",
        "${HOME}",
        "${",
        "/dev/null",
        "",
        " ",
        "\t4k ",
        "∞",
    ];
    prop_oneof![
        6 => proptest::sample::select(tokens).prop_map(String::from),
        2 => "[0-9.kKmMgGtTsunh%,:-]{0,10}",
        1 => any::<String>(),
    ]
}

/// One command-line word.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (name(), value()).prop_map(|(n, v)| format!("--{n}={v}")),
        3 => name().prop_map(|n| format!("--{n}")),
        2 => value(),
        1 => Just("-h".to_string()),
        1 => Just("--".to_string()),
        1 => any::<String>(),
    ]
}

#[test]
fn command_lines_fail_only_with_usage_errors() {
    let words = proptest::collection::vec(word(), 0..10);
    let cmd = proptest::sample::select(COMMANDS);
    runner()
        .run(&(cmd, words), |(cmd, w)| {
            let r = check_words(table::command(cmd).unwrap(), &w);
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
            Ok(())
        })
        .unwrap();
}

#[test]
fn raw_bytes_as_words_fail_only_with_usage_errors() {
    runner()
        .run(&proptest::collection::vec(any::<u8>(), 0..200), |b| {
            let r = fuzz_words(&b);
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
            Ok(())
        })
        .unwrap();
}

/// One job-file line.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (name(), value()).prop_map(|(n, v)| format!("{n}={v}")),
        2 => (name(), value()).prop_map(|(n, v)| format!(" {n} = {v} ; comment")),
        2 => name(),
        2 => "[a-z ]{0,8}".prop_map(|s| format!("[{s}]")),
        1 => Just("[global]".to_string()),
        1 => Just("[".to_string()),
        1 => Just("[]".to_string()),
        1 => Just("# comment".to_string()),
        1 => Just("include job.fio".to_string()),
        1 => Just("include /dev/null".to_string()),
        1 => Just("include".to_string()),
        1 => any::<String>(),
    ]
}

#[test]
fn job_files_fail_only_with_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    let lines = proptest::collection::vec(line(), 0..12);
    runner()
        .run(&(any::<u8>(), lines), |(pick, l)| {
            let mut data = vec![pick];
            data.extend(l.join("\n").into_bytes());
            let r = fuzz_jobfile(d.path(), &data);
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
            Ok(())
        })
        .unwrap();
}

/// A latency model's text: a model name (or junk), a colon, some values.
fn latency() -> impl Strategy<Value = String> {
    let models = proptest::sample::select(vec![
        "fixed",
        "uniform",
        "normal",
        "lognormal",
        "bimodal",
        "",
        "fixed ",
        "weibull",
    ]);
    let arg = prop_oneof![
        4 => proptest::sample::select(vec![
            "0ns", "10us", "1000000s", "1000000000s", "0", "0.5", "1", "10", "11", "-1", "nan",
            "inf", "1e308", "0.1", "1.1", "-0.0", "", " 10us ", "10", "1h", "31y", "5parsecs",
            "999999999999999999999ns", "18446744073709551615ns",
        ])
        .prop_map(String::from),
        1 => "[0-9.a-z]{0,8}",
    ];
    (models, proptest::collection::vec(arg, 0..5), any::<bool>()).prop_map(|(m, args, colon)| {
        format!("{m}{}{}", if colon { ":" } else { "" }, args.join(","))
    })
}

#[test]
fn latency_models_fail_only_with_usage_errors_and_lose_nothing() {
    runner()
        .run(&latency(), |s| {
            let r = fuzz_latency(s.as_bytes());
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
            Ok(())
        })
        .unwrap();
}

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Every input kept in `fuzz/corpus/` (found by cargo-fuzz, regressions included) still passes.
#[test]
fn the_fuzz_corpus_replays() {
    let d = tempfile::tempdir().unwrap();
    let mut n = 0;
    for (target, f) in [
        (
            "cmdline",
            &(|b: &[u8]| fuzz_words(b)) as &dyn Fn(&[u8]) -> Result<(), String>,
        ),
        ("jobfile", &|b: &[u8]| fuzz_jobfile(d.path(), b)),
        ("sim_latency", &|b: &[u8]| fuzz_latency(b)),
    ] {
        let files = corpus(target);
        assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
        for p in files {
            let b = std::fs::read(&p).unwrap();
            if let Err(e) = f(&b) {
                panic!("{}: {e}", p.display());
            }
            n += 1;
        }
    }
    assert!(n >= 3);
}
