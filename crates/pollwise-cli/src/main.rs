//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options against the table, build a job, call the library, print the
//! report.

#![forbid(unsafe_code)]

use std::io::Write as _;
use std::process::ExitCode;

use pollwise_cli::job::JobSpec;
use pollwise_cli::jobs::{check_compare, check_readonly, parse_only_text, plan, Planned};
use pollwise_cli::options::table::{self, CommandSpec};
use pollwise_cli::options::{self, cmdline, help, jobfile, Opts};
use pollwise_cli::report::{self, facts::Facts, plot, Output, ReportFor, ReportOpts, RunExtras};
use pollwise_cli::{compare, scenario, signals, Error, Result};

/// How the command was started: as `pollwise`, or under the name `fio` (a link called `fio`),
/// when it takes fio's command line (`fio [options] [jobfile]...`) with fio's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Pollwise,
    Fio,
}

impl Name {
    /// What `--version` prints: fio's version line under fio's name (what tools that drive fio
    /// check), pollwise's own otherwise.
    fn version(self) -> String {
        match self {
            Name::Fio => "fio-3.33".into(),
            Name::Pollwise => report::version(),
        }
    }
}

/// A report to print: the output, how, and `run`'s extras.
type Report = (Output, ReportOpts, RunExtras);

/// fio's defaults for what a job does not say: sequential reads, buffered (`rw=read`,
/// `direct=0`), where `pollwise run` defaults to random O_DIRECT reads.
fn fio_base() -> JobSpec {
    JobSpec {
        rw: pollwise_bench::engine::Rw::Read,
        direct: false,
        ..JobSpec::default()
    }
}

/// `pollwise run` with its jobs (job files, `--name` sections, or one job): each job's
/// options checked on their own; `--parse-only` prints the jobs and runs nothing;
/// `--readonly` refuses, before anything runs, a job that would write.
fn cmd_run_jobs(jobs: Vec<Opts>, name: Name) -> Result<Report> {
    let mut planned = Vec::new();
    let mut parse_only = false;
    let mut readonly = false;
    // Output options are the run's, not a job's: every job carries the command line's, and
    // the last job's win.
    let mut ro = ReportOpts::default();
    // fio's limit on jobs, before each is built (a job file of 100000 sections takes long).
    pollwise_cli::limits::check_job_count(jobs.len() as u64, jobs.len())?;
    for mut o in jobs {
        // fio lists the job's options and the report's percentile options, not where it writes
        // nor what its command line asks of the whole run.
        let given: Vec<(String, String)> = o
            .given()
            .into_iter()
            .filter(|(k, _)| !RUN_OPTIONS.contains(&k.as_str()))
            .collect();
        ro = ReportOpts::take(&mut o, ReportFor::Run)?;
        ro.version = name.version();
        if let Some(p) = o.take_bool("parse_only")? {
            parse_only = p;
        }
        if let Some(r) = o.take_bool("readonly")? {
            readonly = r;
        }
        // Read when the job files were (see `parse_for`).
        o.take_str("section")?;
        o.take_bool("showcmd")?;
        let spec = match name {
            Name::Fio => o.job_spec_from(fio_base())?,
            Name::Pollwise => o.job_spec()?,
        };
        o.finish()?;
        planned.push(Planned { spec, given });
    }
    if parse_only {
        // fio's --parse-only checks and prints nothing; pollwise's lists the jobs.
        let text = match name {
            Name::Fio => String::new(),
            Name::Pollwise => parse_only_text(&planned),
        };
        return Ok((
            Output {
                text,
                json: serde_json::Value::Null,
            },
            ReportOpts::default(),
            RunExtras::default(),
        ));
    }
    let (specs, given) = plan(planned)?;
    if readonly {
        check_readonly(&specs)?;
    }
    let (out, extras) = pollwise_cli::run::run_and_report(&specs, &given, &ro)?;
    Ok((out, ro, extras))
}

