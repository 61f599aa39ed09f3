//! Docs that cannot rot: the README and every page of docs/ are checked against the code.
//!
//! - Every ```sh block in README.md and docs/*.md without a `# not run` line runs as written
//!   (bash -e -o pipefail) in an empty temp directory, with this build's `pollwise` first on
//!   PATH and TMPDIR in that directory, and must exit 0 within its time limit.
//! - Every relative link (and image) in README.md, docs/*.md and bench/results/README.md names a
//!   file or directory that exists, and an `#anchor` into a Markdown file names one of its
//!   headings.
//! - docs/options.md, the man page (docs/man/pollwise.1) and the shell completions
//!   (docs/completions/) are what the option table generates: `POLLWISE_BLESS=1 cargo test -p
//!   pollwise-cli --test docs` rewrites them, and the test fails when they are stale.
//! - The man page builds with groff without a warning; the bash completion parses and
//!   completes; the zsh completion parses.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pollwise_cli::options::docgen;
use pollwise_cli::options::jobfile::fio_option_names;
use pollwise_cli::options::table::lookup;

/// How long one block may take (debug build, a loaded 2-core machine); the blocks are written
/// to take seconds.
const BLOCK_LIMIT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every Markdown page in docs/, as (path relative to the root, text).
fn pages() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let t = std::fs::read_to_string(root().join(&n)).unwrap();
            (n, t)
        })
        .collect()
}

