//! The command line as fio reads it, turned into sections of (key, value, origin).
//!
//! `--name=value`, `--name value`, a bare `--flag` (1 for booleans); dashes and underscores in
//! names are the same; aliases are resolved to the canonical name here, so the last value wins
//! in command-line order whichever spelling set it. As in fio, options before the first `--name`
//! form the `global` section and each `--name` starts a new job section. Job files (ini:
//! `[global]`, `[job]`) are meant to produce the same [`Section`]s.

use std::fmt;
use std::path::PathBuf;

use crate::{Error, Result};

use super::table::{lookup, normalize, Kind};

/// Where a setting came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The command line, word `arg` after the command (0-based).
    CommandLine {
        /// Index of the word.
        arg: usize,
    },
    /// A job file, 1-based line.
    JobFile {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::CommandLine { .. } => write!(f, "the command line"),
            Origin::JobFile { path, line } => write!(f, "{}:{line}", path.display()),
        }
    }
}

/// One `key=value` as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The canonical name if the table knows it (aliases resolved), else the name as given with
    /// dashes made underscores.
    pub key: String,
    /// The name exactly as the user wrote it (for messages).
    pub given: String,
    /// The value; `None` for a bare `--flag`.
    pub value: Option<String>,
    /// Where it came from.
    pub origin: Origin,
}

/// A `[global]` or job section: settings in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// `global`, or the job's name.
    pub name: String,
    /// The settings, in order.
    pub settings: Vec<Setting>,
}

/// The name of the section of options given before any job.
pub const GLOBAL: &str = "global";

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdLine {
    /// `global` first, then one section per `--name`.
    pub sections: Vec<Section>,
    /// Words that are not options (job files, later), with their index.
    pub positional: Vec<(usize, String)>,
    /// Whether `--help` or `-h` was given anywhere.
    pub help: bool,
}

impl CmdLine {
    /// Every setting of every section, in order: what a single job sees today (a repeated
    /// `--name` renames the job; running one job per section is for later).
    pub fn merged(&self) -> impl Iterator<Item = &Setting> {
        self.sections.iter().flat_map(|s| s.settings.iter())
    }

    /// The jobs fio would run: each job section after `global`'s settings (or `global` alone when
    /// no `--name` was given).
    pub fn jobs(&self) -> Vec<Vec<&Setting>> {
        let global = &self.sections[0];
        if self.sections.len() == 1 {
            return vec![global.settings.iter().collect()];
        }
        self.sections[1..]
            .iter()
            .map(|s| global.settings.iter().chain(s.settings.iter()).collect())
            .collect()
    }

    /// The last value given for `key` (canonical name) in any section.
    pub fn last(&self, key: &str) -> Option<&Setting> {
        self.merged().filter(|s| s.key == key).last()
    }
}

fn is_bool_word(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "1" | "0" | "true" | "false" | "yes" | "no" | "on" | "off"
    )
}

