//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options against the table, build a job, call the library, print the
//! report.

use std::process::ExitCode;

use pollwise_cli::options::table::{self, CommandSpec};
use pollwise_cli::options::{self, cmdline, help, Opts};
use pollwise_cli::report::{self, facts::Facts, Output, ReportFor, ReportOpts};
use pollwise_cli::{compare, scenario, Error, Result};

fn cmd_run(o: &mut Opts, ro: &ReportOpts) -> Result<Output> {
    // fio's "job options": the options the user gave, as written.
    let given: Vec<(String, String)> = o
        .job_options()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let spec = o.job_spec()?;
    o.finish()?;
    report::run_and_report(&spec, &given, ro)
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
    Opts::resolve(cmd, &line).map(Parsed::Run)
}

/// Runs the command in `args`; returns the report and whether to print it as JSON, or `None`
/// when it printed help.
fn real_main(args: &[String]) -> Result<Option<(Output, ReportOpts)>> {
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
    };
    let for_cmd = if spec.name == "run" {
        ReportFor::Run
    } else {
        ReportFor::Other
    };
    let ro = ReportOpts::take(&mut o, for_cmd)?;
    let out = match spec.name {
        "run" => cmd_run(&mut o, &ro)?,
        "compare" => {
            let target = report::facts_target(&o.given());
            let mut out = compare::run(&mut o, ro.is_json())?;
            report::add_facts(&mut out, &Facts::gather(&target));
            out
        }
        name => scenario::run(name, &mut o)?,
    };
    o.finish()?;
    Ok(Some((out, ro)))
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
        Ok(Some((out, ro))) => match ro.emit(&out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pollwise: {e}");
                ExitCode::from(e.exit_code() as u8)
            }
        },
        Err(e) => {
            eprintln!("pollwise: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
