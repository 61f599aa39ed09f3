//! From checked option values to a job: the one place a [`JobSpec`] is built from options.

use std::str::FromStr;

use crate::job::{IoEngine, JobSpec};
use crate::{Error, Result};
use pollwise::engine::SubmitMode;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::predict::Statistic;
use pollwise::queue::sim::LatencyModel;
use pollwise::queue::sync::SyncCall;

use super::{Opts, SizeOrPercent};
use crate::extras::{parse_cpus, Rate};

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// How `--fault` is written, for messages.
const FAULT_FORM: &str = "KIND:RATE[,KIND:RATE...] with KIND one of eio, short, eagain, canceled (RATE a probability, 0.01 or 1%), or spike:RATE:DURATION (e.g. --fault=eio:1%,short:0.05,spike:0.1%:5ms)";

fn fault_rate(v: &str, item: &str) -> Result<f64> {
    let bad = || {
        usage(format!(
            "--fault: '{item}' has rate '{v}': write a probability from 0 to 1 (0.01) or a percentage (1%); the form is {FAULT_FORM}"
        ))
    };
    let r = match v.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => v.trim().parse::<f64>().map_err(|_| bad())?,
    };
    if !(0.0..=1.0).contains(&r) {
        return Err(bad());
    }
    Ok(r)
}

/// Parses `--fault`'s value (`KIND:RATE[,KIND:RATE...]`, `spike:RATE:DURATION`). A kind given twice takes the last rate.
pub fn parse_fault(v: &str) -> Result<pollwise::queue::fault::FaultSpec> {
    let mut f = pollwise::queue::fault::FaultSpec::default();
    if v.trim().is_empty() {
        return Err(usage(format!("--fault is empty: write {FAULT_FORM}")));
    }
    for item in v.split(',') {
        let parts: Vec<&str> = item.split(':').map(str::trim).collect();
        let want = |n: usize, eg: &str| -> Result<()> {
            if parts.len() == n {
                Ok(())
            } else {
                Err(usage(format!(
                    "--fault: '{item}' takes {} value(s) after the kind, e.g. {eg}",
                    n - 1
                )))
            }
        };
        match parts[0] {
            "eio" | "short" | "eagain" | "canceled" | "ecanceled" => {
                want(2, &format!("{}:1%", parts[0]))?;
                let r = fault_rate(parts[1], item)?;
                match parts[0] {
                    "eio" => f.eio = r,
                    "short" => f.short = r,
                    "eagain" => f.eagain = r,
                    _ => f.canceled = r,
                }
            }
            "spike" => {
                want(3, "spike:1%:5ms")?;
                f.spike = fault_rate(parts[1], item)?;
                let d = pollwise::units::parse_duration(parts[2], None).map_err(|_| {
                    usage(format!(
                        "--fault: '{item}' has duration '{}': write a time with a unit, e.g. spike:1%:5ms",
                        parts[2]
                    ))
                })?;
                f.spike_ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                if f.spike_ns == 0 || f.spike_ns > 3_600_000_000_000 {
                    return Err(usage(format!(
                        "--fault: '{item}': a spike lasts more than 0 and at most an hour, e.g. spike:1%:5ms"
                    )));
                }
            }
            k => {
                return Err(usage(format!(
                    "--fault: unknown kind '{k}' in '{item}': use {FAULT_FORM}"
                )))
            }
        }
    }
    let shared = f.eio + f.canceled + f.short;
    if shared > 1.0 + 1e-9 {
        return Err(usage(format!(
            "--fault={v}: the eio, canceled and short rates add up to {:.0}%: one completion gets at most one of them, so keep their sum at most 100%",
            shared * 100.0
        )));
    }
    f.check().map_err(|e| usage(format!("--fault={v}: {e}")))?;
    Ok(f)
}

/// For each `take_KIND("option") => place;`: when the option was given, store its value as
/// given. The options that need a check or a conversion are written out beside it.
macro_rules! store {
    ($opts:ident: $($take:ident($name:literal) => $dst:expr;)+) => {
        $( if let Some(v) = $opts.$take($name)? { $dst = v; } )+
    };
}

impl Opts {
    /// Takes every job option (fio's names, `--mode` and the policy knobs) into a [`JobSpec`]
    /// with `pollwise run`'s defaults.
    pub fn job_spec(&mut self) -> Result<JobSpec> {
        self.job_spec_from(JobSpec::default())
    }

