//! Where each option's value goes in the job, as fio's `options.c` rows name `off1`: the
//! row's [`Store`] says it, and [`JobSpec::default`] is every row's default stored through it
//! (`job_default`, above the table, which reads the rows).
//!
//! A plain store (one value into its field, with the conversion the field needs) is a
//! [`Store::Job`] function, applied by [`Opts::job_spec_from`](super::Opts::job_spec_from) in
//! table order; a plain store that others are checked against is [`Store::Checked`], which also
//! names the step that checks; an option that builds a value with others is taken by the named
//! [`Step`] its row gives. The steps run after every plain store.

use std::str::FromStr;
use std::time::Duration;

use pollwise::policy::Mode;
use pollwise::predict::Statistic;
use pollwise::queue::sim::LatencyModel;
use pollwise::queue::sync::SyncCall;
use pollwise_bench::engine::SubmitMode;

use super::defaults::SIM_LATENCY;
use super::parse::{parse_distribution, rw_modifier, split_filenames};
use super::value::{value_of, Value};
use crate::extras::parse_cpus;
use crate::spec::{IoEngine, JobSpec};
use crate::{Error, Result};

/// A plain store: puts one checked value into the job.
pub type Put = fn(&mut JobSpec, &Value) -> Result<()>;

/// Where an option's value goes.
#[derive(Debug, Clone, Copy)]
pub enum Store {
    /// Into the job, by this function; the row's default is stored the same way.
    Job(Put),
    /// Into the job as [`Store::Job`], then checked against other options by the step.
    Checked(Put, Step),
    /// Into the job by the named step, with the options it is checked against.
    Step(Step),
    /// Accepted as fio's, with no effect: pollwise always does what it asks, or does it its own
    /// way (the row's help says which).
    Unused,
    /// Not a job's: the command takes it itself (output, help, a scenario's own options).
    Command,
}

impl Store {
    /// The function that stores the value, for a plain store (checked or not).
    pub fn put(self) -> Option<Put> {
        match self {
            Store::Job(put) | Store::Checked(put, _) => Some(put),
            _ => None,
        }
    }

    /// The step that takes the option, or checks it.
    pub fn step(self) -> Option<Step> {
        match self {
            Store::Step(step) | Store::Checked(_, step) => Some(step),
            _ => None,
        }
    }
}

/// The steps that take the options checked against others, in the order a job is built: each
/// after the plain stores and the steps whose results it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `sim_latency`, `platform`, `userspace_reap`: the engine's own options, checked against
    /// `ioengine`.
    Engine,
    /// `buffered` and `rwmixwrite`, the inverses of `direct` and `rwmixread`: the later given wins.
    Inverse,
    /// `offset`, `offset_increment`: kept as given (even 0: several files and `fill_device`
    /// refuse any offset).
    Offsets,
    /// `io_size`, checked against verify, holes and loops (fio 3.33's passes).
    Passes,
    /// `fill_device`: one sequential writer from the file's start.
    Fill,
    /// `rate`, `rate_iops`, `rate_process`, `ratemin`, `rate_iops_min`, `ratecycle`.
    Rates,
    /// `prio`, `prioclass` and the cmdprio options.
    Prio,
    /// `bsrange`, `bssplit`, `blockalign`, and `bs`'s READ,WRITE sizes checked per command.
    BlockSizes,
    /// The buffer options: what writes write.
    Content,
    /// `zonemode` and its sizes.
    Zones,
    /// `experimental_verify`, checked against loops and verify.
    ExperimentalVerify,
    /// `exitall`, `exitall_on_error`, `exit_what`.
    Exit,
    /// `latency_target` and its window, percentile and `latency_run` (`run` only).
    LatencyTarget,
    /// `steadystate` and its duration and ramp.
    Steady,
    /// `threads` in a job file (fio's tiobench option, accepted and unused).
    Threads,
    /// `flow`, `flow_id`, `flow_sleep`.
    Flow,
    /// `randrepeat=0`: a seed from the clock unless `randseed` is given.
    Seed,
    /// `directory`, `filename_format`, `nrfiles`, `file_service_type`, `filesize`; then
    /// `fill_device` against the files they name (one file, one thread).
    Files,
    /// `write_iolog`, `read_iolog` and the replay options.
    Iolog,
    /// The log options that name files (`write_*_log`, `per_job_logs`).
    Logs,
    /// `fault`, checked against the platform model.
    Fault,
    /// `mode`, checked against the engine, and `write_auto_log` against it.
    Policy,
}

