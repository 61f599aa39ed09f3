//! Imports point down the layers (docs/design.md), in the command and in the library. In the
//! CLI: options → spec → jobs → commands, a report renders and never runs a job; in the library:
//! base → requests → completions → waiting → drivers. Each top-level module of a crate has a
//! floor below; a module may name (`crate::x`, or `pollwise_cli::x` from main.rs) only modules
//! on lower floors. A new module must be given a floor here, so the order is decided once.
//!
//! Inside a module, its files (one concept each) import each other with no circle either:
//! `job/thread.rs` may use `job/threads.rs` or be used by it, not both, through any number of
//! files. A path that names an item the module's front (`mod.rs`, or `x.rs` beside `x/`)
//! re-exports counts as naming the file it comes from; the front itself is the module's door,
//! not a floor, and test code (`#[cfg(test)]`) may reach any file it tests.

use std::collections::{BTreeMap, BTreeSet};
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `src` with its comments, strings and character literals blanked (lines kept), so that the
/// paths and braces left are the code's own.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(b[i - 1]);
        let start = i;
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && !prev_ident || c == 'b' && next == Some('r') && !prev_ident {
            // A raw string (r"..", r#".."#, br".."), or an identifier that starts with r or b.
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                i = j;
            } else {
                out.push(c);
                i += 1;
                continue;
            }
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && next == Some('\\') {
            // '\n', '\'', '\u{..}': the escaped character, then to the closing quote.
            i += 3;
            while i < b.len() && b[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            // Code, or a lifetime.
            out.push(c);
            i += 1;
            continue;
        }
        let end = i.min(b.len());
        out.extend(b[start..end].iter().map(|&c| blank(c)));
        i = end;
    }
    out
}