    /// As [`Opts::job_spec`], over a command's own defaults `base` (a scenario's runtime, ...).
    pub fn job_spec_from(&mut self, base: JobSpec) -> Result<JobSpec> {
        let mut s = base;
        if let Some(v) = self.take_str("name")? {
            s.name = v;
        }
        if let Some(v) = self.take_str("filename")? {
            let files = split_filenames(&v);
            if files.len() > 1 {
                return Err(usage(format!(
                    "--filename={v} names {} files (fio's ':' separator): several files in one job are not implemented by pollwise; give each file its own job (--name=a --filename={} --name=b --filename={}), or write '\\:' for a ':' in a name",
                    files.len(),
                    files[0],
                    files[1]
                )));
            }
            s.filename = files.into_iter().next().unwrap_or_default().into();
        }
        let latency = self.take_str("sim_latency")?;
        s.sim_latency_given = latency.is_some();
        let platform = self.take_str("platform")?;
        if let Some(p) = &platform {
            s.platform = Some(crate::platform::load(p)?);
        }
        let ioengine = self.take_str("ioengine")?;
        if platform.is_some() && ioengine.as_deref() != Some("sim") {
            return Err(usage(
                "--platform needs --ioengine=sim: it is the modelled machine the simulated device runs on".into(),
            ));
        }
        match (ioengine.as_deref(), latency) {
            (None | Some("io_uring"), None) => {}
            (Some("sim"), l) => {
                let l = l.as_deref().unwrap_or("fixed:10us");
                s.ioengine = IoEngine::Sim(l.parse::<LatencyModel>()?);
            }
            (None | Some("io_uring"), Some(_)) => {
                return Err(usage(
                    "--sim_latency needs --ioengine=sim: it is the simulated device's latency"
                        .into(),
                ))
            }
            (Some(e), Some(_)) if e != "io_uring" => {
                return Err(usage(format!(
                    "--sim_latency needs --ioengine=sim, not {e}: it is the simulated device's latency"
                )))
            }
            (Some("null"), _) => s.ioengine = IoEngine::Null,
            (Some("libaio"), _) => s.ioengine = IoEngine::Libaio {
                userspace_reap: false,
            },
            (Some(e), _) => match SyncCall::from_name(e) {
                Some(call) => s.ioengine = IoEngine::Sync(call),
                None => {
                    return Err(usage(format!(
                        "--ioengine={e} is not supported: use io_uring, libaio, sync, psync, vsync, pvsync, pvsync2, null or sim"
                    )))
                }
            },
        }
        if let Some(reap) = self.take_bool("userspace_reap")? {
            match &mut s.ioengine {
                IoEngine::Libaio { userspace_reap } => *userspace_reap = reap,
                e if reap => {
                    return Err(usage(format!(
                        "--userspace_reap is a libaio option, and this job's engine is {}: drop it or use --ioengine=libaio",
                        e.name()
                    )))
                }
                _ => {}
            }
        }
        match self.take_size_or_percent("size")? {
            Some(SizeOrPercent::Bytes(v)) => s.size = v,
            Some(SizeOrPercent::Percent(p)) => s.extra.size_percent = Some(p),
            None => {}
        }
        if let Some(v) = self.take_size("io_size")? {
            s.io_size = v;
        }
        if let Some(v) = self.take_str("rw")? {
            s.rw = crate::job::parse_rw(&v)?;
        }
        if let Some(v) = self.take_u32("rwmixread")? {
            s.rwmixread = v;
        }
        if let Some(v) = self.take_sizes("bs")? {
            let fit =
                |v: u64| u32::try_from(v).map_err(|_| usage(format!("--bs={v} is too large")));
            match v.as_slice() {
                [Some(one)] => s.bs = fit(*one)?,
                [r, w, ..] => {
                    if let Some(r) = r {
                        s.bs = fit(*r)?;
                    }
                    if let Some(w) = w {
                        let w = fit(*w)?;
                        if w != s.bs {
                            if !matches!(self.command().name, "run" | "compare") {
                                return Err(usage(format!(
                                    "--bs with READ,WRITE sizes is not used by `{}`: give one size",
                                    self.command().invocation()
                                )));
                            }
                            s.extra.write_bs = Some(w);
                        }
                    }
                }
                _ => {}
            }
        }
        store! { self:
            take_u32("iodepth") => s.iodepth;
            take_bool("direct") => s.direct;
            take_duration("runtime") => s.runtime;
            take_bool("time_based") => s.time_based;
            take_duration("ramp_time") => s.ramp_time;
            take_u32("numjobs") => s.numjobs;
            take_u32("iodepth_batch_submit") => s.iodepth_batch_submit;
        }
        if let Some(v) = self.take_u32("iodepth_batch_complete_min")? {
            s.iodepth_batch_complete_min = v;
            // fio 3.x: 0 (with iodepth_batch_complete_max unset) reaps, waiting for one, after
            // every request queued (backend.c's io_in_polling): about one request in flight.
            s.extra.reap_each = v == 0;
        }
        // fio's synchronous engines do one I/O at a time: fio caps the depth at 1 and says so.
        // The note comes once the job is known good, so a refusal stays one line.
        let capped = matches!(s.ioengine, IoEngine::Sync(_)) && s.iodepth > 1;
        if capped {
            s.iodepth = 1;
            s.iodepth_batch_submit = s.iodepth_batch_submit.min(1);
            s.iodepth_batch_complete_min = s.iodepth_batch_complete_min.min(1);
        }
        store! { self:
            take_bool("registerfiles") => s.registerfiles;
            take_bool("fixedbufs") => s.fixedbufs;
        }
        if let Some(v) = self.take_str("submit_mode")? {
            s.submit_mode = SubmitMode::from_name(&v)
                .ok_or_else(|| usage(format!("--submit_mode={v}: use with_wait or separate")))?;
        }
        if let Some(v) = self.take_bool("sqthread_poll")? {
            s.sqthread_poll = v;
        }
        if let Some(v) = self.take_u32("sqthread_poll_cpu")? {
            s.sqthread_poll_cpu = Some(v);
        }
        if let Some(v) = self.take_duration("sqthread_idle")? {
            s.sqthread_idle_ms = u32::try_from(v.as_millis().max(1)).map_err(|_| {
                usage(format!(
                    "--sqthread_idle={v:?} is too long: use at most {} ms",
                    u32::MAX
                ))
            })?;
        }
        store! { self:
            take_bool("sqthread_share") => s.sqthread_share;
            take_bool("hipri") => s.hipri;
            take_bool("hybrid_iopoll") => s.hybrid_iopoll;
        }
        if let Some(v) = self.take_bool("coop_taskrun")? {
            s.coop_taskrun = v;
            s.taskrun_auto = false;
        }
        if let Some(v) = self.take_bool("defer_taskrun")? {
            s.defer_taskrun = v;
            s.taskrun_auto = false;
        }
        if let Some(v) = self.take_bool("single_issuer")? {
            s.single_issuer = v;
            s.taskrun_auto = false;
        }
        if let Some(v) = self.take_bool("allow_mounted_write")? {
            s.extra.allow_mounted_write = v;
        }
        if let Some(v) = self.take_str("verify")? {
            s.verify = match v.as_str() {
                "crc32c" | "crc32c-intel" => true,
                "0" | "none" => false,
                _ => {
                    return Err(usage(format!(
                        "--verify={v} is not supported: use --verify=crc32c"
                    )))
                }
            };
        }
        store! { self:
            take_duration("thinktime") => s.thinktime;
            take_duration("thinktime_spin") => s.thinktime_spin;
            take_u32("thinktime_blocks") => s.thinktime_blocks;
            take_u64("randseed") => s.seed;
        }
        self.take_job_file_options(&mut s)?;
        self.take_log_options(&mut s)?;
        self.take_fault_options(&mut s)?;
        let mode = match self.take_str("mode")? {
            Some(m) => {
                let m = Mode::from_str(&m).map_err(usage)?;
                if !s.ioengine.waits() && m != Mode::Interrupt {
                    return Err(usage(format!(
                        "--mode={} does not apply to --ioengine={}: it does each I/O inside its system call, so there is no wait to choose; for the kernel's polled read use --ioengine=pvsync2 --hipri, to compare wait modes use io_uring or libaio",
                        m.name(),
                        s.ioengine.name()
                    )));
                }
                m
            }
            None => s.policy.mode,
        };
        s.policy = self.policy_config(mode)?;
        if s.logs.auto.is_some() && mode != Mode::Auto {
            return Err(Error::Usage(format!(
                "--write_auto_log logs auto's choices, and this job runs --mode={}: add --mode=auto or drop --write_auto_log",
                mode.name()
            )));
        }
        if capped {
            eprintln!(
                "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"
            );
        }
        Ok(s)
    }

