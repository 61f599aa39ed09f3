//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options against the table, build a job, call the library, print the
//! report.

#![forbid(unsafe_code)]

use std::io::Write as _;
use std::process::ExitCode;

use pollwise_cli::jobs::{check_compare, parse_only_text, plan, Planned};
use pollwise_cli::options::table::{self, CommandSpec};
use pollwise_cli::options::{self, cmdline, help, jobfile, Opts};
use pollwise_cli::report::{self, facts::Facts, plot, Output, ReportFor, ReportOpts};
use pollwise_cli::{compare, scenario, signals, Error, Result};

/// `pollwise run` with its jobs (job files, `--name` sections, or one job): each job's
/// options checked on their own; `--parse-only` prints the jobs and runs nothing.
fn cmd_run_jobs(jobs: Vec<Opts>) -> Result<(Output, ReportOpts)> {
    let mut planned = Vec::new();
    let mut parse_only = false;
    // Output options are the run's, not a job's: every job carries the command line's, and
    // the last job's win.
    let mut ro = ReportOpts::default();
    for mut o in jobs {
        // fio lists the job's options and the report's percentile options, not where it writes.
        let given: Vec<(String, String)> = o
            .given()
            .into_iter()
            .filter(|(k, _)| !matches!(k.as_str(), "output_format" | "output" | "parse_only"))
            .collect();
        ro = ReportOpts::take(&mut o, ReportFor::Run)?;
        if let Some(p) = o.take_bool("parse_only")? {
            parse_only = p;
        }
        let spec = o.job_spec()?;
        o.finish()?;
        planned.push(Planned { spec, given });
    }
    if parse_only {
        let text = parse_only_text(&planned);
        return Ok((
            Output {
                text,
                json: serde_json::Value::Null,
            },
            ReportOpts::default(),
        ));
    }
    let (specs, given) = plan(planned)?;
    Ok((report::run_and_report(&specs, &given, &ro)?, ro))
}

/// `pollwise help [TOPIC...]`.
fn help_topic(topic: &[String]) -> Result<String> {
    let words: Vec<&str> = topic.iter().map(String::as_str).collect();
    let spec = |name: &str| table::command(name);
    match words.as_slice() {
        [] => Ok(help::general()),
        ["scenario"] | ["scenarios"] => Ok(help::scenarios_help()),
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

/// Parses `rest` for `cmd`: `--help`/`-h` anywhere and `--cmdhelp` answer at once.
fn parse_for(cmd: &'static CommandSpec, rest: &[String]) -> Result<Parsed> {
    let line = cmdline::parse(rest)?;
    if line.help {
        return Ok(Parsed::Help(help::command_help(cmd)));
    }
    if let Some(s) = line.last("cmdhelp") {
        let what = s.value.as_deref().unwrap_or("all");
        return help::cmdhelp(what, Some(cmd)).map(Parsed::Help);
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
const CALIBRATE_HELP: &str = "pollwise calibrate --filename=F [--output-format=normal|json] [--output=FILE]\n\n  Measures, in about two seconds, the costs that decide the wait modes on this machine:\n  a system call, a completion-queue check, the submit call, QD1 completion latency (polled),\n  a blocking wait's latency and CPU, a timed sleep's lateness and CPU, a context switch,\n  the engine's work per request, and the cores. F is an existing file or block device\n  (at least 1 MiB), read with O_DIRECT when it allows. The JSON's `platform` object is a\n  file --platform takes: pollwise run --ioengine=sim --platform=FILE.json ...\n";

/// Runs the command in `args`; returns the report and whether to print it as JSON, or `None`
/// when it printed help. An error found after the run (a chart `--plot` could not write) is
/// put in `after`: the report is printed first, then the error, and the command fails.
fn real_main(args: &[String], after: &mut Option<Error>) -> Result<Option<(Output, ReportOpts)>> {
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
            return Ok(Some(text_only(&format!(
                "pollwise {}\n",
                env!("CARGO_PKG_VERSION")
            ))));
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
        other => {
            return Err(Error::Usage(format!(
                "unknown command '{other}': use advise, calibrate, compare, run, plot, scenario or help"
            )))
        }
    };
    let mut o = match parse_for(spec, rest)? {
        Parsed::Help(h) => {
            return Ok(Some(text_only(&h)));
        }
        Parsed::Run(o) => o,
        Parsed::Jobs(jobs) => return cmd_run_jobs(jobs).map(Some),
    };
    if spec.name == "run" {
        return cmd_run_jobs(vec![o]).map(Some);
    }
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
    Ok(Some((out, ro)))
}

/// Help or a version line, printed as a report (so a closed pipe or a full disk is handled
/// the same way).
fn text_only(t: &str) -> (Output, ReportOpts) {
    (
        Output {
            text: t.to_string(),
            json: serde_json::Value::Null,
        },
        ReportOpts::default(),
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

fn main() -> ExitCode {
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
    // run, compare and advise stop their jobs on the first SIGINT/SIGTERM and report what they have;
    // anything else exits at once (files pollwise made are removed either way).
    signals::set_graceful(matches!(
        args.first().map(String::as_str),
        Some("run" | "compare" | "advise")
    ));
    if let Err(e) = signals::install() {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: cannot watch for signals: {}",
            pollwise_cli::errno::explain(&e, pollwise_cli::errno::Op::Other)
        );
        return ExitCode::from(1);
    }
    let mut after = None;
    let result = real_main(&args, &mut after);
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
        Ok(Some((mut out, ro))) => {
            let sig = signals::received();
            if let Some(sig) = sig {
                if let Some(o) = out.json.as_object_mut() {
                    o.insert("interrupted".into(), signals::name(sig).into());
                }
                out.text = format!(
                    "pollwise: interrupted by {}: results so far\n{}",
                    signals::name(sig),
                    out.text
                );
            }
            if ro.output.is_some() {
                if let Err(e) = ro.emit(&out) {
                    let _ = writeln!(
                        std::io::stderr(),
                        "pollwise: {}",
                        pollwise_cli::error::one_line(&e.to_string())
                    );
                    return ExitCode::from(e.exit_code() as u8);
                }
            } else if let Err(code) = emit_report(&ro.render(&out)) {
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