/// The index just past the block whose `{` is at `open` (or the end).
fn block_end(b: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// `code` (from [`code_only`]) with every `#[cfg(test)]` item blanked, and the names of the
/// modules it declares as test code in files of their own (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let mut b: Vec<char> = code.chars().collect();
    let attr: Vec<char> = ATTR.chars().collect();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i + attr.len() <= b.len() {
        if b[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        // The item: up to its `;`, or through its block.
        let mut j = i + attr.len();
        let mut nest = 0i32;
        let end = loop {
            match b.get(j) {
                None => break b.len(),
                Some('(' | '[') => nest += 1,
                Some(')' | ']') => nest -= 1,
                Some(';') if nest == 0 => break j + 1,
                Some('{') if nest == 0 => break block_end(&b, j),
                _ => {}
            }
            j += 1;
        };
        let item: String = b[i + attr.len()..end].iter().collect();
        let words: Vec<&str> = item
            .split(|c: char| !is_ident(c) && c != ';')
            .filter(|w| !w.is_empty())
            .collect();
        // `mod x;` (or `pub mod x;`, `pub(crate) mod x;`): a file of test code.
        let mut words = words
            .iter()
            .skip_while(|w| ["pub", "crate", "super"].contains(w));
        if let (Some(&"mod"), Some(name)) = (words.next(), words.next()) {
            if let Some(name) = name.strip_suffix(';') {
                test_files.push(name.to_string());
            }
        }
        for c in &mut b[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    (b.into_iter().collect(), test_files)
}

/// One path of a use tree: its segments and the name it is brought in as (`as`).
struct UsePath {
    segments: Vec<String>,
    alias: Option<String>,
}

/// Reads the path (or use tree) at `*i`, under `prefix`, into `out`.
fn use_tree(b: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<UsePath>) {
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_whitespace() {
            *i += 1;
        }
    };
    let word = |i: &mut usize| {
        let mut w = String::new();
        while *i < b.len() && (is_ident(b[*i]) || b[*i] == '*') {
            w.push(b[*i]);
            *i += 1;
        }
        w
    };
    let mut segments = prefix;
    loop {
        skip_ws(i);
        if b.get(*i) == Some(&'{') {
            *i += 1;
            loop {
                skip_ws(i);
                match b.get(*i) {
                    None => return,
                    Some('}') => {
                        *i += 1;
                        return;
                    }
                    Some(',') => *i += 1,
                    _ => {
                        let before = *i;
                        use_tree(b, i, segments.clone(), out);
                        if *i == before {
                            *i += 1;
                        }
                    }
                }
            }
        }
        let w = word(i);
        if w.is_empty() {
            break;
        }
        segments.push(w);
        if b.get(*i) == Some(&':') && b.get(*i + 1) == Some(&':') {
            *i += 2;
            continue;
        }
        let mut j = *i;
        skip_ws(&mut j);
        if b.get(j) == Some(&'a')
            && b.get(j + 1) == Some(&'s')
            && b.get(j + 2).is_some_and(|c| c.is_whitespace())
        {
            j += 2;
            skip_ws(&mut j);
            let alias = word(&mut j);
            *i = j;
            out.push(UsePath {
                segments,
                alias: Some(alias),
            });
            return;
        }
        break;
    }
    out.push(UsePath {
        segments,
        alias: None,
    });
}

/// A source file of a crate: its module path (`job/thread.rs` → `job::thread`, `job/mod.rs` →
/// `job`) and its code, tests left out.
struct SourceFile {
    name: String,
    module: Vec<String>,
    code: String,
    test_files: Vec<String>,
}

impl SourceFile {
    fn new(rel: &Path, src: &str) -> SourceFile {
        let mut module: Vec<String> = rel
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let (code, test_files) = without_tests(&code_only(src));
        SourceFile {
            name: rel.display().to_string(),
            module,
            code,
            test_files,
        }
    }

    /// Every path the code names through `crate::`, `super::` or `self::` (each of a group on
    /// its own): the module path it resolves to (inline modules counted), and the path.
    fn paths(&self) -> Vec<(Vec<String>, String)> {
        let b: Vec<char> = self.code.chars().collect();
        // Inline modules (`mod x { .. }`): where each opens and closes, and its name.
        let mut inline = Vec::new();
        for (k, _) in self.code.match_indices("mod ") {
            let k = self.code[..k].chars().count();
            if k > 0 && is_ident(b[k - 1]) {
                continue;
            }
            let mut j = k + 4;
            let name: String = b[j..].iter().take_while(|c| is_ident(**c)).collect();
            j += name.chars().count();
            while j < b.len() && b[j].is_whitespace() {
                j += 1;
            }
            if !name.is_empty() && b.get(j) == Some(&'{') {
                inline.push((j, block_end(&b, j), name));
            }
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let rest: String = b[i..(i + 7).min(b.len())].iter().collect();
            let starts = ["crate::", "super::", "self::"]
                .iter()
                .any(|p| rest.starts_with(p));
            let prev = if i > 0 { b[i - 1] } else { ' ' };
            if !starts || is_ident(prev) || prev == ':' || prev == '$' {
                i += 1;
                continue;
            }
            let mut base = self.module.clone();
            base.extend(
                inline
                    .iter()
                    .filter(|(open, close, _)| *open < i && i < *close)
                    .map(|(_, _, n)| n.clone()),
            );
            let start = i;
            let mut trees = Vec::new();
            use_tree(&b, &mut i, Vec::new(), &mut trees);
            i = i.max(start + 1);
            for t in trees {
                let written = t.segments.join("::").replace("::self", "");
                let mut at = base.clone();
                for (n, seg) in t.segments.iter().enumerate() {
                    match seg.as_str() {
                        "crate" if n == 0 => at.clear(),
                        "super" => {
                            at.pop();
                        }
                        "self" => {}
                        _ => at.push(seg.clone()),
                    }
                }
                out.push((at, written));
            }
        }
        out
    }

    /// What the file brings in through `use` paths that start with one of `children`
    /// (`pub use check::{job_need, ..}`): each name, and the child it comes from.
    fn brought_from(&self, children: &BTreeSet<String>) -> BTreeMap<String, String> {
        let b: Vec<char> = self.code.chars().collect();
        let mut out = BTreeMap::new();
        for (k, _) in self.code.match_indices("use ") {
            let mut i = self.code[..k].chars().count();
            if i > 0 && is_ident(b[i - 1]) {
                continue;
            }
            i += 4;
            let mut trees = Vec::new();
            use_tree(&b, &mut i, Vec::new(), &mut trees);
            for t in trees {
                let segs: Vec<&String> = t.segments.iter().filter(|s| *s != "self").collect();
                if let (Some(first), Some(last)) = (segs.first(), segs.last()) {
                    if segs.len() > 1 && children.contains(*first) {
                        out.insert(t.alias.unwrap_or((*last).clone()), (*first).clone());
                    }
                }
            }
        }
        out
    }
}

/// The circles among the files of each module of a crate (each below the crate's own top
/// floor, which the floors order): each as the module, its files in the circle, and what ties
/// them ("a.rs: super::b::X").
fn circles_inside_modules(files: &[(PathBuf, String)]) -> Vec<String> {
    let all: Vec<SourceFile> = files
        .iter()
        .map(|(rel, src)| SourceFile::new(rel, src))
        .collect();
    // Test code in files of their own (`#[cfg(test)] mod tests;`), left out as inline tests are.
    let tests: Vec<Vec<String>> = all
        .iter()
        .flat_map(|f| {
            f.test_files.iter().map(|t| {
                let mut m = f.module.clone();
                m.push(t.clone());
                m
            })
        })
        .collect();
    let files: Vec<&SourceFile> = all
        .iter()
        .filter(|f| !f.module.is_empty() && !tests.iter().any(|t| f.module.starts_with(t)))
        .collect();
    // Every module with files below it, and those files' names one level down.
    let mut modules: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        for depth in 1..f.module.len() {
            modules
                .entry(f.module[..depth].to_vec())
                .or_default()
                .insert(f.module[depth].clone());
        }
    }
    let mut found = Vec::new();
    for (module, children) in &modules {
        let front = files.iter().find(|f| f.module == *module);
        let brought = front.map(|f| f.brought_from(children)).unwrap_or_default();
        // child -> child it names, with the first place that names it.
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for f in files
            .iter()
            .filter(|f| f.module.len() > module.len() && f.module.starts_with(module))
        {
            let from = &f.module[module.len()];
            for (path, written) in f.paths() {
                if path.len() <= module.len() || !path.starts_with(module) {
                    continue;
                }
                let named = &path[module.len()];
                let to = if children.contains(named) {
                    named
                } else if let Some(child) = brought.get(named) {
                    child
                } else {
                    continue;
                };
                if to != from {
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to.clone())
                        .or_insert_with(|| format!("{}: {written}", f.name));
                }
            }
        }
        for circle in strongly_connected(children, &edges) {
            let mut ties = Vec::new();
            for (a, to) in edges.iter().filter(|(a, _)| circle.contains(*a)) {
                for (b, at) in to.iter().filter(|(b, _)| circle.contains(*b)) {
                    ties.push(format!("  {a} -> {b} ({at})"));
                }
            }
            found.push(format!(
                "`{}`: its files {} import each other:\n{}",
                module.join("::"),
                circle.join(", "),
                ties.join("\n")
            ));
        }
    }
    found
}