/// Options of the run as a whole (where and how it reports, what the command line asks),
/// not of a job: kept out of fio's `job options`.
const RUN_OPTIONS: &[&str] = &[
    "output_format",
    "output",
    "parse_only",
    "minimal",
    "readonly",
    "section",
    "showcmd",
    "eta_newline",
];

/// `pollwise help [TOPIC...]`.
fn help_topic(topic: &[String]) -> Result<String> {
    let words: Vec<&str> = topic.iter().map(String::as_str).collect();
    let spec = |name: &str| table::command(name);
    match words.as_slice() {
        [] => Ok(help::general()),
        ["scenario"] | ["scenarios"] => Ok(help::scenarios_help()),
        ["exec"] => Ok(pollwise_cli::exec::HELP.to_string()),
        ["scenario", name] => match spec(name).filter(|c| c.scenario) {
            Some(c) => Ok(help::command_help(c)),
            None => Err(unknown_scenario(name)),
        },
        [name] => match spec(name) {
            Some(c) => Ok(help::command_help(c)),
            None => Err(Error::Usage(format!(
                "no help on '{name}': try `pollwise help run`, `pollwise help compare` or `pollwise help scenario NAME`"
            ))),
        },
        _ => Err(Error::Usage(
            "`pollwise help` takes one topic: a command, or `scenario NAME`".into(),
        )),
    }
}

fn unknown_scenario(name: &str) -> Error {
    let names: Vec<&str> = table::scenarios().map(|s| s.name).collect();
    Error::Usage(format!(
        "unknown scenario '{name}': use one of {}",
        names.join(", ")
    ))
}

/// What a command's words ask for: help, or a run with checked options.
enum Parsed {
    Help(String),
    Run(Opts),
    Jobs(Vec<Opts>),
}

/// Whether the flag `key` is set on `line` (given bare, or with a true value).
fn flag(line: &cmdline::CmdLine, key: &str) -> bool {
    line.last(key).is_some_and(|s| {
        !matches!(
            s.value.as_deref().map(str::trim),
            Some("0" | "false" | "no" | "off")
        )
    })
}

/// Parses `rest` for `cmd`: `--help`/`-h`, `--version` and `--cmdhelp` anywhere answer at once,
/// and so does `--showcmd`.
fn parse_for(cmd: &'static CommandSpec, rest: &[String], name: Name) -> Result<Parsed> {
    let line = cmdline::parse(rest)?;
    if line.help {
        return Ok(Parsed::Help(help::command_help(cmd)));
    }
    if flag(&line, "version") {
        return Ok(Parsed::Help(format!("{}\n", name.version())));
    }
    if let Some(s) = line.last("cmdhelp") {
        let what = s.value.as_deref().unwrap_or("all");
        return help::cmdhelp(what, Some(cmd)).map(Parsed::Help);
    }
    if cmd.name == "run" && flag(&line, "showcmd") {
        let prog = match name {
            Name::Fio => "fio",
            Name::Pollwise => "pollwise run",
        };
        return jobfile::showcmd(&line, prog).map(Parsed::Help);
    }
    if matches!(cmd.name, "run" | "compare") {
        // Job files and `--name` sections: one set of settings per job.
        let jobs = jobfile::job_settings(&line)?;
        if cmd.name == "compare" {
            let [one] = jobs.as_slice() else {
                return Err(Error::Usage(format!(
                    "`pollwise compare` runs one job under every mode, and these options define {}: keep one job",
                    jobs.len()
                )));
            };
            check_compare(one)?;
            return Opts::resolve_settings(cmd, one).map(Parsed::Run);
        }
        return jobs
            .iter()
            .map(|j| Opts::resolve_settings(cmd, j))
            .collect::<Result<Vec<_>>>()
            .map(Parsed::Jobs);
    }
    Opts::resolve(cmd, &line).map(Parsed::Run)
}

