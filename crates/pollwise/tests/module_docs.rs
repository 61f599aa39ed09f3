//! Every module of the library opens with its rule and the reason for it, in a screen.
//!
//! A module's leading `//!` block (after any inner attributes) may hold at most 30 lines of
//! prose; lines inside a fenced code block (the crate's runnable example, a protocol drawn as
//! text) are not counted. History, measurements and long explanations belong in docs/ (the
//! guide to waiting, the design page), where they can be kept up to date with their figures.

use std::path::{Path, PathBuf};

const LIMIT: usize = 30;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The prose lines of the leading `//!` block of `text`.
fn leading_doc_prose(text: &str) -> usize {
    let mut lines = text.lines().skip_while(|l| l.starts_with("#![")).peekable();
    let mut prose = 0;
    let mut in_code = false;
    while let Some(l) = lines.next_if(|l| l.starts_with("//!")) {
        let body = l.trim_start_matches("//!").trim();
        if body.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            prose += 1;
        }
    }
    prose
}

/// The waiting library's sources and the benchmark's, which keeps the same rule.
#[test]
fn module_docs_fit_a_screen() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    for src in [manifest.join("src"), manifest.join("../pollwise-bench/src")] {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        assert!(
            files.len() > 10,
            "only {} files found in {}",
            files.len(),
            src.display()
        );
        long.extend(files.iter().filter_map(|f| {
            let n = leading_doc_prose(&std::fs::read_to_string(f).unwrap());
            (n > LIMIT)
                .then(|| format!("{}: {n} lines", f.strip_prefix(&src).unwrap_or(f).display()))
        }));
    }
    assert!(
        long.is_empty(),
        "module docs longer than {LIMIT} lines of prose (keep the rule and its reason; move the rest to docs/):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_count_skips_attributes_and_code() {
    let text = "#![warn(missing_docs)]\n//! one\n//!\n//! ```\n//! code\n//! code\n//! ```\n//! two\nuse x;\n//! not leading\n";
    assert_eq!(leading_doc_prose(text), 3);
}
