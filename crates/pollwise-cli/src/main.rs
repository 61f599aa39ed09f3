//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options, build a job, call the library, print the report.

use std::io::Write as _;
use std::process::ExitCode;

use pollwise::policy::Mode;
use pollwise_cli::job::run_job;
use pollwise_cli::report::{jobs_json, run_text, JobFigures, Output};
use pollwise_cli::{compare, opts, scenario, signals, Error, Result};

const HELP: &str = "\
pollwise: how to wait for I/O completions, and what each way costs.

usage:
  pollwise compare [job options] [--modes=a,b,...] [--rounds=N] [--warmup=T]
      Runs one job under several wait modes in interleaved rounds and reports medians.
      With no --filename it creates a 256 MiB file in the temp directory and removes it.
  pollwise run [job options] [--mode=MODE]
      Runs one job, like fio.
  pollwise scenario NAME [options]
      Reproduces a seed's experiment (NAME: see below).
  pollwise help | --version

job options (fio's names; --name=value or --name value; a bare flag means 1):
  --filename=PATH  --size=256M  --rw=read|write|randread|randwrite|randrw  --rwmixread=50
  --bs=4k  --iodepth=1  --direct=1  --runtime=10s  --time_based  --io_size=SIZE  --ramp_time=T
  --numjobs=1  --iodepth_batch_submit=1  --iodepth_batch_complete_min=1  --registerfiles
  --fixedbufs  --sqthread_poll  --sqthread_poll_cpu=N  --sqthread_idle=1000ms  --sqthread_share
  --hipri  --hybrid_iopoll  --coop_taskrun  --defer_taskrun  --single_issuer  --verify=crc32c
  --thinktime=T  --thinktime_spin=T  --thinktime_blocks=N  --randseed=N  --ioengine=io_uring|sim
  --sim_latency=fixed:10us|uniform:8us,12us|normal:10us,1us|lognormal:10us,0.5|bimodal:10us,100us,0.1
  --output-format=normal|json
  pollwise's defaults differ from fio's in two places: --rw=randread and --direct=1.
wait modes (--mode / --modes):
";

fn help() -> String {
    let mut h = HELP.to_string();
    h.push_str(&format!("  {}\n", Mode::all_names()));
    h.push_str("  policy knobs: --hybrid_fraction=0.5  --poll_max_ns=32768  --poll_grow=0  --poll_shrink=0\n");
    h.push_str("                --hybrid_stat=mean|min|p10 (which predicted latency hybrid sleeps a fraction of)\n");
    h.push_str("scenarios:\n");
    for (name, what) in scenario::SCENARIOS {
        h.push_str(&format!("  {name:<20} {what}\n"));
    }
    h
}

fn cmd_run(o: &mut opts::Opts) -> Result<Output> {
    if o.has("modes") {
        return Err(Error::Usage(
            "`pollwise run` takes one --mode; use `pollwise compare --modes=...` for several"
                .into(),
        ));
    }
    let spec = o.job_spec()?;
    o.finish()?;
    let stats = run_job(&spec)?;
    let f = JobFigures::from_stats(&spec.name, spec.policy.mode.name(), &stats);
    Ok(Output {
        text: run_text(&f),
        json: jobs_json(vec![f.json()]),
    })
}

/// Runs the command in `args`; returns the report and whether to print it as JSON.
fn real_main(args: &[String]) -> Result<Option<(Output, bool)>> {
    let text = |t: String| {
        Ok(Some((
            Output {
                text: t,
                json: serde_json::Value::Null,
            },
            false,
        )))
    };
    let Some(cmd) = args.first() else {
        return text(help());
    };
    let rest = &args[1..];
    let (o, out, json) = match cmd.as_str() {
        "help" | "--help" | "-h" => return text(help()),
        "--version" | "version" => {
            return text(format!("pollwise {}\n", env!("CARGO_PKG_VERSION")));
        }
        "run" => {
            let mut o = opts::parse("run", rest)?;
            let json = o.take_json()?;
            let out = cmd_run(&mut o)?;
            (o, out, json)
        }
        "compare" => {
            let mut o = opts::parse("compare", rest)?;
            let json = o.take_json()?;
            let out = compare::run(&mut o, json)?;
            (o, out, json)
        }
        "scenario" => {
            let Some(name) = rest.first().filter(|n| !n.starts_with("--")) else {
                return Err(Error::Usage(
                    "`pollwise scenario` needs a NAME: see `pollwise help`".into(),
                ));
            };
            let mut o = opts::parse(&format!("scenario {name}"), &rest[1..])?;
            let json = o.take_json()?;
            let out = scenario::run(name, &mut o)?;
            (o, out, json)
        }
        other => {
            return Err(Error::Usage(format!(
                "unknown command '{other}': use compare, run, scenario or help"
            )))
        }
    };
    o.finish()?;
    Ok(Some((out, json)))
}

/// Writes the report to stdout. A reader that went away (`| head`) ends the command quietly,
/// as the usual tools do (128 + SIGPIPE); any other failure (a full disk) is one line, exit 1.
fn emit(text: &str) -> Result<(), ExitCode> {
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    // run and compare stop their jobs on the first SIGINT/SIGTERM and report what they have;
    // anything else exits at once (files pollwise made are removed either way).
    signals::set_graceful(matches!(
        args.first().map(String::as_str),
        Some("run" | "compare")
    ));
    if let Err(e) = signals::install() {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: cannot watch for signals: {}",
            pollwise_cli::errno::explain(&e, pollwise_cli::errno::Op::Other)
        );
        return ExitCode::from(1);
    }
    match real_main(&args) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some((mut out, json))) => {
            let sig = signals::received();
            if json {
                if let (Some(sig), Some(o)) = (sig, out.json.as_object_mut()) {
                    o.insert("interrupted".into(), signals::name(sig).into());
                }
                let mut s = serde_json::to_string_pretty(&out.json).expect("JSON serialises");
                s.push('\n');
                if let Err(code) = emit(&s) {
                    return code;
                }
            } else {
                if let Some(sig) = sig {
                    out.text = format!(
                        "pollwise: interrupted by {}: results so far\n{}",
                        signals::name(sig),
                        out.text
                    );
                }
                if let Err(code) = emit(&out.text) {
                    return code;
                }
            }
            match sig {
                Some(sig) => ExitCode::from(signals::exit_code(sig) as u8),
                None => ExitCode::SUCCESS,
            }
        }
        Err(e) => {
            // Nothing more can be said if stderr is gone too.
            let _ = writeln!(std::io::stderr(), "pollwise: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
