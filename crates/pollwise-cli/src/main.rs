//! The `pollwise` command: an fio-like benchmark of how to wait for I/O completions.
//!
//! Thin by design: parse the options, build a job, call the library, print the report.

use std::process::ExitCode;

use pollwise::policy::Mode;
use pollwise_cli::job::run_job;
use pollwise_cli::report::{jobs_json, run_text, JobFigures, Output};
use pollwise_cli::{compare, opts, scenario, Error, Result};

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
    h.push_str("  policy knobs: --hybrid_fraction=0.5  --poll_max_ns=32768  --poll_grow=0  --poll_shrink=0  --auto_latency_slack=0.10\n");
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
    let Some(cmd) = args.first() else {
        print!("{}", help());
        return Ok(None);
    };
    let rest = &args[1..];
    let (o, out, json) = match cmd.as_str() {
        "help" | "--help" | "-h" => {
            print!("{}", help());
            return Ok(None);
        }
        "--version" | "version" => {
            println!("pollwise {}", env!("CARGO_PKG_VERSION"));
            return Ok(None);
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match real_main(&args) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some((out, json))) => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&out.json).expect("JSON serialises")
                );
            } else {
                print!("{}", out.text);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pollwise: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