/// `pollwise calibrate --help`.
const CALIBRATE_HELP: &str = "pollwise calibrate --filename=F [--bs=4k] [--rw=randread] [--rwmixread=50] [--output-format=normal|json] [--output=FILE]\n\n  Measures, in about two seconds, the costs that decide the wait modes on this machine:\n  a system call, a completion-queue check, the submit call, QD1 completion latency (polled),\n  a blocking wait's latency and CPU, a timed sleep's lateness and CPU, a context switch,\n  the engine's work per request, and the cores. F is an existing file or block device\n  (at least 1 MiB), read with O_DIRECT when it allows. The requests timed are 4 KiB random\n  reads, or --bs, --rw and --rwmixread's (a pattern that writes overwrites F's blocks).\n  The JSON's `platform` object is a file --platform takes:\n  pollwise run --ioengine=sim --platform=FILE.json ...\n";

/// Whether `word`, first on the command line, is pollwise's `run` written fio's way: an option
/// (`pollwise --bs=4k --name=j`) or a job file that exists (`pollwise job.fio`).
fn is_fio_style(word: &str) -> bool {
    // `-` is fio's job file on standard input.
    word.starts_with("--") || word == "-" || std::path::Path::new(word).exists()
}

/// Runs the command in `args`; returns the report, or `None` when nothing is left to print.
/// An error found after the run (a chart `--plot` could not write) is put in `after`: the
/// report is printed first, then the error, and the command fails. Under the name `fio`, every
/// word is `run`'s, as fio takes them.
fn real_main(args: &[String], name: Name, after: &mut Option<Error>) -> Result<Option<Report>> {
    let run = table::command("run").expect("run is in the table");
    if name == Name::Fio {
        if args.is_empty() {
            return Err(Error::Usage(
                "no job given: fio [options] [jobfile]... (e.g. fio --name=j --filename=FILE --size=1G, or fio job.fio; --help lists the options)".into(),
            ));
        }
        return run_command(run, args, name);
    }
    let Some(cmd) = args.first() else {
        return Ok(Some(text_only(&help::general())));
    };
    let rest = &args[1..];
    if let Some(what) = cmd.strip_prefix("--cmdhelp") {
        let what = match what.strip_prefix('=') {
            Some(w) => w.to_string(),
            None if what.is_empty() => rest.first().cloned().unwrap_or_else(|| "all".into()),
            None => return Err(Error::Usage(options::unknown_option(&cmd[2..], None))),
        };
        return Ok(Some(text_only(&help::cmdhelp(&what, None)?)));
    }
    let (spec, rest) = match cmd.as_str() {
        "help" | "--help" | "-h" => {
            return Ok(Some(text_only(&help_topic(rest)?)));
        }
        "plot" => return Ok(Some(text_only(&plot::command(rest)?))),
        "--version" | "version" => {
            return Ok(Some(text_only(&format!("{}\n", name.version()))));
        }
        "calibrate" => {
            if rest.iter().any(|a| a == "--help" || a == "-h") {
                return Ok(Some(text_only(CALIBRATE_HELP)));
            }
            let (text, json, is_json, output) = pollwise_cli::calibrate::run(rest)?;
            if let Some(path) = output {
                let body = if is_json {
                    serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"
                } else {
                    text
                };
                pollwise_cli::outfile::write_whole("--output", &path, body.as_bytes())?;
                return Ok(None);
            }
            let text = if is_json {
                serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"
            } else {
                text
            };
            return Ok(Some(text_only(&text)));
        }
        "run" | "compare" | "advise" => (
            table::command(cmd).expect("run, compare and advise are in the table"),
            rest,
        ),
        "scenario" => {
            let Some(name) = rest.first().filter(|n| !n.starts_with('-')) else {
                if rest.iter().any(|a| a == "--help" || a == "-h") {
                    return Ok(Some(text_only(&help::scenarios_help())));
                }
                return Err(Error::Usage(
                    "`pollwise scenario` needs a NAME: see `pollwise scenario --help`".into(),
                ));
            };
            match table::command(name).filter(|c| c.scenario) {
                Some(c) => (c, &rest[1..]),
                None => return Err(unknown_scenario(name)),
            }
        }
        // fio's own command line: options and job files with no command word.
        other if is_fio_style(other) => return run_command(run, args, name),
        other => {
            return Err(Error::Usage(format!(
                "unknown command '{}' (and no job file of that name): use advise, calibrate, compare, run, plot, scenario, exec or help, or give a job file",
                pollwise_cli::error::shown(other)
            )))
        }
    };
    if spec.name == "run" {
        return run_command(spec, rest, name);
    }
    let mut o = match parse_for(spec, rest, name)? {
        Parsed::Help(h) => {
            return Ok(Some(text_only(&h)));
        }
        Parsed::Run(o) => o,
        Parsed::Jobs(mut jobs) => match jobs.len() {
            1 => jobs.remove(0),
            n => {
                return Err(Error::Usage(format!(
                    "`{}` runs one job and these options define {n}",
                    spec.invocation()
                )))
            }
        },
    };
    let ro = ReportOpts::take(&mut o, ReportFor::Other)?;
    let plot_dir = o.take_str("plot")?.map(std::path::PathBuf::from);
    if let Some(d) = &plot_dir {
        plot::prepare_dir(d)?;
    }
    if let Some(out) = &ro.output {
        let target = report::given_target(&o.given());
        pollwise_cli::outfile::check_outputs(&[("--output".into(), out.clone())], &target)?;
    }
    let out = match spec.name {
        "compare" => {
            let target = report::facts_target(&o.given());
            let mut out = compare::run(&mut o, ro.is_json() || plot_dir.is_some())?;
            report::add_facts(&mut out, &Facts::gather(&target));
            out
        }
        "advise" => pollwise_cli::advise::run(&mut o)?,
        name => scenario::run(name, &mut o)?,
    };
    o.finish()?;
    if let Some(d) = plot_dir {
        // The report comes first; a chart that cannot be written fails the command after it.
        match plot::after_run(&out.json, &d) {
            Ok(t) => eprint!("{t}"),
            Err(e) => *after = Some(e),
        }
    }
    Ok(Some((out, ro, RunExtras::default())))
}

