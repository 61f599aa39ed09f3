//! Command-line options, written as fio writes them, all declared in one [`table`].
//!
//! fio users type `--bs=4k --direct=1 --hipri`. [`cmdline::parse`] splits the words into sections
//! of settings (aliases resolved, in command-line order); [`Opts::resolve`] checks every setting
//! against the table for one command (unknown options get "did you mean", options the command
//! does not take are refused saying why, values are checked against their kind) and keeps the last
//! value of each. Commands then *take* the typed values they know; [`Opts::finish`] names any
//! accepted option nobody took (a table that promises more than the code reads).

pub mod build;
pub mod check;
pub mod cmdline;
pub mod defaults;
pub mod docgen;
pub mod expr;
mod fault;
pub mod fio_only;
pub mod help;
pub mod job_default;
pub mod jobfile;
mod parse;
mod prio;
pub mod store;
pub mod table;
pub mod value;

use std::time::Duration;

use crate::{Error, Result};

pub use crate::extras::SizeOrPercent;
use check::parse_value;
pub use cmdline::{CmdLine, Origin};
use table::{lookup, suggest, CommandSpec, Opt, Scope};
use value::Value;

/// One accepted, checked setting.
#[derive(Debug, Clone)]
struct Item {
    opt: &'static Opt,
    given: String,
    raw: Option<String>,
    value: Value,
    origin: Origin,
    taken: bool,
}

impl Item {
    /// The value as written (a bare flag as its bare value).
    fn written(&self) -> String {
        self.raw
            .clone()
            .or_else(|| self.opt.kind.bare().map(String::from))
            .unwrap_or_default()
    }
}

/// The options of one command, checked against the table, not yet taken.
#[derive(Debug, Clone)]
pub struct Opts {
    cmd: &'static CommandSpec,
    items: Vec<Item>,
}

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// The message for an option the table does not know.
pub fn unknown_option(given: &str, cmd: Option<&CommandSpec>) -> String {
    let (whose, see) = match cmd {
        Some(c) => (
            format!(" for `{}`", c.invocation()),
            format!("`{} --help`", c.invocation()),
        ),
        None => (String::new(), "`pollwise help`".to_string()),
    };
    let shown = crate::error::shown(given);
    if let Some(m) = fio_only::not_implemented(&shown) {
        return m;
    }
    match suggest(given, cmd) {
        Some(s) => format!("unknown option --{shown}{whose}: did you mean `--{s}`? (see {see})"),
        None => format!("unknown option --{shown}{whose}: see {see}"),
    }
}

/// For a value fio has and pollwise does not (an ioengine, rw's `:N` modifier), the message.
fn not_implemented(name: &str, s: &cmdline::Setting) -> Option<String> {
    let v = s.value.as_deref()?.trim();
    match name {
        "ioengine" => {
            let why = match v {
                "rdma" | "net" | "netsplice" | "http" | "nfs" | "rbd" | "libiscsi" | "nbd"
                | "xnvme" | "libcufile" | "gfapi" | "gfapi_async" => {
                    "it is a network or remote-storage engine, and pollwise measures local block and file I/O; "
                }
                "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat"
                | "dirdelete" => {
                    "it measures file-system metadata operations (creating, stat-ing or deleting files and directories), not I/O, and pollwise measures block and file I/O; "
                }
                _ => "",
            };
            Some(format!(
                "fio's --{}={v} is not implemented by pollwise: {why}its engines are io_uring, libaio, posixaio, sync, psync, vsync, pvsync, pvsync2, null and sim (the simulated device)",
                s.given
            ))
        }
        "verify" if matches!(
            v,
            "crc64" | "crc16" | "crc7" | "sha512" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "pattern" | "crc32c-arm64" | "null"
        ) => Some(format!(
            "fio's --{}={v} is not implemented by pollwise: it verifies with a crc32c header, and also md5, crc32, sha1, sha256 or xxhash",
            s.given
        )),
        _ => None,
    }
}