/// The fenced blocks of `text` whose info string is `lang`: (first line number, body).
fn blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut cur {
            None => {
                if let Some(info) = line.trim_start().strip_prefix("```") {
                    cur = Some((i + 1, String::new(), info.trim() == lang));
                }
            }
            Some((start, body, wanted)) => {
                if line.trim_start().starts_with("```") {
                    if *wanted {
                        out.push((*start, std::mem::take(body)));
                    }
                    cur = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(cur.is_none(), "a fenced block is not closed");
    out
}

fn not_run(body: &str) -> bool {
    body.lines()
        .any(|l| l.trim_start().starts_with("# not run"))
}

#[test]
fn every_runnable_shell_block_runs() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_pollwise"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    let mut failures = Vec::new();
    for (page, text) in pages() {
        for (line, body) in blocks(&text, "sh") {
            if not_run(&body) {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let mut child = Command::new("bash")
                .args(["-e", "-o", "pipefail", "-c", &body])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("TMPDIR", dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                // stderr carries each command's one-line error; 2>&1 inside would mix reports in.
                .stderr(Stdio::piped())
                // A group of its own: a block that runs over is killed whole, so no command it
                // started keeps stderr open and the reader below waiting.
                .process_group(0)
                .spawn()
                .unwrap();
            // stderr is read on a thread so a chatty block cannot fill the pipe and stall.
            let mut err = child.stderr.take().unwrap();
            let reader = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = std::io::Read::read_to_string(&mut err, &mut s);
                s
            });
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break Some(s);
                }
                if started.elapsed() > BLOCK_LIMIT {
                    // SAFETY: kill(2) with the negated pid of the group we made; no memory.
                    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            let stderr = reader.join().unwrap();
            ran += 1;
            match status {
                Some(s) if s.success() => {}
                Some(s) => failures.push(format!(
                    "{page}:{line}: the block exited {s}; its stderr ends:\n{}",
                    if stderr.trim().is_empty() { "(nothing on stderr)".to_string() } else { tail(&stderr) }
                )),
                None => failures.push(format!(
                    "{page}:{line}: the block ran over {BLOCK_LIMIT:?} (make it faster or mark it `# not run`)"
                )),
            }
        }
    }
    assert!(
        ran >= 5,
        "only {ran} runnable blocks found: the scan is broken"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for l in md.lines() {
        if l.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code && l.starts_with('#') {
            out.push(slug(l.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` outside code blocks and code spans.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, l) in md.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop code spans: a `](` inside backticks is not a link.
        let mut plain = String::new();
        for (k, part) in l.split('`').enumerate() {
            if k % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(p) = rest.find("](") {
            let after = &rest[p + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut all = pages();
    let hist = "bench/results/README.md".to_string();
    let t = std::fs::read_to_string(root().join(&hist)).unwrap();
    all.push((hist, t));
    let mut checked = 0;
    let mut dead = Vec::new();
    for (page, text) in &all {
        let base = root().join(page).parent().unwrap().to_path_buf();
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                root().join(page)
            } else {
                base.join(file)
            };
            checked += 1;
            if !path.exists() {
                dead.push(format!("{page}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(a) = anchor {
                if path.extension().is_some_and(|e| e == "md") {
                    let md = std::fs::read_to_string(&path).unwrap();
                    if !anchors(&md).iter().any(|h| h == a) {
                        dead.push(format!("{page}:{line}: {target}: no heading #{a}"));
                    }
                }
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} links found: the scan is broken"
    );
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

/// The generated documents and where their copies live.
fn generated() -> Vec<(&'static str, String)> {
    vec![
        ("docs/options.md", docgen::options_markdown()),
        ("docs/man/pollwise.1", docgen::man_page()),
        ("docs/completions/pollwise.bash", docgen::bash_completion()),
        ("docs/completions/_pollwise", docgen::zsh_completion()),
    ]
}

#[test]
fn generated_docs_are_current() {
    let bless = std::env::var_os("POLLWISE_BLESS").is_some();
    let mut stale = Vec::new();
    for (rel, text) in generated() {
        let path = root().join(rel);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != text {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "{} stale: rewrite with POLLWISE_BLESS=1 cargo test -p pollwise-cli --test docs",
        stale.join(", ")
    );
}

#[test]
fn options_md_covers_every_option_and_every_fio_option() {
    let md = docgen::options_markdown();
    for o in pollwise_cli::options::table::OPTIONS {
        assert!(
            md.contains(&format!("`--{}`", o.name)),
            "--{} missing from docs/options.md",
            o.name
        );
    }
    for n in fio_option_names() {
        assert!(
            md.contains(&format!("| `{n}` | ")),
            "fio's {n} missing from docs/options.md"
        );
    }
    for n in docgen::ACCEPTED_WITHOUT_EFFECT {
        assert!(
            lookup(n).is_some(),
            "{n} is listed as accepted but is not in the table"
        );
        assert!(
            fio_option_names().any(|f| f == *n),
            "{n} is listed as fio's but fio has no such option"
        );
    }
}

fn pollwise(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .output()
        .unwrap()
}

fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} is missing: install it (apt-get install {}) and run again",
        if tool == "groff" { "groff-base" } else { tool }
    );
}

#[test]
fn man_page_builds() {
    need("groff");
    let out = pollwise(&["man"]);
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("pollwise.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let g = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(g.status.success(), "groff failed");
    assert!(
        g.stderr.is_empty(),
        "groff warns: {}",
        String::from_utf8_lossy(&g.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for o in pollwise_cli::options::table::OPTIONS {
        let roffed = format!("\\fB\\-\\-{}\\fR", o.name.replace('-', "\\-"));
        assert!(text.contains(&roffed), "the man page lacks --{}", o.name);
    }
    // Anything else after `man` is a usage error, not a man page.
    let bad = pollwise(&["man", "extra"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// Completes `words` (the last one being typed) with the bash completion; COMPREPLY's words.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _pollwise; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let out = Command::new("bash").args(["-c", &prog]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn completions_build_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let bash = dir.path().join("pollwise.bash");
    let out = pollwise(&["completions", "bash"]);
    assert!(out.status.success());
    std::fs::write(&bash, &out.stdout).unwrap();
    let n = Command::new("bash").arg("-n").arg(&bash).output().unwrap();
    assert!(
        n.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&n.stderr)
    );
    let c = bash_complete(&bash, &["pollwise", "run", "--iodep"]);
    assert!(c.contains(&"--iodepth=".to_string()), "{c:?}");
    let c = bash_complete(&bash, &["pollwise", "run", "--mode=hy"]);
    assert_eq!(c, vec!["--mode=hybrid".to_string()]);
    let c = bash_complete(&bash, &["pollwise", "scenario", "fair"]);
    assert_eq!(c, vec!["fairness".to_string()]);
    let c = bash_complete(&bash, &["pollwise", "scenario", "fairness", "--bur"]);
    assert_eq!(c, vec!["--burst=".to_string()]);
    // compare takes --modes, not --mode: the completion says what the parser says.
    let c = bash_complete(&bash, &["pollwise", "compare", "--mode"]);
    assert_eq!(c, vec!["--modes=".to_string()]);

    need("zsh");
    let zsh = dir.path().join("_pollwise");
    let out = pollwise(&["completions", "zsh"]);
    assert!(out.status.success());
    std::fs::write(&zsh, &out.stdout).unwrap();
    let n = Command::new("zsh").arg("-n").arg(&zsh).output().unwrap();
    assert!(
        n.status.success(),
        "zsh -n: {}",
        String::from_utf8_lossy(&n.stderr)
    );
    let bad = pollwise(&["completions", "fish"]);
    assert_eq!(bad.status.code(), Some(2));
}