/// The groups of more than one node that reach each other along `edges` (Tarjan's).
fn strongly_connected(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on_stack.insert(v);
        if let Some(to) = w.edges.get(v) {
            for u in to.keys() {
                let u = u.as_str();
                if !w.index.contains_key(u) {
                    visit(w, u);
                    let l = w.low[u].min(w.low[v]);
                    w.low.insert(v, l);
                } else if w.on_stack.contains(u) {
                    let l = w.index[u].min(w.low[v]);
                    w.low.insert(v, l);
                }
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(u);
                group.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                w.out.push(group);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

/// The circles inside the modules of the crate whose sources are in `src_dir`.
fn check_crate_inside(src_dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    rust_files(src_dir, &mut paths);
    let files: Vec<(PathBuf, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(src_dir).unwrap().to_path_buf();
            (rel, std::fs::read_to_string(p).unwrap())
        })
        .filter(|(rel, _)| rel != Path::new("main.rs") && rel != Path::new("lib.rs"))
        .collect();
    circles_inside_modules(&files)
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

/// The benchmark's circles inside a module that are known and not yet undone, each by its
/// first line: the engine's config.rs holds the other files' configs (re-exported by
/// engine/mod.rs) and they read `EngineConfig`. Any other circle fails, and so does one of
/// these once it is gone, so that its line goes too.
const BENCH_KNOWN_CIRCLES: &[&str] =
    &["`engine`: its files config, errors, pacing, pattern, verify import each other:"];

/// Fails on every circle of `found` but those `known` names, and on a known one not found.
fn assert_circles(found: &[String], known: &[&str]) {
    let first = |c: &String| c.lines().next().unwrap_or("").to_string();
    let new: Vec<&str> = found
        .iter()
        .filter(|c| !known.contains(&first(c).as_str()))
        .map(|c| c.as_str())
        .collect();
    assert!(
        new.is_empty(),
        "circles inside modules:\n{}",
        new.join("\n")
    );
    for k in known {
        assert!(
            found.iter().any(|c| first(c) == *k),
            "{k}: no longer a circle; take it out of the known ones in tests/layers.rs"
        );
    }
}

#[test]
fn no_module_of_the_command_has_a_circle_inside() {
    let found = check_crate_inside(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert_circles(&found, &[]);
}

#[test]
fn no_module_of_the_library_has_a_circle_inside() {
    let found = check_crate_inside(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise/src"));
    assert_circles(&found, &[]);
}

#[test]
fn no_module_of_the_benchmark_has_a_circle_inside_but_the_known() {
    let found =
        check_crate_inside(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../pollwise-bench/src"));
    assert_circles(&found, BENCH_KNOWN_CIRCLES);
}

#[test]
fn a_circle_inside_a_module_is_caught() {
    let file = |p: &str, src: &str| (PathBuf::from(p), src.to_string());
    let mut files = vec![
        // The front: its re-exports name the files they come from; its own imports are not
        // a floor's.
        file(
            "job/mod.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\npub use a::{run, Thing as Renamed};\npub use d::Free;\n",
        ),
        // a -> b -> c -> a, through a group over two lines, a re-export and a path in code.
        file("job/a.rs", "use super::{\n    b::go,\n    Free,\n};\n"),
        file("job/b.rs", "use super::Free;\nfn f() { crate::job::c::x(); }\n"),
        file("job/c.rs", "use super::Renamed; // super::d in a comment\n"),
        // b -> d; d names b only in a string, test code and as its own inline module.
        file(
            "job/d.rs",
            "const Q: [char; 2] = ['\\'', '\"'];\nconst S: &str = \"super::b\";\nmod b { pub fn go() {} }\nmod inner { use super::b::go; }\n#[cfg(test)]\nmod tests { use super::super::b::go; }\n",
        ),
        // A file of test code (`#[cfg(test)] mod tests;` in b.rs) reaches anything.
        file("job/b/tests.rs", "use super::super::a::run;\n"),
        // One level down: plot/{p, q} name each other.
        file("report/plot.rs", "mod p;\nmod q;\n"),
        file("report/plot/p.rs", "use super::q::Q;\n"),
        file("report/plot/q.rs", "use crate::report::plot::p::P;\n"),
    ];
    files[2].1.push_str("#[cfg(test)]\nmod tests;\n");
    let bad = circles_inside_modules(&files);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    let job = [
        "`job`: its files a, b, c import each other:",
        "  a -> b (job/a.rs: super::b::go)",
        "  b -> c (job/b.rs: crate::job::c::x)",
        "  c -> a (job/c.rs: super::Renamed)",
    ];
    assert_eq!(bad[0], job.join("\n"));
    assert!(
        bad[1].starts_with("`report::plot`: its files p, q"),
        "{}",
        bad[1]
    );
}