/// Why pollwise lacks fio's option `key`, for the options fio's own job files use most; `None`
/// for the rest (the message then points to the help).
pub(crate) fn why_not(key: &str) -> Option<&'static str> {
    const WHY: &[(&[&str], &str)] = &[
        (&["max_open_zones", "read_beyond_wp", "zone_reset_threshold", "zone_reset_frequency", "job_max_open_zones", "ignore_zone_limits"], "pollwise has fio's strided zones but not a zoned block device's (zonemode=zbd); drop the zbd options"),
        (&["io_submit_mode"], "pollwise measures each wait mode in the thread that submits and reaps, and fio's offload hands submission to a pool of worker threads (which fio's docs say async engines cannot use reliably), so no wait mode would be measured as the job's; drop it to submit inline, fio's default"),
        (&["replay_scale", "replay_align", "replay_skip", "read_iolog_chunked", "log_issue_time"], "pollwise replays fio's I/O logs as logged (read_iolog, replay_no_stall, replay_redirect, replay_time_scale); offsets are not rescaled, realigned or skipped"),
        (&["verify_backlog_batch", "verify_async", "verify_async_cpus", "verify_offset", "verify_only"], "pollwise reads back what a job wrote when it is done (do_verify) or every verify_backlog blocks, all of them, from the job's own thread; verify_backlog_batch, verify_async, verify_offset and verify_only are not implemented"),
        (&["cmdprio_hint", "priohint"], "pollwise sets request priorities by class and level (cmdprio, prio); fio 3.33 has no priority hints either"),
        (&["buffer_compress_chunk"], "pollwise makes buffer_compress_percentage's zeros in every 512 bytes; other chunk sizes are not implemented"),
        (&["ignore_error", "error_dump"], "pollwise goes on past the errors continue_on_error names and stops at any other; it ignores no errno by name"),
        (&["create_on_open"], "pollwise lays a job's file out before the job starts; create_on_open goes with fio's filecreate engine, which measures creating files (open with O_CREAT), not I/O, and which pollwise does not implement"),
        (&["create_fsync", "create_only", "allow_file_create", "unlink", "unlink_each_loop", "fallocate", "pre_read"], "pollwise lays a job's file out (random bytes) before the job starts and keeps it; fio's other file set-up options are not implemented"),
        (&["numa_cpu_nodes", "numa_mem_policy"], "pollwise places job threads with cpus_allowed only; NUMA policies are not implemented"),
        (&["serialize_overlap"], "pollwise does not hold back a request that overlaps one in flight; drop it"),
    ];
    WHY.iter()
        .find(|(names, _)| names.contains(&key))
        .map(|(_, why)| *why)
}

/// Where a setting came from, when it is worth saying (job files; the command line goes unsaid).
fn from(origin: &Origin) -> String {
    match origin {
        Origin::CommandLine { .. } => String::new(),
        o => format!(" (at {o})"),
    }
}

