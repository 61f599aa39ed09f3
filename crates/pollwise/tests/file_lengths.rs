//! No source file of the workspace is over 1000 lines: a file that long holds more than one
//! concern, and is split by concern into small flat modules (a type of its own, the tests in
//! `name/tests.rs`).
//!
//! The command's files that were over when the rule came are listed below, each with what it
//! holds; the list only shrinks: a listed file that is back under the limit fails the test
//! until its line is removed.

use std::path::{Path, PathBuf};

const LIMIT: usize = 1000;

/// Files over the limit for now (path from the workspace root), with what they hold.
const OVER: [(&str, &str); 0] = [];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap_or_default();
        if p.is_dir() {
            if name != "target" && name != ".git" {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates", "fuzz", "tests", "bench"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    files.sort();
    assert!(files.len() > 100, "only {} files found", files.len());
    let mut over = Vec::new();
    let mut listed_under = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let n = std::fs::read_to_string(f).unwrap().lines().count();
        let listed = OVER.iter().any(|(p, _)| *p == rel);
        if n > LIMIT && !listed {
            over.push(format!("{rel}: {n} lines"));
        }
        if n <= LIMIT && listed {
            listed_under.push(format!("{rel}: {n} lines"));
        }
    }
    for (p, _) in OVER {
        assert!(root.join(p).is_file(), "{p} is listed but does not exist");
    }
    assert!(
        over.is_empty(),
        "source files over {LIMIT} lines (split them by concern into small modules):\n{}",
        over.join("\n")
    );
    assert!(
        listed_under.is_empty(),
        "listed as over {LIMIT} lines but no longer are (remove them from OVER):\n{}",
        listed_under.join("\n")
    );
}
