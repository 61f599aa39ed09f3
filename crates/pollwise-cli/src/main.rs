//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options against the table, build a job, call the library, print the
//! report.

use std::process::ExitCode;

use serde_json::{json, Map, Value};

use pollwise_cli::job::run_job;
use pollwise_cli::jobs::{check_compare, parse_only_text, run_planned, Planned};
use pollwise_cli::options::table::{self, CommandSpec};
use pollwise_cli::options::{self, cmdline, help, jobfile, Opts};
use pollwise_cli::report::{jobs_json, run_text, JobFigures, Output};
use pollwise_cli::{compare, scenario, Error, Result};

/// `pollwise run` with its jobs (job files, `--name` sections, or one job): each job's
/// options checked on their own; `--parse-only` prints the jobs and runs nothing.
fn cmd_run_jobs(jobs: Vec<Opts>) -> Result<(Output, bool)> {
    let mut planned = Vec::new();
    let (mut json, mut parse_only) = (false, false);
    // Output options are the run's, not a job's: the last value given anywhere wins.
    for mut o in jobs {
        if let Some(f) = o.take_str("output_format")? {
            json = f == "json";
        }
        if let Some(p) = o.take_bool("parse_only")? {
            parse_only = p;
        }
        let given = o.job_options();
        let spec = o.job_spec()?;
        o.finish()?;
        planned.push(Planned { spec, given });
    }
    if parse_only {
        let text = parse_only_text(&planned);
        return Ok((
            Output {
                text,
                json: Value::Null,
            },
            false,
        ));
    }
    Ok((run_planned(planned)?, json))
}

#[allow(dead_code)] // kept for reference: `run` goes through cmd_run_jobs
fn cmd_run(o: &mut Opts) -> Result<Output> {
    let given = o.job_options();
    let spec = o.job_spec()?;
    o.finish()?;
    let stats = run_job(&spec)?;
    let f = JobFigures::from_stats(&spec.name, spec.policy.mode.name(), &stats);
    let mut job = f.json();
    // fio's "job options": the options the user gave, as written.
    let opts: Map<String, Value> = given
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    job["job options"] = Value::Object(opts);
    Ok(Output {
        text: run_text(&f),
        json: jobs_json(vec![job]),
    })
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

/// Runs the command in `args`; returns the report and whether to print it as JSON, or `None`
/// when it printed help.
fn real_main(args: &[String]) -> Result<Option<(Output, bool)>> {
    let Some(cmd) = args.first() else {
        emit(&help::general());
        return Ok(None);
    };
    let rest = &args[1..];
    if let Some(what) = cmd.strip_prefix("--cmdhelp") {
        let what = match what.strip_prefix('=') {
            Some(w) => w.to_string(),
            None if what.is_empty() => rest.first().cloned().unwrap_or_else(|| "all".into()),
            None => return Err(Error::Usage(options::unknown_option(&cmd[2..], None))),
        };
        emit(&help::cmdhelp(&what, None)?);
        return Ok(None);
    }
    let (spec, rest) = match cmd.as_str() {
        "help" | "--help" | "-h" => {
            emit(&help_topic(rest)?);
            return Ok(None);
        }
        "--version" | "version" => {
            emit(&format!("pollwise {}\n", env!("CARGO_PKG_VERSION")));
            return Ok(None);
        }
        "run" | "compare" => (
            table::command(cmd).expect("run and compare are in the table"),
            rest,
        ),
        "scenario" => {
            let Some(name) = rest.first().filter(|n| !n.starts_with('-')) else {
                if rest.iter().any(|a| a == "--help" || a == "-h") {
                    emit(&help::scenarios_help());
                    return Ok(None);
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
                "unknown command '{other}': use compare, run, scenario or help"
            )))
        }
    };
    let mut o = match parse_for(spec, rest)? {
        Parsed::Help(h) => {
            emit(&h);
            return Ok(None);
        }
        Parsed::Run(o) => o,
        Parsed::Jobs(jobs) => return cmd_run_jobs(jobs).map(Some),
    };
    let json = o.take_json()?;
    let out = match spec.name {
        "run" => cmd_run(&mut o)?,
        "compare" => compare::run(&mut o, json)?,
        name => scenario::run(name, &mut o)?,
    };
    o.finish()?;
    Ok(Some((out, json)))
}

/// Writes to stdout; a closed pipe (`pollwise ... | head`) is not an error worth a panic.
fn emit(s: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match real_main(&args) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some((out, json))) => {
            if json {
                match serde_json::to_string_pretty(&out.json) {
                    Ok(j) => emit(&format!("{j}\n")),
                    Err(e) => {
                        eprintln!("pollwise: cannot write the JSON report: {e}");
                        return ExitCode::from(1);
                    }
                }
            } else {
                emit(&out.text);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pollwise: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
