//! fio job files, read into the same [`Section`]s as the command line.
//!
//! fio's ini format: `[global]` and `[job]` sections; `;` and `#` start comments (at the start
//! of a line or after a value); `key=value`, `key = value` or a bare `key` (1); `include FILE`
//! (options only, relative to the including file); `${VAR}` is the environment variable VAR.
//! Options in a `[global]` section apply to the jobs after it. Each setting keeps its file and
//! line, so every message about it names them.
//!
//! Jobs are then built as fio builds them ([`job_settings`]): the `[global]` settings seen so far,
//! then the job's own, then the command line's options (which apply to every job and override
//! the file's values). A second job file's first job waits for the first file's jobs (fio puts a
//! stonewall between job files).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

use super::cmdline::{CmdLine, Origin, Section, Setting, GLOBAL};
use super::table::{lookup, normalize};

/// fio's option names and aliases (fio 3.33's options.c and engines), one a line; see
/// `scripts/fio-option-names.py`.
const FIO_OPTIONS: &str = include_str!("fio_options.txt");

/// fio's option names and aliases, in the list's order.
pub fn fio_option_names() -> impl Iterator<Item = &'static str> {
    FIO_OPTIONS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// Whether fio has an option called `name` (dashes and underscores alike).
pub fn is_fio_option(name: &str) -> bool {
    let n = normalize(name);
    fio_option_names().any(|l| l == n)
}

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// `${VAR}` replaced by the environment's VAR; an unset variable is an error naming it.
fn expand(s: &str, at: &Origin) -> Result<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            return Err(usage(format!("{at}: '${{' without a closing '}}'")));
        };
        let var = &after[..j];
        match std::env::var(var) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
                return Err(usage(format!(
                    "{at}: environment variable {var} (in ${{{var}}}) is not set: export it or write the value"
                )))
            }
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The line without its comment and surrounding blanks (fio's `strip_blank_end`).
fn strip(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim()
}

fn setting(line: &str, at: Origin) -> Result<Setting> {
    let line = expand(line, &at)?;
    let (given, value) = match line.split_once('=') {
        Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
        None => (line.trim().to_string(), None),
    };
    if given.is_empty() {
        return Err(usage(format!("{at}: '{line}' has no option name")));
    }
    let key = lookup(&given).map_or_else(|| normalize(&given), |o| o.name.to_string());
    Ok(Setting {
        key,
        given,
        value,
        origin: at,
    })
}

/// The longest job file (or included file) read: job files are a few lines; a larger one is a
/// mistake (`include /dev/zero`, a log file) that would otherwise be read whole into memory.
pub const MAX_JOB_FILE: u64 = 1 << 20;

/// The job file name that means standard input (fio's `fio -`).
pub const STDIN: &str = "-";

/// A job file on standard input (fio's `fio -`), read to its end under the same cap.
fn read_stdin() -> Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_JOB_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| {
            usage(format!(
                "cannot read the job file on standard input (-): {e}"
            ))
        })?;
    if buf.len() as u64 > MAX_JOB_FILE {
        return Err(usage(format!(
            "the job file on standard input (-) is longer than {MAX_JOB_FILE} bytes: a job file holds a few lines of options"
        )));
    }
    String::from_utf8(buf).map_err(|_| {
        usage("the job file on standard input (-) is not UTF-8 text: a job file holds lines of key=value".into())
    })
}

fn read(path: &Path, from: Option<&Origin>) -> Result<String> {
    if from.is_none() && path == Path::new(STDIN) {
        return read_stdin();
    }
    let by = from
        .map(|o| format!(" (included at {o})"))
        .unwrap_or_default();
    // A device or a FIFO (`/dev/zero`, `/dev/stdin`) never ends or blocks: only regular files,
    // under a cap (see `infile`).
    let text = crate::infile::read_text("the job file", path, MAX_JOB_FILE).map_err(|e| {
        let fix = match e {
            crate::infile::Refused::Io(_) => "check the path",
            crate::infile::Refused::NotAFile(_) => "name a file holding the job's options",
            crate::infile::Refused::Larger(_) => "a job file holds a few lines of options",
        };
        usage(format!(
            "{}; {fix}",
            e.about(&format!("job file {}{by}", path.display()))
        ))
    })?;
    text.ok_or_else(|| {
        usage(format!(
            "job file {}{by} is not UTF-8 text: a job file holds lines of key=value",
            path.display()
        ))
    })
}