impl Step {
    /// Every step, in the order they run.
    pub const ALL: [Step; 22] = [
        Step::Engine,
        Step::Inverse,
        Step::Offsets,
        Step::Passes,
        Step::Fill,
        Step::Rates,
        Step::Prio,
        Step::BlockSizes,
        Step::Content,
        Step::Zones,
        Step::ExperimentalVerify,
        Step::Exit,
        Step::LatencyTarget,
        Step::Steady,
        Step::Threads,
        Step::Flow,
        Step::Seed,
        Step::Files,
        Step::Iolog,
        Step::Logs,
        Step::Fault,
        Step::Policy,
    ];
}

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// `filename`: one file, or several separated by ':' (the first is the job's).
pub fn filename(s: &mut JobSpec, v: &Value) -> Result<()> {
    let files = split_filenames(&value_of::<String>(v)?);
    s.filename = files.first().cloned().unwrap_or_default().into();
    if files.len() > 1 {
        s.extra.files = files.into_iter().map(Into::into).collect();
    }
    Ok(())
}

/// `size`: bytes, or a percentage of the target resolved with the jobs.
pub fn size(s: &mut JobSpec, v: &Value) -> Result<()> {
    match v {
        Value::Percent(p) => s.extra.size_percent = Some(*p),
        v => s.size = value_of(v)?,
    }
    Ok(())
}

/// `rw`, with fio's modifier (`read:8k`, `randread:8`).
pub fn rw(s: &mut JobSpec, v: &Value) -> Result<()> {
    let v: String = value_of(v)?;
    let (pattern, modifier) = match v.split_once(':') {
        Some((p, m)) => (p.trim(), Some(m.trim())),
        None => (v.as_str(), None),
    };
    s.rw = crate::spec::parse_rw(pattern)?;
    if let Some(m) = modifier {
        rw_modifier(s, &v, m)?;
    }
    Ok(())
}

