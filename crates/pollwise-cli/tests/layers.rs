//! Imports point down the layers (docs/design.md), in the command and in the library. In the
//! CLI: options → spec → jobs → commands, a report renders and never runs a job; in the library:
//! base → requests → completions → waiting → drivers. Each top-level module of a crate has a
//! floor below; a module may name (`crate::x`, or `pollwise_cli::x` from main.rs) only modules
//! on lower floors. A new module must be given a floor here, so the order is decided once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The CLI's floors, lowest first; modules on one floor do not use each other.
const FLOORS: &[&[&str]] = &[
    &["loopdev", "phase", "procsignal"],
    &["cleanup", "device", "errno", "latency", "passes", "steady"],
    &["signals"],
    &["error"],
    &["infile"],
    &["exec", "filekind", "fill", "limits", "outfile", "platform"],
    &["iolog", "vstate"],
    &["extras"],
    &["spec"],
    &["options", "target"],
    &["report"],
    &["job"],
    &["calibrate", "jobs"],
    &["advise", "compare", "run"],
    &["scenario"],
    &["main"],
];

/// The waiting library's floors (crates/pollwise/src), lowest first.
const LIBRARY_FLOORS: &[&[&str]] = &[
    &["leaks", "rng", "sync", "sys", "units"],
    &["clock", "ring"],
    &["error"],
    &["request"],
    &["predict", "queue"],
    &["policy"],
    &["poller", "reactor", "waiter"],
];

/// The benchmark's floors (crates/pollwise-bench/src), lowest first: it stands on the whole
/// waiting library, which never names it.
const BENCH_FLOORS: &[&[&str]] = &[
    &["content", "fault", "model", "pattern", "verify"],
    &["digest"],
    &["prio"],
    &["stats"],
    &["engine"],
    &["platform"],
];

fn floor_in(floors: &[&[&str]], module: &str) -> Option<usize> {
    floors.iter().position(|f| f.contains(&module))
}

/// The top-level modules a source text names through `crate::` (or `pollwise_cli::`), comments
/// left out (a doc link is not an import).
fn named_modules(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        for prefix in ["crate::", "pollwise_cli::"] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                let before = rest[..i].chars().last();
                rest = &rest[i + prefix.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                if let Some(group) = rest.strip_prefix('{') {
                    // `crate::{a, b::c}`: each item's first segment (one line's worth).
                    let end = group.find('}').unwrap_or(group.len());
                    for item in group[..end].split(',') {
                        let first = item.trim().split("::").next().unwrap_or("");
                        if !first.is_empty() {
                            out.push(first.to_string());
                        }
                    }
                } else {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push(name);
                    }
                }
            }
        }
    }
    out
}

/// The top-level module a source file belongs to (`src/report/json.rs` → `report`).
fn module_of(src_dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src_dir).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every import that does not point down, as "file: uses module (floor a -> floor b)".
fn violations(floors: &[&[&str]], files: &[(String, String, String)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, module, src) in files {
        if module == "lib" {
            continue;
        }
        let Some(own) = floor_in(floors, module) else {
            bad.push(format!(
                "{name}: module `{module}` has no floor in tests/layers.rs"
            ));
            continue;
        };
        for used in named_modules(src) {
            if used == *module {
                continue;
            }
            match floor_in(floors, &used) {
                Some(f) if f < own => {}
                Some(f) => bad.push(format!(
                    "{name}: uses `{used}` (floor {f}) from `{module}` (floor {own})"
                )),
                // Items of lib.rs itself (re-exports) and names that are not modules.
                None => {}
            }
        }
    }
    bad
}

/// Every import of the crate whose sources are in `src_dir` that does not point down `floors`.
fn check_crate(src_dir: &Path, floors: &[&[&str]]) -> Vec<String> {
    let mut paths = Vec::new();
    rust_files(src_dir, &mut paths);
    let mut files = Vec::new();
    let mut seen = BTreeMap::new();
    for path in &paths {
        let module = module_of(src_dir, path);
        *seen.entry(module.clone()).or_insert(0) += 1;
        let src = std::fs::read_to_string(path).unwrap();
        files.push((path.display().to_string(), module, src));
    }
    // Every module named on a floor exists (a module missing from the floors fails below).
    for m in floors.iter().flat_map(|f| f.iter()) {
        assert!(
            seen.contains_key(*m),
            "tests/layers.rs names `{m}`, which {} lacks",
            src_dir.display()
        );
    }
    violations(floors, &files)
}

#[test]
fn every_import_of_the_command_points_down() {
    let bad = check_crate(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), FLOORS);
    assert!(
        bad.is_empty(),
        "imports that run back up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_import_of_the_library_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise/src");
    let bad = check_crate(&src, LIBRARY_FLOORS);
    assert!(
        bad.is_empty(),
        "imports that run back up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_import_of_the_benchmark_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise-bench/src");
    let bad = check_crate(&src, BENCH_FLOORS);
    assert!(
        bad.is_empty(),
        "imports that run back up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_waiting_library_never_names_the_benchmark() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise/src"),
        &mut files,
    );
    let named: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("pollwise_bench")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        named.is_empty(),
        "the waiting library names the benchmark: {named:?}"
    );
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise/Cargo.toml"),
    )
    .unwrap();
    assert!(
        !manifest
            .lines()
            .any(|l| l.trim_start().starts_with("pollwise-bench")),
        "pollwise depends on the benchmark"
    );
}

#[test]
fn an_import_up_a_floor_is_caught() {
    let files = vec![
        (
            "report/mod.rs".to_string(),
            "report".to_string(),
            "use crate::{error::Error, job::run_job};\n/// [`crate::jobs`] in a comment\n"
                .to_string(),
        ),
        (
            "options/build.rs".to_string(),
            "options".to_string(),
            "let s = crate::spec::JobSpec::default(); let t = crate::target::x();".to_string(),
        ),
        ("new.rs".to_string(), "new".to_string(), String::new()),
    ];
    let bad = violations(FLOORS, &files);
    assert_eq!(bad.len(), 3, "{bad:#?}");
    assert!(bad[0].contains("uses `job`"), "{}", bad[0]);
    assert!(bad[1].contains("uses `target`"), "{}", bad[1]);
    assert!(bad[2].contains("no floor"), "{}", bad[2]);
}