/// How deep includes may nest (an included file including another counts one more).
pub const MAX_INCLUDE_DEPTH: usize = 16;
/// The most files one job file may include, directly or not, repeats counted: a few includes
/// share options; thousands are a fan-out (each file including the next several times) that
/// would otherwise expand without end.
pub const MAX_INCLUDED_FILES: usize = 256;
/// The most bytes one job file's includes may read in all.
pub const MAX_INCLUDED_BYTES: u64 = 4 * MAX_JOB_FILE;

/// What a job file's includes have read so far: the chain of files being read (to name a
/// cycle), and the files and bytes in all (to stop a fan-out).
#[derive(Default)]
struct Includes {
    chain: Vec<PathBuf>,
    files: usize,
    bytes: u64,
}

/// Reads the options of an included file into `into`.
fn include(path: &Path, at: &Origin, into: &mut Vec<Setting>, inc: &mut Includes) -> Result<()> {
    let id = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(i) = inc.chain.iter().position(|p| *p == id) {
        let cycle: Vec<String> = inc.chain[i..]
            .iter()
            .chain([&id])
            .map(|p| p.display().to_string())
            .collect();
        return Err(usage(format!(
            "{at}: include {} makes a cycle ({}): remove one of these includes",
            path.display(),
            cycle.join(" -> ")
        )));
    }
    if inc.chain.len() >= MAX_INCLUDE_DEPTH {
        return Err(usage(format!(
            "{at}: includes nest more than {MAX_INCLUDE_DEPTH} deep at {}: include the options fewer levels down",
            path.display()
        )));
    }
    inc.files += 1;
    if inc.files > MAX_INCLUDED_FILES {
        return Err(usage(format!(
            "{at}: include {}: more than {MAX_INCLUDED_FILES} files included in all (do includes fan out, each file including the next several times?): include each file once",
            path.display()
        )));
    }
    let text = read(path, Some(at))?;
    inc.bytes += text.len() as u64;
    if inc.bytes > MAX_INCLUDED_BYTES {
        return Err(usage(format!(
            "{at}: include {}: the included files hold more than {} MiB in all: a job file's includes hold a few lines of options",
            path.display(),
            MAX_INCLUDED_BYTES >> 20
        )));
    }
    inc.chain.push(id);
    for (here, l) in lines(path, &text) {
        if l.starts_with('[') {
            return Err(usage(format!(
                "{here}: an included file holds options only, no [sections] (as in fio)"
            )));
        }
        if let Some(f) = include_target(l) {
            include(&resolve(path, f), &here, into, inc)?;
            continue;
        }
        into.push(setting(l, here)?);
    }
    inc.chain.pop();
    Ok(())
}

/// The lines of `text` (read from `path`) that hold something, comments stripped, each with
/// where it stands.
fn lines<'a>(path: &'a Path, text: &'a str) -> impl Iterator<Item = (Origin, &'a str)> + 'a {
    text.lines().enumerate().filter_map(move |(n, raw)| {
        let l = strip(raw);
        let at = Origin::JobFile {
            path: path.to_path_buf(),
            line: n + 1,
        };
        (!l.is_empty()).then_some((at, l))
    })
}

fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    rest.starts_with([' ', '\t'])
        .then(|| rest.trim())
        .filter(|f| !f.is_empty())
}

/// `name` relative to the directory of `file` unless absolute or present as given (fio).
fn resolve(file: &Path, name: &str) -> PathBuf {
    let p = PathBuf::from(name);
    if p.is_absolute() || p.exists() {
        return p;
    }
    file.parent().map_or(p.clone(), |d| d.join(&p))
}

/// Reads the job file at `path` into sections, in file order (`[global]` sections included).
pub fn parse_file(path: &Path) -> Result<Vec<Section>> {
    let text = read(path, None)?;
    parse_text(path, &text)
}

/// As [`parse_file`], over `text` read from `path`.
pub fn parse_text(path: &Path, text: &str) -> Result<Vec<Section>> {
    let mut sections: Vec<Section> = Vec::new();
    let mut inc = Includes {
        chain: vec![std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())],
        ..Includes::default()
    };
    for (at, l) in lines(path, text) {
        if let Some(head) = l.strip_prefix('[') {
            let Some(name) = head.strip_suffix(']') else {
                return Err(usage(format!(
                    "{at}: section header '{l}' has no closing ']'"
                )));
            };
            let name = expand(name.trim(), &at)?;
            if name.is_empty() {
                return Err(usage(format!("{at}: empty section name '[]'")));
            }
            sections.push(Section {
                name,
                settings: Vec::new(),
            });
            continue;
        }
        let Some(current) = sections.last_mut() else {
            return Err(usage(format!(
                "{at}: option '{l}' outside of a [section]: put it under [global] or a [job]"
            )));
        };
        if let Some(f) = include_target(l) {
            include(&resolve(path, f), &at, &mut current.settings, &mut inc)?;
            continue;
        }
        current.settings.push(setting(l, at)?);
    }
    Ok(sections)
}