/// The process's words as text: a word that is not UTF-8 is a usage error naming it (std's
/// `env::args` would panic on it).
pub fn words_from_os(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Vec<String>> {
    args.into_iter()
        .map(|a| {
            a.into_string().map_err(|a| {
                Error::Usage(format!(
                    "the word '{}' is not UTF-8 text: pollwise takes options and paths written in UTF-8",
                    a.to_string_lossy()
                ))
            })
        })
        .collect()
}

/// Splits `args` (the words after the command) into sections.
pub fn parse(args: &[String]) -> Result<CmdLine> {
    let mut sections = vec![Section {
        name: GLOBAL.into(),
        settings: Vec::new(),
    }];
    let mut positional = Vec::new();
    let mut help = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let at = i;
        i += 1;
        if a == "-h" {
            help = true;
            continue;
        }
        let Some(body) = a.strip_prefix("--") else {
            positional.push((at, a.clone()));
            continue;
        };
        if body.is_empty() {
            return Err(Error::Usage(
                "empty option '--': options are written --name=value".into(),
            ));
        }
        let (given, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => {
                // `--name value`: the next word is the value unless it is an option, or the
                // option is a flag and the word is not a boolean.
                let next = args.get(i).filter(|n| !n.starts_with("--"));
                let takes = match (lookup(body).map(|o| o.kind), next) {
                    (_, None) => false,
                    (Some(Kind::Bool), Some(n)) => is_bool_word(n),
                    (Some(Kind::Str { bare: Some(_) }), Some(n)) => !n.starts_with('-'),
                    (_, Some(n)) => n != "-h",
                };
                if takes {
                    i += 1;
                    (body.to_string(), Some(args[i - 1].clone()))
                } else {
                    (body.to_string(), None)
                }
            }
        };
        let key = lookup(&given).map_or_else(|| normalize(&given), |o| o.name.to_string());
        if key == "help" {
            help = true;
            continue;
        }
        let setting = Setting {
            key,
            given,
            value,
            origin: Origin::CommandLine { arg: at },
        };
        if setting.key == "name" {
            if let Some(name) = &setting.value {
                sections.push(Section {
                    name: name.clone(),
                    settings: Vec::new(),
                });
            }
        }
        sections
            .last_mut()
            .expect("there is always a global section")
            .settings
            .push(setting);
    }
    Ok(CmdLine {
        sections,
        positional,
        help,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn pairs(c: &CmdLine) -> Vec<(String, Option<String>)> {
        c.merged()
            .map(|s| (s.key.clone(), s.value.clone()))
            .collect()
    }

    #[test]
    fn fio_forms() {
        let c = parse(&args(
            "--bs=4k --iodepth 32 --hipri --direct 0 --output-format json --readwrite=read --time_based",
        ))
        .unwrap();
        let p = |k: &str, v: Option<&str>| (k.to_string(), v.map(String::from));
        assert_eq!(
            pairs(&c),
            [
                p("bs", Some("4k")),
                p("iodepth", Some("32")),
                p("hipri", None),
                p("direct", Some("0")),
                p("output_format", Some("json")),
                p("rw", Some("read")),
                p("time_based", None),
            ]
        );
        assert_eq!(c.last("output_format").unwrap().given, "output-format");
        assert!(c.positional.is_empty() && !c.help);
    }

    #[test]
    fn a_flag_does_not_swallow_a_file_name() {
        let c = parse(&args("--hipri job.fio --cmdhelp")).unwrap();
        assert_eq!(c.positional, [(1, "job.fio".to_string())]);
        assert_eq!(c.last("hipri").unwrap().value, None);
        assert_eq!(c.last("cmdhelp").unwrap().value, None);
    }

    #[test]
    fn aliases_resolve_in_command_line_order() {
        let c = parse(&args(
            "--iodepth=4 --iodepth_batch=8 --iodepth_batch_submit=2",
        ))
        .unwrap();
        assert_eq!(
            c.last("iodepth_batch_submit").unwrap().value.as_deref(),
            Some("2")
        );
        let c = parse(&args("--iodepth_batch_submit=2 --iodepth-batch=8")).unwrap();
        let s = c.last("iodepth_batch_submit").unwrap();
        assert_eq!(
            (s.value.as_deref(), s.given.as_str()),
            (Some("8"), "iodepth-batch")
        );
    }

    #[test]
    fn each_name_starts_a_job_section() {
        let c = parse(&args("--bs=8k --name=a --iodepth=2 --name=b --rw=read")).unwrap();
        let names: Vec<&str> = c.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["global", "a", "b"]);
        let jobs = c.jobs();
        assert_eq!(jobs.len(), 2);
        let keys: Vec<&str> = jobs[1].iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["bs", "name", "rw"]);
        assert_eq!(c.last("name").unwrap().value.as_deref(), Some("b"));
        assert_eq!(
            c.last("name").unwrap().origin,
            Origin::CommandLine { arg: 3 }
        );
    }

    #[test]
    fn words_that_are_not_utf8_are_usage_errors() {
        use std::os::unix::ffi::OsStringExt as _;
        let ok = words_from_os(["run".into(), "--bs=4k".into()]).unwrap();
        assert_eq!(ok, ["run", "--bs=4k"]);
        let bad = std::ffi::OsString::from_vec(b"--filename=/tmp/\xff".to_vec());
        let e = words_from_os(["run".into(), bad]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn help_anywhere_and_bad_words() {
        assert!(parse(&args("--bs=4k --help")).unwrap().help);
        assert!(parse(&args("-h --bs=4k")).unwrap().help);
        assert!(parse(&args("--")).is_err());
        let c = parse(&args("bs=4k")).unwrap();
        assert_eq!(c.positional, [(0, "bs=4k".to_string())]);
    }
}