/// `run` (or fio's command line) with the words `rest`.
fn run_command(run: &'static CommandSpec, rest: &[String], name: Name) -> Result<Option<Report>> {
    match parse_for(run, rest, name)? {
        Parsed::Help(h) => Ok(Some(text_only(&h))),
        Parsed::Run(o) => cmd_run_jobs(vec![o], name).map(Some),
        Parsed::Jobs(jobs) => cmd_run_jobs(jobs, name).map(Some),
    }
}

/// `pollwise exec`: runs the command under the preload library; exits with its status.
fn exec_main(words: &[String]) -> ExitCode {
    use pollwise_cli::exec;
    let r = exec::parse(words).and_then(|a| match a {
        None => Ok((0, exec::HELP.to_string(), true)),
        Some(a) => exec::run(&a).map(|(code, text)| (code, text, false)),
    });
    match r {
        Ok((code, text, help)) => {
            if help {
                let _ = emit_report(&text);
            } else {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "pollwise: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Help or a version line, printed as a report (so a closed pipe or a full disk is handled
/// the same way).
fn text_only(t: &str) -> Report {
    (
        Output {
            text: t.to_string(),
            json: serde_json::Value::Null,
        },
        ReportOpts::default(),
        RunExtras::default(),
    )
}

/// Writes the report to stdout. A reader that went away (`| head`) ends the command quietly,
/// as the usual tools do (128 + SIGPIPE); any other failure (a full disk) is one line, exit 1.
fn emit_report(text: &str) -> Result<(), ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(ExitCode::from(signals::exit_code(libc::SIGPIPE) as u8))
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: cannot write the report: {}",
                pollwise_cli::errno::plain(&e)
            );
            Err(ExitCode::from(1))
        }
    }
}