    /// Takes the options job files bring (fio's meaning): grouping, ranges, rates, CPUs. Only
    /// `run` and `compare` take them (the table says so).
    /// `--fault` and `--continue_on_error`.
    fn take_fault_options(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(v) = self.take_str("fault")? {
            let f = parse_fault(&v)?;
            s.fault = (!f.is_empty()).then_some(f);
        }
        if let Some(v) = self.take_str("continue_on_error")? {
            s.continue_on_error = pollwise::engine::ContinueOn::from_name(&v).ok_or_else(|| {
                usage(format!(
                    "--continue_on_error={v} is not one of none, read, write, io, verify, all (or fio's 0 and 1)"
                ))
            })?;
        }
        Ok(())
    }

    fn take_job_file_options(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(d) = self.take_str("description")? {
            s.extra.description = Some(d);
        }
        if let Some(v) = self.take_bool("group_reporting")? {
            s.extra.group_reporting = v;
        }
        // pollwise's jobs are always threads; new_group only groups reports, and pollwise
        // reports every job on its own.
        self.take_bool("thread")?;
        self.take_bool("new_group")?;
        if let Some(v) = self.take_bool("stonewall")? {
            s.extra.stonewall = v;
        }
        if let Some(v) = self.take_bool("buffered")? {
            if self.has_later("direct", "buffered") {
                // --direct given after --buffered wins; it was taken above.
            } else {
                s.direct = !v;
            }
        }
        if let Some(v) = self.take_u32("rwmixwrite")? {
            if !self.has_later("rwmixread", "rwmixwrite") {
                s.rwmixread = 100 - v;
            }
        }
        s.extra.offset = self.take_size_or_percent("offset")?;
        s.extra.offset_increment = self.take_size_or_percent("offset_increment")?;
        if let Some(v) = self.take_u32("loops")? {
            s.extra.loops = v;
        }
        let iops = self.take_u64("rate_iops")?;
        let bytes = self.take_size("rate")?;
        let process = self.take_str("rate_process")?;
        if iops.is_some() || bytes.is_some() {
            s.extra.rate = Some(Rate {
                iops,
                bytes,
                poisson: process.as_deref() == Some("poisson"),
            });
        } else if process.is_some() {
            return Err(usage(
                "--rate_process needs --rate_iops or --rate: it shapes the gaps of a rate limit"
                    .into(),
            ));
        }
        if let Some(c) = self.take_str("cpus_allowed")? {
            s.extra.cpus = Some(parse_cpus(&c)?);
        }
        Ok(())
    }