/// `take_*` methods that read one [`Value`] variant as it is: `name -> type = Variant;`.
macro_rules! take_variant {
    ($($(#[$doc:meta])* $name:ident -> $t:ty = $variant:ident;)+) => {$(
        $(#[$doc])*
        pub fn $name(&mut self, name: &str) -> Result<Option<$t>> {
            self.take_as(name, |v| match v {
                Value::$variant(x) => Some(x.clone()),
                _ => None,
            })
        }
    )+};
}

impl Opts {
    /// Checks `line` against the table for `cmd`: every option known, taken by `cmd`, with a
    /// value of its kind. Reports the first bad one in command-line order.
    pub fn resolve(cmd: &'static CommandSpec, line: &CmdLine) -> Result<Opts> {
        if let Some((_, word)) = line.positional.first() {
            return Err(usage(format!(
                "unexpected argument '{word}' for `{}`: options are written --name=value (see `{} --help`)",
                cmd.invocation(),
                cmd.invocation()
            )));
        }
        Opts::resolve_settings(cmd, line.merged())
    }

    /// Checks one job's settings (from the command line or a job file) against the table for
    /// `cmd`, as [`Opts::resolve`] does. An option fio has and pollwise does not implement is
    /// refused naming it and where it came from.
    pub fn resolve_settings<'a>(
        cmd: &'static CommandSpec,
        settings: impl IntoIterator<Item = &'a cmdline::Setting>,
    ) -> Result<Opts> {
        let settings: Vec<&cmdline::Setting> = settings.into_iter().collect();
        // Only the value that is used is checked: a command-line --ioengine=io_uring overrides a
        // job file's ioengine=falloc rather than failing on it.
        let overridden = |i: usize| {
            let name = lookup(&settings[i].key).map(|o| o.name);
            settings[i + 1..]
                .iter()
                .any(|l| lookup(&l.key).map(|o| o.name) == name)
        };
        let mut items: Vec<Item> = Vec::new();
        for (idx, s) in settings.iter().copied().enumerate() {
            let Some(opt) = lookup(&s.key) else {
                if jobfile::is_fio_option(&s.key) {
                    return Err(usage(format!(
                        "fio's option '{}'{} is not implemented by pollwise: {}",
                        crate::error::shown(&s.given),
                        match &s.origin {
                            Origin::CommandLine { .. } => " (on the command line)".to_string(),
                            o => format!(" at {o}"),
                        },
                        why_not(&s.key).map_or_else(
                            || format!(
                                "remove it or see `{} --help` for what pollwise implements",
                                cmd.invocation()
                            ),
                            String::from
                        )
                    )));
                }
                return Err(usage(format!(
                    "{}{}",
                    unknown_option(&s.given, Some(cmd)),
                    from(&s.origin)
                )));
            };
            if let Some(why) = cmd.refusal(opt, &s.given) {
                // fio's option of the same name means something else here: say fio's reason.
                let why = match why_not(&s.key) {
                    Some(fio) => format!(
                        "fio's option '{}' is not implemented by pollwise: {fio}",
                        crate::error::shown(&s.given)
                    ),
                    None => crate::error::shown_in(why, &[&s.given]),
                };
                return Err(usage(format!("{why}{}", from(&s.origin))));
            }
            if overridden(idx) {
                continue;
            }
            // fio's `rw=read:8k`: the pattern is checked here, its modifier where it is used.
            let checked = match (opt.name, s.value.as_deref()) {
                ("rw", Some(v)) => Some(v.split(':').next().unwrap_or(v)),
                (_, v) => v,
            };
            let value = parse_value(opt, &s.given, checked).map_err(|m| {
                let m = not_implemented(opt.name, s).unwrap_or(m);
                let raw = s.value.as_deref().unwrap_or("");
                usage(format!(
                    "{}{}",
                    crate::error::shown_in(m, &[&s.given, raw]),
                    from(&s.origin)
                ))
            })?;
            let value = match (value, opt.name, s.value.as_deref()) {
                (Value::Word(_), "rw", Some(v)) => Value::Word(v.trim().to_string()),
                (v, ..) => v,
            };
            // As in fio, a later value overrides an earlier one, whatever name set it.
            items.retain(|i| i.opt.name != opt.name);
            items.push(Item {
                opt,
                given: s.given.clone(),
                raw: s.value.clone(),
                value,
                origin: s.origin.clone(),
                taken: false,
            });
        }
        Ok(Opts { cmd, items })
    }

    /// Whether `name` was given (without taking it).
    pub fn has(&self, name: &str) -> bool {
        debug_assert!(lookup(name).is_some(), "{name} is not in the option table");
        self.items.iter().any(|i| i.opt.name == name)
    }

    /// Where `name` was given, as messages say it (` (at FILE:LINE)`; empty for the command
    /// line or when it was not given).
    pub fn at(&self, name: &str) -> String {
        self.items
            .iter()
            .find(|i| i.opt.name == name)
            .map_or_else(String::new, |i| from(&i.origin))
    }

    /// Whether `name` was given on the command line (not in a job file).
    pub fn on_command_line(&self, name: &str) -> bool {
        self.items
            .iter()
            .any(|i| i.opt.name == name && matches!(i.origin, Origin::CommandLine { .. }))
    }

    /// Whether these options come from a job file (its jobs take fio's defaults).
    pub fn from_job_file(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i.origin, Origin::JobFile { .. }))
    }

    /// Whether `a` was given after `b` (both canonical names): the later one wins in fio.
    pub fn has_later(&self, a: &str, b: &str) -> bool {
        let pos = |n: &str| self.items.iter().position(|i| i.opt.name == n);
        matches!((pos(a), pos(b)), (Some(x), Some(y)) if x > y)
    }

    /// fio's "job options": the job options given, by canonical name, with their values as
    /// written (a bare flag is 1), in the order given.
    pub fn job_options(&self) -> Vec<(&'static str, String)> {
        self.items
            .iter()
            .filter(|i| i.opt.scope == Scope::Job)
            .map(|i| (i.opt.name, i.written()))
            .collect()
    }

    /// Every option given, by canonical name, with its value as written (a bare flag as its
    /// bare value), in the order given.
    pub fn given(&self) -> Vec<(String, String)> {
        self.items
            .iter()
            .map(|i| (i.opt.name.to_string(), i.written()))
            .collect()
    }

    fn take(&mut self, name: &str) -> Option<&Item> {
        debug_assert!(lookup(name).is_some(), "{name} is not in the option table");
        let item = self.items.iter_mut().find(|i| i.opt.name == name)?;
        item.taken = true;
        Some(item)
    }

    /// Takes `name`'s checked value as it is (its row's store converts it).
    fn take_value(&mut self, name: &str) -> Option<Value> {
        self.take(name).map(|i| i.value.clone())
    }

    /// `name`'s word as given, without taking it: a step checks it against its own options.
    fn given_str(&self, name: &str) -> Option<String> {
        match &self.items.iter().find(|i| i.opt.name == name)?.value {
            Value::Word(w) => Some(w.clone()),
            _ => None,
        }
    }

    /// Takes `name`, converting its checked value with `f`.
    fn take_as<T>(&mut self, name: &str, f: impl FnOnce(&Value) -> Option<T>) -> Result<Option<T>> {
        let Some(item) = self.take(name) else {
            return Ok(None);
        };
        f(&item.value).map(Some).ok_or_else(|| {
            usage(format!(
                "internal: --{} is declared as {:?} in the option table but read as another kind",
                item.given, item.opt.kind
            ))
        })
    }

    take_variant! {
        /// A string (or enum) option.
        take_str -> String = Word;
        /// A whole number.
        take_u64 -> u64 = Int;
        /// A number.
        take_f64 -> f64 = Float;
        /// A size in bytes.
        take_size -> u64 = Size;
        /// A time (what a bare number means is the table's business).
        take_duration -> Duration = Duration;
        /// A boolean.
        take_bool -> bool = Bool;
        /// A comma-separated list of whole numbers.
        take_list_u64 -> Vec<u64> = Ints;
        /// A comma-separated list of words.
        take_str_list -> Vec<String> = Words;
    }

    /// A whole number that fits in u32 (the table's range says so).
    pub fn take_u32(&mut self, name: &str) -> Result<Option<u32>> {
        self.take_as(name, |v| match v {
            Value::Int(n) => u32::try_from(*n).ok(),
            _ => None,
        })
    }

    /// A size list (`bs=4k,64k`): one entry per direction, `None` where the default stays.
    pub fn take_sizes(&mut self, name: &str) -> Result<Option<Vec<Option<u64>>>> {
        self.take_as(name, |v| match v {
            Value::Size(n) => Some(vec![Some(*n)]),
            Value::Sizes(v) => Some(v.clone()),
            _ => None,
        })
    }

    /// A size or a percentage of the target (`Err` side of the inner result: the percentage).
    pub fn take_size_or_percent(&mut self, name: &str) -> Result<Option<SizeOrPercent>> {
        self.take_as(name, |v| match v {
            Value::Size(n) => Some(SizeOrPercent::Bytes(*n)),
            Value::Percent(p) => Some(SizeOrPercent::Percent(*p)),
            _ => None,
        })
    }

    /// The command these options are for.
    pub fn command(&self) -> &'static CommandSpec {
        self.cmd
    }

    /// `--output-format normal|json`: true when JSON is asked for.
    pub fn take_json(&mut self) -> Result<bool> {
        Ok(self
            .take_str_list("output_format")?
            .is_some_and(|l| l.iter().any(|f| f == "json")))
    }

    /// Fails naming the first accepted option nobody took: the table says this command takes it
    /// but the command did not read it.
    pub fn finish(&self) -> Result<()> {
        match self.items.iter().find(|i| !i.taken) {
            None => Ok(()),
            Some(i) => Err(usage(format!(
                "--{} is not used by `{}`{}: see `{} --help`",
                i.given,
                self.cmd.invocation(),
                from(&i.origin),
                self.cmd.invocation()
            ))),
        }
    }
}