/// `pollwise man` and `pollwise completions SHELL`: documents written from the option table.
/// None for any other command.
fn generated_main(args: &[String]) -> Option<ExitCode> {
    use pollwise_cli::options::docgen;
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = match words.as_slice() {
        ["man"] => docgen::man_page(),
        ["completions", "bash"] => docgen::bash_completion(),
        ["completions", "zsh"] => docgen::zsh_completion(),
        ["man", ..] | ["completions", ..] => {
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: usage: `pollwise man` or `pollwise completions bash|zsh` (they take nothing else)"
            );
            return Some(ExitCode::from(2));
        }
        _ => return None,
    };
    Some(match emit_report(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    })
}

fn main() -> ExitCode {
    // Before any thread starts: the allocator's arenas under an address-space limit.
    pollwise_cli::limits::init();
    let code = main_inner();
    // The library counts, never prints, what its drops had to keep from the kernel.
    let l = pollwise::leaks::leaks();
    if l != pollwise::leaks::Leaks::default() {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: at exit, {} operation(s) had not answered cancellation, {} cancellation(s) failed and {} bytes of buffers were kept rather than freed (the kernel may still use them)",
            l.unanswered,
            l.cancel_failures,
            l.bytes
        );
    }
    code
}

fn main_inner() -> ExitCode {
    let name = match std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
    {
        Some(n) if n == "fio" => Name::Fio,
        _ => Name::Pollwise,
    };
    let args = match cmdline::words_from_os(std::env::args_os().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: {}",
                pollwise_cli::error::one_line(&e.to_string())
            );
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    // run, compare and advise stop their jobs on the first SIGINT/SIGTERM/SIGHUP/SIGALRM and
    // report what they have; anything else exits at once (files pollwise made are removed
    // either way). SIGUSR1 prints `run`'s status and goes on.
    // exec waits for its command to end, whatever signal comes first.
    signals::set_graceful(
        name == Name::Fio
            || match args.first().map(String::as_str) {
                Some("run" | "compare" | "advise" | "exec") => true,
                Some(w) => is_fio_style(w) && !matches!(w, "--help" | "--version"),
                None => false,
            },
    );
    if let Err(e) = signals::install() {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: cannot watch for signals: {}",
            pollwise_cli::errno::explain(&e, pollwise_cli::errno::Op::Other)
        );
        return ExitCode::from(1);
    }
    if name == Name::Pollwise && args.first().map(String::as_str) == Some("exec") {
        return exec_main(&args[1..]);
    }
    if name == Name::Pollwise {
        if let Some(code) = generated_main(&args) {
            return code;
        }
    }
    let mut after = None;
    let result = real_main(&args, name, &mut after);
    let fail_after = |code: ExitCode, after: Option<Error>| match after {
        Some(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: {}",
                pollwise_cli::error::one_line(&e.to_string())
            );
            ExitCode::from(e.exit_code() as u8)
        }
        None => code,
    };
    match result {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some((mut out, ro, mut extras))) => {
            let sig = signals::received();
            if let Some(sig) = sig {
                if let Some(o) = out.json.as_object_mut() {
                    o.insert("interrupted".into(), signals::name(sig).into());
                }
                let note = format!(
                    "pollwise: interrupted by {}: results so far\n",
                    signals::name(sig)
                );
                out.text.insert_str(0, &note);
                if !ro.has(report::OutputFormat::Normal) {
                    extras.terse.insert_str(0, &note);
                }
            }
            if ro.output.is_some() {
                if let Err(e) = ro.emit(&out, &extras) {
                    let _ = writeln!(
                        std::io::stderr(),
                        "pollwise: {}",
                        pollwise_cli::error::one_line(&e.to_string())
                    );
                    return ExitCode::from(e.exit_code() as u8);
                }
            } else if let Err(code) = emit_report(&ro.render_all(&out, &extras.terse)) {
                return code;
            }
            match sig {
                Some(sig) => ExitCode::from(signals::exit_code(sig) as u8),
                None => fail_after(ExitCode::SUCCESS, after),
            }
        }
        Err(e) => {
            // Nothing more can be said if stderr is gone too.
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: {}",
                pollwise_cli::error::one_line(&e.to_string())
            );
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