    /// Takes fio's log options (`write_lat_log`, `write_bw_log`, `write_iops_log`,
    /// `log_avg_msec`, `log_offset`); only `run` takes them (the table says so).
    fn take_log_options(&mut self, s: &mut JobSpec) -> Result<()> {
        // A bare flag (or an empty name) means the job's name, as fio.
        let name = |o: &mut Opts, key: &str| -> Result<Option<String>> {
            match o.take_str(key)? {
                None => Ok(None),
                Some(v) if v.is_empty() => log_name_from_job(key, &s.name).map(Some),
                Some(v) => log_prefix(key, &v).map(Some),
            }
        };
        let lat = name(self, "write_lat_log")?;
        let bw = name(self, "write_bw_log")?;
        let iops = name(self, "write_iops_log")?;
        s.logs.auto = name(self, "write_auto_log")?;
        s.logs.lat = lat;
        s.logs.bw = bw;
        s.logs.iops = iops;
        store! { self:
            take_u64("log_avg_msec") => s.logs.avg_msec;
            take_bool("log_offset") => s.logs.offset;
        }
        Ok(())
    }

    /// Takes the policy knobs for `mode`.
    pub fn policy_config(&mut self, mode: Mode) -> Result<PolicyConfig> {
        let mut p = PolicyConfig::new(mode);
        // hybrid's sleep target: `auto` (the default) adapts; a statistic chosen, or a fraction
        // chosen without a statistic (a fraction of the mean, the kernel's rule), is kept as
        // given.
        let fraction = self.take_f64("hybrid_fraction")?;
        if let Some(v) = fraction {
            p.hybrid_fraction = v;
        }
        match self.take_str("hybrid_stat")?.as_deref() {
            Some("auto") => p.hybrid_adaptive = true,
            Some(v) => {
                p.hybrid_stat = v.parse::<Statistic>()?;
                p.hybrid_adaptive = false;
            }
            None => p.hybrid_adaptive = fraction.is_none(),
        }
        store! { self:
            take_u64("poll_max_ns") => p.poll_max_ns;
            take_u64("poll_grow") => p.poll_grow;
            take_u64("poll_shrink") => p.poll_shrink;
            take_f64("auto_latency_slack") => p.auto_latency_slack;
        }
        Ok(p)
    }
}