/// `bs`: one size for every direction, or `READ,WRITE[,TRIM]` (trims take the writes' when
/// none is given, as fio). Which commands take two sizes is [`Step::BlockSizes`]'s check.
pub fn bs(s: &mut JobSpec, v: &Value) -> Result<()> {
    let fit = |v: u64| u32::try_from(v).map_err(|_| usage(format!("--bs={v} is too large")));
    let sizes = match v {
        Value::Sizes(l) => l.clone(),
        v => vec![Some(value_of::<u64>(v)?)],
    };
    match sizes.as_slice() {
        [Some(one)] => s.bs = fit(*one)?,
        [r, w, rest @ ..] => {
            if let Some(r) = r {
                s.bs = fit(*r)?;
            }
            if let Some(t) = rest.first().copied().flatten().or(*w) {
                let t = fit(t)?;
                if t != s.bs {
                    s.extra.trim_bs = Some(t);
                }
            }
            if let Some(w) = w {
                let w = fit(*w)?;
                if w != s.bs {
                    s.extra.write_bs = Some(w);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `iodepth_batch_complete_min`; 0 (with `iodepth_batch_complete_max` unset) reaps, waiting
/// for one, after every request queued, as fio 3.x (backend.c's io_in_polling).
pub fn iodepth_batch_complete_min(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.iodepth_batch_complete_min = value_of(v)?;
    s.extra.reap_each = s.iodepth_batch_complete_min == 0;
    Ok(())
}

/// `ioengine`; `sim` starts with `sim_latency`'s default device ([`Step::Engine`] takes a
/// latency given).
pub fn ioengine(s: &mut JobSpec, v: &Value) -> Result<()> {
    let e: String = value_of(v)?;
    s.ioengine = match e.as_str() {
        "io_uring" => IoEngine::IoUring,
        "sim" => {
            IoEngine::Sim(SIM_LATENCY.parse::<LatencyModel>()?)
        }
        "null" => IoEngine::Null,
        "nop" => IoEngine::Nop,
        "libaio" => IoEngine::Libaio {
            userspace_reap: false,
        },
        "posixaio" => IoEngine::Posixaio,
        other => IoEngine::Sync(SyncCall::from_name(other).ok_or_else(|| {
            usage(format!(
                "--ioengine={other} is not supported: use io_uring, libaio, posixaio, sync, psync, vsync, pvsync, pvsync2, null, nop or sim"
            ))
        })?),
    };
    Ok(())
}

/// `submit_mode`.
pub fn submit_mode(s: &mut JobSpec, v: &Value) -> Result<()> {
    let m: String = value_of(v)?;
    s.submit_mode = SubmitMode::from_name(&m)
        .ok_or_else(|| usage(format!("--submit_mode={m}: use with_wait or separate")))?;
    Ok(())
}

/// `sqthread_idle`, in whole milliseconds (at least 1, as the kernel takes it).
pub fn sqthread_idle(s: &mut JobSpec, v: &Value) -> Result<()> {
    let d: Duration = value_of(v)?;
    s.sqthread_idle_ms = u32::try_from(d.as_millis().max(1)).map_err(|_| {
        usage(format!(
            "--sqthread_idle={d:?} is too long: use at most {} ms",
            u32::MAX
        ))
    })?;
    Ok(())
}

/// `coop_taskrun`: given, it replaces the flags chosen by mode.
pub fn coop_taskrun(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.coop_taskrun = value_of(v)?;
    s.taskrun_auto = false;
    Ok(())
}

/// `defer_taskrun`: given, it replaces the flags chosen by mode.
pub fn defer_taskrun(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.defer_taskrun = value_of(v)?;
    s.taskrun_auto = false;
    Ok(())
}

/// `single_issuer`: given, it replaces the flags chosen by mode.
pub fn single_issuer(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.single_issuer = value_of(v)?;
    s.taskrun_auto = false;
    Ok(())
}

/// `verify`: crc32c headers, and fio's checksum of each block for the other algorithms.
pub fn verify(s: &mut JobSpec, v: &Value) -> Result<()> {
    let v: String = value_of(v)?;
    s.verify = match v.as_str() {
        "crc32c" | "crc32c-intel" | "meta" => true,
        "0" | "none" => false,
        other => match pollwise_bench::digest::Digest::from_name(other) {
            Some(d) => {
                s.extra.verify_mode.digest = Some(d);
                true
            }
            None => {
                return Err(usage(format!(
                    "--verify={v} is not supported: use --verify=crc32c"
                )))
            }
        },
    };
    Ok(())
}

/// `mode` (checked against the engine by [`Step::Policy`]).
pub fn mode(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.policy.mode = Mode::from_str(&value_of::<String>(v)?).map_err(usage)?;
    Ok(())
}

/// `hybrid_fraction`: a fraction given without a statistic is kept as given (the kernel's
/// rule, a fraction of the mean); `hybrid_stat`, stored after it, may set it adapting again.
pub fn hybrid_fraction(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.policy.hybrid_fraction = value_of(v)?;
    s.policy.hybrid_adaptive = false;
    Ok(())
}

/// `hybrid_stat`: `auto` adapts the sleep target; a statistic is kept as given.
pub fn hybrid_stat(s: &mut JobSpec, v: &Value) -> Result<()> {
    match value_of::<String>(v)?.as_str() {
        "auto" => s.policy.hybrid_adaptive = true,
        stat => {
            s.policy.hybrid_stat = stat.parse::<Statistic>()?;
            s.policy.hybrid_adaptive = false;
        }
    }
    Ok(())
}

/// `cpus_allowed`: `0-3,6`.
pub fn cpus_allowed(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.cpus = Some(parse_cpus(&value_of::<String>(v)?)?);
    Ok(())
}

/// `sync`: the open flags that make every write durable.
pub fn sync(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.sync.open_flags = match value_of::<String>(v)?.as_str() {
        "1" | "sync" => libc::O_SYNC,
        "dsync" => libc::O_DSYNC,
        _ => 0,
    };
    Ok(())
}

/// `do_verify=0`: write the verify headers, read nothing back.
pub fn do_verify(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.skip_verify = !value_of::<bool>(v)?;
    Ok(())
}

/// `verify_backlog` (0: read back only when the job is done).
pub fn verify_backlog(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.verify_backlog = Some(value_of::<u64>(v)?).filter(|n| *n > 0);
    Ok(())
}

/// `verify_pattern`: fio's pattern syntax.
pub fn verify_pattern(s: &mut JobSpec, v: &Value) -> Result<()> {
    let p: String = value_of(v)?;
    let bytes = pollwise_bench::content::parse_pattern(&p)
        .map_err(|why| usage(format!("--verify_pattern={p}: {why}")))?;
    if !bytes.is_empty() {
        s.extra.verify_mode.pattern = Some(bytes.into());
    }
    Ok(())
}

/// `number_ios` (0: no such limit).
pub fn number_ios(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.number_ios = Some(value_of::<u64>(v)?).filter(|n| *n > 0);
    Ok(())
}

/// `random_distribution` (`random`: uniform, none kept).
pub fn random_distribution(s: &mut JobSpec, v: &Value) -> Result<()> {
    s.extra.distribution = parse_distribution(&value_of::<String>(v)?)?;
    Ok(())
}

/// `continue_on_error`.
pub fn continue_on_error(s: &mut JobSpec, v: &Value) -> Result<()> {
    let v: String = value_of(v)?;
    s.continue_on_error =
        pollwise_bench::engine::ContinueOn::from_name(&v).ok_or_else(|| {
            usage(format!(
                "--continue_on_error={v} is not one of none, read, write, io, verify, all (or fio's 0 and 1)"
            ))
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::table::{Category, Scope, OPTIONS};
    use crate::options::test_job as spec;

    #[test]
    fn every_job_option_goes_somewhere() {
        // The command's own options among the job files' (the others are output, help and
        // the scenarios' own).
        const COMMANDS_OWN: &[&str] = &["section", "readonly", "modes"];
        for o in OPTIONS {
            let job = o.scope == Scope::Job
                || matches!(
                    o.category,
                    Category::Job
                        | Category::Jobs
                        | Category::Timing
                        | Category::IoUring
                        | Category::Policy
                );
            if job && !COMMANDS_OWN.contains(&o.name) {
                assert!(
                    !matches!(o.store, Store::Command),
                    "{} is a job's option, and its row names no place in the job",
                    o.name
                );
            }
        }
    }

    #[test]
    fn every_step_takes_an_option() {
        for (i, step) in Step::ALL.iter().enumerate() {
            assert!(!Step::ALL[..i].contains(step), "{step:?} runs twice");
            assert!(
                OPTIONS.iter().any(|o| o.store.step() == Some(*step)),
                "no row names {step:?}"
            );
        }
    }

    #[test]
    fn stores_convert_as_the_fields_need() {
        let a = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let s = spec(
            "run",
            &a("--sqthread_idle=5 --iodepth_batch_complete_min=0 --coop_taskrun=1 --verify=md5 --do_verify=0 --number_ios=0 --size=50%"),
        )
        .unwrap();
        assert_eq!(s.sqthread_idle_ms, 5);
        assert!(s.extra.reap_each);
        assert!(s.coop_taskrun && !s.taskrun_auto);
        assert!(s.verify && s.extra.verify_mode.digest.is_some());
        assert!(s.extra.skip_verify);
        assert_eq!(s.extra.number_ios, None);
        assert_eq!(s.extra.size_percent, Some(50.0));
        // fio's gtod_reduce: one clock reading a batch (each request its own without it).
        assert!(!s.gtod_reduce);
        assert!(spec("run", &a("--gtod_reduce=1")).unwrap().gtod_reduce);
    }
}