/// The job that `cmd` builds from `args`, every option taken: for the tests of the files below.
#[cfg(test)]
pub(crate) fn test_job(cmd: &str, args: &[String]) -> Result<crate::spec::JobSpec> {
    let mut o = Opts::resolve(table::command(cmd).unwrap(), &cmdline::parse(args)?)?;
    let j = o.job_spec()?;
    o.finish()?;
    Ok(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(cmd: &str, s: &str) -> Result<Opts> {
        let a: Vec<String> = s.split_whitespace().map(String::from).collect();
        Opts::resolve(table::command(cmd).unwrap(), &cmdline::parse(&a)?)
    }

    /// `pollwise run` with `s`, which must be valid.
    fn run(s: &str) -> Opts {
        opts("run", s).unwrap()
    }

    #[test]
    fn typed_takes() {
        let mut o =
            run("--bs=4k --iodepth 32 --hipri --direct=0 --output-format json --runtime=500ms");
        assert_eq!(o.take_size("bs").unwrap(), Some(4096));
        assert_eq!(o.take_u64("iodepth").unwrap(), Some(32));
        assert_eq!(o.take_bool("hipri").unwrap(), Some(true));
        assert_eq!(o.take_bool("direct").unwrap(), Some(false));
        assert!(o.take_json().unwrap());
        assert_eq!(
            o.take_duration("runtime").unwrap(),
            Some(Duration::from_millis(500))
        );
        o.finish().unwrap();
    }

    #[test]
    fn unknown_refused_and_bad_values_are_usage_errors() {
        let e = opts("run", "--bogus=1").unwrap_err();
        assert!(e.to_string().contains("unknown option --bogus"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = opts("run", "--iodpth=4").unwrap_err();
        assert!(e.to_string().contains("did you mean `--iodepth`?"), "{e}");
        assert!(opts("run", "bs=4k").is_err());
        let e = opts("run", "--mode=spin").unwrap_err();
        assert!(e.to_string().contains("unknown mode 'spin'"), "{e}");
        assert!(opts("run", "--iodepth=deep").is_err());
        let e = opts("idle-sources", "--burst=4").unwrap_err();
        assert!(e.to_string().contains("fairness"), "{e}");
        let e = opts("compare", "--mode=poll").unwrap_err();
        assert!(e.to_string().contains("--modes"), "{e}");
    }

    #[test]
    fn last_value_wins_whatever_name_set_it() {
        let mut o = run("--iodepth=4 --iodepth_batch=8 --iodepth_batch_submit=2");
        assert_eq!(o.take_u32("iodepth_batch_submit").unwrap(), Some(2));
        let mut o = run("--bs=8k --bs=4k");
        assert_eq!(o.take_size("bs").unwrap(), Some(4096));
    }

    #[test]
    fn job_options_are_what_was_given() {
        let o = run("--bs=4k --hipri --readwrite=read --output-format=json");
        assert_eq!(
            o.job_options(),
            [
                ("bs", "4k".to_string()),
                ("hipri", "1".into()),
                ("rw", "read".into())
            ]
        );
    }

    #[test]
    fn finish_names_what_nobody_took() {
        let o = run("--bs=4k");
        let e = o.finish().unwrap_err();
        assert!(e.to_string().contains("--bs"), "{e}");
    }
}