/// A log named after the job (a bare `--write_*_log`): the job's name is the log's path, as
/// in fio, but it may not climb out of its directory (`--name=../../x` must not put logs two
/// directories up).
fn log_name_from_job(key: &str, job: &str) -> Result<String> {
    if job.split('/').any(|c| c == "..") {
        return Err(usage(format!(
            "--{key} names its files after the job, and --name={} climbs out of its directory ('..'): give the logs a name, --{key}=NAME, or the job a name without '..'",
            crate::error::shown(job)
        )));
    }
    Ok(job.to_string())
}

/// A log name given to `--write_*_log`: a path (fio's), but one that does not climb out of
/// its directory with `..`.
fn log_prefix(key: &str, v: &str) -> Result<String> {
    if v.split('/').any(|c| c == "..") {
        return Err(usage(format!(
            "--{key}={} climbs out of its directory ('..'): name the logs with a path without '..'",
            crate::error::shown(v)
        )));
    }
    Ok(v.to_string())
}

/// fio's `filename`: names separated by ':', with '\\:' for a ':' inside a name.
pub fn split_filenames(v: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                out.last_mut().expect("never empty").push(':');
            }
            ':' => out.push(String::new()),
            c => out.last_mut().expect("never empty").push(c),
        }
    }
    out.retain(|f| !f.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{cmdline, table};
    use std::time::Duration;

    fn spec(cmd: &str, s: &str) -> Result<JobSpec> {
        let a: Vec<String> = s.split_whitespace().map(String::from).collect();
        let mut o = Opts::resolve(table::command(cmd).unwrap(), &cmdline::parse(&a)?)?;
        let j = o.job_spec()?;
        o.finish()?;
        Ok(j)
    }

    #[test]
    fn the_table_defaults_are_the_jobs_defaults() {
        let d = JobSpec::default();
        let t = |n: &str| match table::lookup(n).unwrap().default {
            table::Default::Value(v) => v,
            other => panic!("{n}: {other:?}"),
        };
        let from_table = spec(
            "run",
            &[
                "rw",
                "rwmixread",
                "bs",
                "iodepth",
                "direct",
                "runtime",
                "numjobs",
                "iodepth_batch_submit",
                "iodepth_batch_complete_min",
                "sqthread_idle",
                "thinktime_blocks",
                "randseed",
                "mode",
                "hybrid_fraction",
                "hybrid_stat",
                "poll_max_ns",
                "poll_grow",
                "poll_shrink",
                "auto_latency_slack",
                "name",
                "ramp_time",
                "thinktime",
                "submit_mode",
            ]
            .iter()
            .map(|n| format!("--{n}={}", t(n)))
            .collect::<Vec<_>>()
            .join(" "),
        )
        .unwrap();
        assert_eq!(format!("{from_table:?}"), format!("{d:?}"));
    }

    #[test]
    fn filenames_split_on_colons_unless_escaped() {
        assert_eq!(split_filenames("a:b"), ["a", "b"]);
        assert_eq!(split_filenames(r"a\:b"), ["a:b"]);
        assert_eq!(split_filenames("/x/y"), ["/x/y"]);
    }

    #[test]
    fn fio_units_and_aliases() {
        let s = spec(
            "run",
            "--thinktime=40 --thinktime_spin=10us --sqthread_idle=5 --readwrite=randrw --iodepth=4 --iodepth_batch=8 --iodepth_batch_submit=2",
        )
        .unwrap();
        assert_eq!(s.thinktime, Duration::from_micros(40));
        assert_eq!(s.thinktime_spin, Duration::from_micros(10));
        assert_eq!(s.sqthread_idle_ms, 5);
        assert_eq!(s.rw, crate::job::Rw::RandRw);
        assert_eq!(s.iodepth_batch_submit, 2);
    }
}