/// Whether a section is fio's `[global]` (fio compares the first six letters).
fn is_global(name: &str) -> bool {
    name.starts_with(GLOBAL)
}

/// The sections `--section` asks for (fio runs only those of its job files; none: all).
fn wanted_sections(line: &CmdLine) -> Vec<String> {
    line.merged()
        .filter(|s| s.key == "section")
        .filter_map(|s| s.value.clone())
        .collect()
}

/// The job files of `line` (its words that are not options), each checked to exist: a word
/// that names no file is refused as what it is, a stray word, not as a job file.
fn job_files(line: &CmdLine) -> Result<Vec<PathBuf>> {
    line.positional
        .iter()
        .map(|(_, word)| {
            let path = PathBuf::from(word);
            if path.exists() || word == STDIN {
                Ok(path)
            } else {
                Err(usage(format!(
                    "unexpected argument '{}': it is no option (options are written --option=value) and no file to read jobs from",
                    crate::error::shown(word)
                )))
            }
        })
        .collect()
}

/// The settings of every job to run, each in order (later wins): for job files, the `[global]`
/// settings before the job, a `name` setting from the section header, the job's own, then the
/// command line's options; without job files, the command line's jobs (`--name` sections).
/// A second job file's first job gets a `stonewall`. With `--section`, only the job files'
/// sections of those names run (fio's); `[global]` sections apply as ever.
pub fn job_settings(line: &CmdLine) -> Result<Vec<Vec<Setting>>> {
    let wanted = wanted_sections(line);
    let files = job_files(line)?;
    if files.is_empty() {
        if let Some(w) = wanted.first() {
            return Err(usage(format!(
                "--section={w} picks sections of job files, and none is given: name the job file (pollwise run --section={w} FILE)"
            )));
        }
        return Ok(line
            .jobs()
            .into_iter()
            .map(|j| j.into_iter().cloned().collect())
            .collect());
    }
    if line.sections.len() > 1 {
        let s = &line.sections[1];
        return Err(usage(format!(
            "--name={} with a job file: pollwise takes jobs from the file or from --name, not both; put the job in the file as [{}]",
            s.name, s.name
        )));
    }
    if let Some(w) = wanted.iter().find(|w| is_global(w)) {
        return Err(usage(format!(
            "--section={w}: [global] holds options for the jobs, not a job: name a job's section"
        )));
    }
    let cmdline = &line.sections[0].settings;
    let mut jobs = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let mut global: Vec<Setting> = Vec::new();
        let mut first = true;
        for section in parse_file(path)? {
            if is_global(&section.name) {
                global.extend(section.settings);
                continue;
            }
            seen.push(section.name.clone());
            if !wanted.is_empty() && !wanted.contains(&section.name) {
                continue;
            }
            let at = section.settings.first().map_or_else(
                || Origin::JobFile {
                    path: path.clone(),
                    line: 0,
                },
                |s| s.origin.clone(),
            );
            let mut s = global.clone();
            s.push(Setting {
                key: "name".into(),
                given: "name".into(),
                value: Some(section.name.clone()),
                origin: at.clone(),
            });
            if i > 0 && first {
                s.push(Setting {
                    key: "stonewall".into(),
                    given: "stonewall".into(),
                    value: Some("1".into()),
                    origin: at,
                });
            }
            first = false;
            s.extend(section.settings);
            s.extend(cmdline.iter().cloned());
            jobs.push(s);
            // fio's limit on jobs, before the rest of a huge file is expanded.
            if jobs.len() as u64 > crate::limits::MAX_JOBS {
                return Err(usage(format!(
                    "{} defines more than {} jobs, fio's limit (FIO_MAX_JOBS): split it into runs of at most that many",
                    crate::error::shown(&path.display().to_string()),
                    crate::limits::MAX_JOBS
                )));
            }
        }
    }
    let names = || {
        files
            .iter()
            .map(|p| crate::error::shown(&p.display().to_string()).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(w) = wanted.iter().find(|w| !seen.contains(w)) {
        return Err(usage(format!(
            "--section={w}: {} has no section [{w}]; its sections: {}",
            names(),
            if seen.is_empty() {
                "none".to_string()
            } else {
                seen.join(", ")
            }
        )));
    }
    if jobs.is_empty() {
        return Err(usage(format!(
            "{} defines no job: add a [job] section",
            names()
        )));
    }
    Ok(jobs)
}

/// fio's `--showcmd`: each job file of `line` as one command line, `prog` then the options in
/// the order the file gives them, `--name=SECTION` before each job's (the sections `--section`
/// picks). A command line without job files shows nothing, as in fio.
pub fn showcmd(line: &CmdLine, prog: &str) -> Result<String> {
    let wanted = wanted_sections(line);
    let mut out = String::new();
    for path in job_files(line)? {
        let mut words = vec![prog.to_string()];
        for section in parse_file(&path)? {
            let global = is_global(&section.name);
            if !global && !wanted.is_empty() && !wanted.contains(&section.name) {
                continue;
            }
            if !global {
                words.push(format!("--name={}", section.name));
            }
            for s in &section.settings {
                words.push(match &s.value {
                    Some(v) => format!("--{}={v}", s.given),
                    None => format!("--{}", s.given),
                });
            }
        }
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(s: &Section) -> Vec<(String, Option<String>)> {
        s.settings
            .iter()
            .map(|x| (x.key.clone(), x.value.clone()))
            .collect()
    }

    #[test]
    fn ini_forms() {
        std::env::set_var("POLLWISE_TEST_BS", "8k");
        let t = "; a comment\n# another\n[global]\nioengine = io_uring ; trailing\ndirect\n\n[job one]\nbs=${POLLWISE_TEST_BS}\nreadwrite=randread # x\n";
        let s = parse_text(Path::new("/x/j.fio"), t).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "global");
        let p = |k: &str, v: Option<&str>| (k.to_string(), v.map(String::from));
        assert_eq!(
            kv(&s[0]),
            [p("ioengine", Some("io_uring")), p("direct", None)]
        );
        assert_eq!(s[1].name, "job one");
        assert_eq!(kv(&s[1]), [p("bs", Some("8k")), p("rw", Some("randread"))]);
        assert_eq!(
            s[1].settings[0].origin,
            Origin::JobFile {
                path: "/x/j.fio".into(),
                line: 8
            }
        );
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = parse_text(Path::new("j.fio"), "bs=4k\n").unwrap_err();
        assert!(
            e.to_string().contains("j.fio:1") && e.to_string().contains("outside"),
            "{e}"
        );
        let e = parse_text(Path::new("j.fio"), "[a\n").unwrap_err();
        assert!(e.to_string().contains("j.fio:1"), "{e}");
        let e = parse_text(Path::new("j.fio"), "[a]\nbs=${POLLWISE_SURELY_UNSET}\n").unwrap_err();
        assert!(
            e.to_string().contains("j.fio:2") && e.to_string().contains("POLLWISE_SURELY_UNSET"),
            "{e}"
        );
    }

    #[test]
    fn includes_are_relative_and_options_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("inc.fio"), "iodepth=4\n").unwrap();
        std::fs::write(d.path().join("bad.fio"), "[x]\n").unwrap();
        let s = parse_text(&d.path().join("j.fio"), "[a]\ninclude inc.fio\nbs=8k\n").unwrap();
        assert_eq!(s[0].settings[0].key, "iodepth");
        assert_eq!(
            s[0].settings[0].origin,
            Origin::JobFile {
                path: d.path().join("inc.fio"),
                line: 1
            }
        );
        let e = parse_text(&d.path().join("j.fio"), "[a]\ninclude bad.fio\n").unwrap_err();
        assert!(e.to_string().contains("options only"), "{e}");
    }

    #[test]
    fn includes_of_devices_and_huge_files_are_refused_not_read() {
        let d = tempfile::tempdir().unwrap();
        let j = d.path().join("j.fio");
        // Before: read_to_string(/dev/zero) filled memory until the process died.
        let e = parse_text(&j, "[a]\ninclude /dev/zero\n").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let big = d.path().join("big.fio");
        std::fs::write(&big, "x".repeat(MAX_JOB_FILE as usize + 1)).unwrap();
        let e = parse_text(&j, &format!("[a]\ninclude {}\n", big.display())).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        std::fs::write(&big, b"[a]\nbs=\xff\n").unwrap();
        let e = parse_file(&big).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn fio_names_are_known() {
        assert!(is_fio_option("bssplit"));
        assert!(is_fio_option("random_distribution"));
        assert!(is_fio_option("wait_for_previous"));
        assert!(!is_fio_option("frobnicate"));
    }
}
