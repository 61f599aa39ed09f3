//! The library's public face: what `cargo doc -p pollwise` shows without the `internals` feature.
//!
//! A library user gets the waiter and its policies, queues, ring views, requests, clock, errors,
//! the reactor and the shared poller; the benchmark (engine, workloads, stats, the platform
//! model) is another crate. The internals the benchmark is built from (raw system calls, the
//! random generator, the size and duration grammar) are private unless the `internals` feature
//! is on, which only the benchmark and the `pollwise` command enable. This test documents the crate
//! without the feature (its own target dir, so the workspace's unified features do not apply)
//! and compares the modules rustdoc lists with the face below: a module made public, or one
//! of the face made private, fails it until the list here is changed on purpose.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every public module path, without the `internals` feature.
const FACE: &[&str] = &[
    "clock", "leaks", "policy", "poller", "predict", "queue", "reactor", "request", "ring", "spsc",
    "waiter",
];

/// Internal modules, which must not appear anywhere in the face (by last path segment).
const INTERNAL: &[&str] = &["sys", "rng", "units"];

/// The `"mod"` list of a rustdoc `sidebar-items.js`.
fn modules(sidebar: &str) -> Vec<String> {
    let Some(start) = sidebar.find("\"mod\":[") else {
        return Vec::new();
    };
    let rest = &sidebar[start + "\"mod\":[".len()..];
    let end = rest.find(']').expect("an unterminated module list");
    rest[..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every public module path below `dir` (rustdoc's output for module `prefix`).
fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let sidebar = std::fs::read_to_string(dir.join("sidebar-items.js"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("sidebar-items.js").display()));
    for m in modules(&sidebar) {
        let path = if prefix.is_empty() {
            m.clone()
        } else {
            format!("{prefix}::{m}")
        };
        walk(&dir.join(&m), &path, out);
        out.push(path);
    }
}

#[test]
fn only_the_face_is_public_without_the_internals_feature() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target: PathBuf = manifest.join("../../target/public-face");
    let out = Command::new(env!("CARGO"))
        .args(["doc", "--quiet", "--locked", "--no-deps", "-p", "pollwise"])
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTDOCFLAGS")
        .current_dir(manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo doc -p pollwise failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut public = Vec::new();
    walk(&target.join("doc/pollwise"), "", &mut public);
    public.sort();

    let top: Vec<&str> = public
        .iter()
        .map(String::as_str)
        .filter(|p| !p.contains("::"))
        .collect();
    assert_eq!(
        top, FACE,
        "the crate's top-level public modules changed: make a benchmark internal public only \
         under the `internals` feature (lib.rs's internal_mod!), or change FACE on purpose"
    );
    let leaked: Vec<&String> = public
        .iter()
        .filter(|p| {
            INTERNAL.iter().any(|i| {
                p.as_str() == *i
                    || p.ends_with(&format!("::{i}"))
                    || p.starts_with(&format!("{i}::"))
            })
        })
        .collect();
    assert!(
        leaked.is_empty(),
        "internal modules are public without the feature: {leaked:?}"
    );
    // The walk went below the top level (queue's own queues are public), so an empty or
    // unreadable listing cannot pass.
    assert!(
        public.iter().any(|p| p == "queue::uring"),
        "no queue::uring in {public:?}"
    );
}
