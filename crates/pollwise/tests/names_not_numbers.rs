//! Code and tests name ideas ("bio recycling", "QEMU's adaptive polling"), not the numbers of
//! the issues, findings or source documents they came from: a reader of the repository cannot
//! look those numbers up, and the idea is what the code keeps. History goes in docs/.

use std::path::{Path, PathBuf};

/// Source kinds checked: the workspace's code, tests and bench scripts.
const EXTENSIONS: [&str; 6] = ["rs", "c", "h", "sh", "py", "toml"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap_or_default();
        if p.is_dir() {
            if name != "target" && name != ".git" && name != "__pycache__" {
                files(&p, out);
            }
        } else if p
            .extension()
            .is_some_and(|x| EXTENSIONS.iter().any(|e| x == *e))
        {
            out.push(p);
        }
    }
}

/// Whether `line` cites a number: "issue 17", "finding 8", "Issue #3", "seed 002" (a seed
/// document's three-digit number; "seed 42" for a random generator is a seed, not a citation).
fn cites(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    let after = |word: &str| -> Vec<&str> {
        l.match_indices(word)
            .filter(|(i, _)| *i == 0 || !l.as_bytes()[i - 1].is_ascii_alphanumeric())
            .map(|(i, w)| l[i + w.len()..].trim_start_matches([' ', '#']))
            .collect()
    };
    let digit = |s: &&str| s.starts_with(|c: char| c.is_ascii_digit());
    after("issue").iter().any(digit)
        || after("finding").iter().any(digit)
        || after("seed")
            .iter()
            .any(|s| s.len() >= 3 && s.starts_with("00") && s.as_bytes()[2].is_ascii_digit())
}

#[test]
fn the_rule_reads_citations() {
    assert!(cites("//! Issue 17, finding 7: the deadline"));
    assert!(cites("/// Finding 12: the kernel"));
    assert!(cites("# Seed 003's reactor claims"));
    assert!(cites("see issue #4"));
    assert!(!cites("let seed = 42; // the seed 42 is fixed"));
    assert!(!cites("an issue with 2 rings; findings differ"));
    assert!(!cites("reissue 3 requests"));
}

#[test]
fn no_code_or_test_cites_an_issue_finding_or_seed_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut all = Vec::new();
    for dir in ["crates", "bench", "scripts", "tests", "fuzz", ".ci"] {
        if root.join(dir).is_dir() {
            files(&root.join(dir), &mut all);
        }
    }
    assert!(all.len() > 100, "only {} files found", all.len());
    let this = Path::new(file!()).file_name().unwrap();
    let mut found = Vec::new();
    for f in &all {
        if f.file_name() == Some(this) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if cites(line) {
                let rel = f.strip_prefix(&root).unwrap_or(f);
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the idea instead of the number:\n{}",
        found.join("\n")
    );
}
