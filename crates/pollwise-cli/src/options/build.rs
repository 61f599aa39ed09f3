//! From checked option values to a job: the one place a [`JobSpec`] is built from options.

use std::str::FromStr;

use crate::spec::{IoEngine, JobSpec};
use crate::{Error, Result};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::predict::Statistic;
use pollwise::queue::sim::LatencyModel;
use pollwise::queue::sync::SyncCall;
use pollwise_bench::engine::SubmitMode;

use super::fault::parse_fault;
use super::parse::{
    clock_seed, file_switch, log_name_from_job, log_prefix, parse_bsrange, parse_bssplit,
    parse_distribution, parse_per_dir, rate_of_directions, rw_modifier, split_filenames,
};
use super::store::Store;
use super::table::OPTIONS;
use super::{Opts, SizeOrPercent};
use crate::extras::{parse_cpus, Rate};

fn usage(s: String) -> Error {
    Error::Usage(s)
}

impl Opts {
    /// Takes every job option (fio's names, `--mode` and the policy knobs) into a [`JobSpec`]
    /// with `pollwise run`'s defaults.
    pub fn job_spec(&mut self) -> Result<JobSpec> {
        // A job file's jobs mean what they mean to fio, defaults included.
        let base = if self.from_job_file() {
            JobSpec::fio()
        } else {
            JobSpec::default()
        };
        self.job_spec_from(base)
    }

    /// As [`Opts::job_spec`], over a command's own defaults `base` (a scenario's runtime, ...).
    /// A refusal that names an option set in a job file names the file and line too.
    pub fn job_spec_from(&mut self, base: JobSpec) -> Result<JobSpec> {
        self.job_spec_of(base).map_err(|e| self.located(e))
    }

    /// `e` with the job file and line of the option its message begins with (`--zonemode=...`),
    /// when it came from a job file and the message does not say where already.
    fn located(&self, e: Error) -> Error {
        let Error::Usage(msg) = e else { return e };
        let name: String = msg
            .strip_prefix("--")
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let at = if name.is_empty() || msg.contains(" (at ") {
            String::new()
        } else {
            self.at(&name.replace('-', "_"))
        };
        Error::Usage(format!("{msg}{at}"))
    }

    fn job_spec_of(&mut self, base: JobSpec) -> Result<JobSpec> {
        let mut s = base;
        // The plain stores, each as its row says; the options checked against others follow.
        for o in OPTIONS {
            if let Store::Job(put) = o.store {
                if let Some(v) = self.take_value(o.name) {
                    put(&mut s, &v)?;
                }
            }
        }
        if let Some(v) = self.take_str("name")? {
            s.name = v;
        }
        if let Some(v) = self.take_str("filename")? {
            let files = split_filenames(&v);
            s.filename = files.first().cloned().unwrap_or_default().into();
            if files.len() > 1 {
                s.extra.files = files.into_iter().map(Into::into).collect();
            }
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
            (Some("nop"), _) => s.ioengine = IoEngine::Nop,
            (Some("libaio"), _) => s.ioengine = IoEngine::Libaio {
                userspace_reap: false,
            },
            (Some("posixaio"), _) => s.ioengine = IoEngine::Posixaio,
            (Some(e), _) => match SyncCall::from_name(e) {
                Some(call) => s.ioengine = IoEngine::Sync(call),
                None => {
                    return Err(usage(format!(
                        "--ioengine={e} is not supported: use io_uring, libaio, posixaio, sync, psync, vsync, pvsync, pvsync2, null, nop or sim"
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
            let (pattern, modifier) = match v.split_once(':') {
                Some((p, m)) => (p.trim(), Some(m.trim())),
                None => (v.as_str(), None),
            };
            s.rw = crate::spec::parse_rw(pattern)?;
            if let Some(m) = modifier {
                rw_modifier(&mut s, &v, m)?;
            }
        }
        if let Some(v) = self.take_u32("rwmixread")? {
            s.rwmixread = v;
        }
        if let Some(v) = self.take_sizes("bs")? {
            let fit =
                |v: u64| u32::try_from(v).map_err(|_| usage(format!("--bs={v} is too large")));
            match v.as_slice() {
                [Some(one)] => s.bs = fit(*one)?,
                [r, w, rest @ ..] => {
                    if let Some(r) = r {
                        s.bs = fit(*r)?;
                    }
                    // Trims take the third size, else the writes' (as fio).
                    if let Some(t) = rest.first().copied().flatten().or(*w) {
                        let t = fit(t)?;
                        if t != s.bs {
                            s.extra.trim_bs = Some(t);
                        }
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
        }
        self.take_job_file_options(&mut s)?;
        self.take_iolog(&mut s)?;
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
        self.check_files(&s)?;
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
        // The model's device answers in virtual time and injects nothing: a fault asked there
        // would give a clean run that looks like one with faults.
        if s.fault.is_some() && s.platform.is_some() {
            return Err(usage(format!(
                "--fault does not apply under --platform: the platform model's device injects no faults; drop --fault or --platform{}",
                self.at("fault")
            )));
        }
        if let Some(v) = self.take_str("continue_on_error")? {
            s.continue_on_error = pollwise_bench::engine::ContinueOn::from_name(&v).ok_or_else(|| {
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
        // pollwise's jobs are always threads.
        self.take_bool("thread")?;
        if let Some(v) = self.take_bool("new_group")? {
            s.extra.new_group = v;
        }
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
        if let Some(n) = self.take_u32("fsync")? {
            s.extra.sync.fsync = n;
        }
        if let Some(n) = self.take_u32("fdatasync")? {
            s.extra.sync.fdatasync = n;
        }
        if let Some(v) = self.take_bool("end_fsync")? {
            s.extra.sync.end_fsync = v;
        }
        if let Some(v) = self.take_bool("fsync_on_close")? {
            s.extra.sync.fsync_on_close = v;
        }
        if let Some(v) = self.take_bool("invalidate")? {
            s.extra.sync.invalidate = v;
        }
        if let Some(v) = self.take_str("sync")? {
            s.extra.sync.open_flags = match v.as_str() {
                "1" | "sync" => libc::O_SYNC,
                "dsync" => libc::O_DSYNC,
                _ => 0,
            };
        }
        s.extra.offset = self.take_size_or_percent("offset")?;
        s.extra.offset_increment = self.take_size_or_percent("offset_increment")?;
        if let Some(v) = self.take_u32("loops")? {
            s.extra.loops = v;
        }
        if s.verify && s.rw.writes() && s.size != 0 && s.io_size > s.size {
            return Err(usage(format!(
                "--io_size={} larger than --size={} with --verify: fio 3.33 writes the size once (and reads it back) whatever io_size says, and pollwise would write io_size; drop io_size{}",
                s.io_size,
                s.size,
                self.at("io_size")
            )));
        }
        // A sequential write with holes, or a read that does not verify, from an offset follows
        // fio's passes (`jobs::resolve`, `passes`). From the file's start, fio 3.33's position
        // wraps at the file's end and a pass runs on to the byte limit, with verify logs that
        // pollwise does not follow.
        let from_offset = match s.extra.offset {
            Some(SizeOrPercent::Bytes(b)) => b > 0,
            Some(SizeOrPercent::Percent(p)) => p > 0.0,
            None => false,
        };
        let follows_passes = s.extra.seq_add > 0
            && from_offset
            && (s.rw == crate::spec::Rw::Write || (s.rw == crate::spec::Rw::Read && !s.verify));
        if s.extra.seq_add != 0
            && self.has("io_size")
            && (s.extra.loops > 1 || s.verify)
            && !follows_passes
        {
            return Err(usage(format!(
                "--io_size with holes (--rw=...:N) and with loops or verify: pollwise follows fio 3.33's passes only for a sequential write, or a read that does not verify, from an --offset (from the file's start fio's position wraps at the file's end); drop io_size{}",
                self.at("io_size")
            )));
        }
        if self.take_bool("fill_device")? == Some(true) {
            // fio fills with a sequential write from the file's start, one writer, and stops
            // at ENOSPC (backend.c io_queue_event, do_io): other shapes would mean another thing.
            let alone = s.numjobs <= 1 && s.extra.offset.is_none() && !self.has("nrfiles");
            if s.rw != crate::spec::Rw::Write || s.extra.seq_add != 0 || s.time_based || !alone {
                return Err(usage(format!(
                    "--fill_device is followed for a sequential write (rw=write) of one file from its start by one job thread, not time-based; this job is rw={}{}: give a size instead{}",
                    s.rw.name(),
                    if s.time_based { ", time_based" } else { "" },
                    self.at("fill_device")
                )));
            }
            s.extra.fill_device = true;
        }
        // The order the jobs' files are laid out in changes no job's I/O.
        self.take_bool("create_serialize")?;
        let iops = self.take_u64("rate_iops")?;
        let bytes = match self.take_sizes("rate")? {
            None => None,
            Some(per_dir) => rate_of_directions(s, &per_dir)?,
        };
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
        self.take_min_rate(s, iops, bytes)?;
        self.take_prio(s)?;
        if let Some(c) = self.take_str("cpus_allowed")? {
            s.extra.cpus = Some(parse_cpus(&c)?);
        }
        self.take_block_sizes(s)?;
        s.extra.wait_for = self.take_str("wait_for")?;
        self.take_content(s)?;
        self.take_zones(s)?;
        if self.take_bool("do_verify")? == Some(false) {
            s.extra.skip_verify = true;
        }
        if let Some(v) = self.take_size("verify_interval")? {
            s.extra.verify_mode.interval = u32::try_from(v).ok();
        }
        s.extra.verify_backlog = self.take_size("verify_backlog")?.filter(|n| *n > 0);
        s.extra.verify_state_save = self.take_bool("verify_state_save")? == Some(true);
        s.extra.verify_state_load = self.take_bool("verify_state_load")? == Some(true);
        if let Some(p) = self.take_str("verify_pattern")? {
            let bytes = pollwise_bench::content::parse_pattern(&p).map_err(|why| {
                usage(format!(
                    "--verify_pattern={p}: {why}{}",
                    self.at("verify_pattern")
                ))
            })?;
            if !bytes.is_empty() {
                s.extra.verify_mode.pattern = Some(bytes.into());
            }
        }
        // Stopping at the first bad block is pollwise's way already; it names bad blocks in its
        // report rather than dumping them; it reads back every block written either way.
        self.take_bool("verify_fatal")?;
        self.take_bool("verify_dump")?;
        let experimental = self.take_bool("experimental_verify")? == Some(true);
        // A write-only job without a backlog follows fio's experimental verify over loops
        // (`passes::experimental_verify_bytes`); other shapes are refused.
        let writes_only = matches!(s.rw, crate::spec::Rw::Write | crate::spec::Rw::RandWrite);
        let follows = writes_only && s.extra.verify_backlog.is_none();
        if experimental && s.verify && s.extra.loops > 1 && !s.extra.skip_verify && follows {
            s.extra.experimental_verify = true;
        } else if experimental && s.verify && s.extra.loops > 1 && !s.extra.skip_verify {
            return Err(usage(format!(
                "--experimental_verify with --loops={}: pollwise follows fio 3.33's experimental verify over loops (the first pass read back, its reads counted against loops x size) for a write-only job without verify_backlog; drop experimental_verify{}",
                s.extra.loops,
                self.at("experimental_verify")
            )));
        }
        let (exitall, on_error) = (
            self.take_bool("exitall")?.unwrap_or(false),
            self.take_bool("exitall_on_error")?.unwrap_or(false),
        );
        let what = self.take_str("exit_what")?;
        if exitall || on_error {
            s.extra.exit = Some(crate::extras::ExitAll {
                on_end: exitall,
                all: what.as_deref() == Some("all"),
            });
        }
        s.extra.number_ios = self.take_u64("number_ios")?.filter(|n| *n > 0);
        if self.command().name == "run" {
            self.take_latency_target(s)?;
        }
        let ss = self.take_str("steadystate")?;
        let ss_dur = self.take_duration("steadystate_duration")?;
        let ss_ramp = self.take_duration("steadystate_ramp_time")?;
        if ss.is_some() || ss_dur.is_some() || ss_ramp.is_some() {
            s.extra.steady = crate::steady::SteadySpec::parse(
                ss.as_deref(),
                ss_dur.unwrap_or_default(),
                ss_ramp.unwrap_or_default(),
            )
            .map_err(|e| usage(format!("{e}{}", self.at("steadystate"))))?;
        }
        if let Some(v) = self.take_str("random_distribution")? {
            s.extra.distribution = parse_distribution(&v)?;
        }
        if matches!(self.command().name, "run" | "compare") {
            if self.on_command_line("threads") {
                return Err(usage(format!(
                    "--threads is not an option of `{}`: it belongs to `pollwise scenario hybrid-contention`; a job runs --numjobs threads",
                    self.command().invocation()
                )));
            }
            // In a job file: fio's tiobench profile's option, which fio accepts in any job and
            // uses in none.
            self.take_list_u64("threads")?;
        }
        let (weight, id, sleep) = (
            self.take_u32("flow")?,
            self.take_u64("flow_id")?,
            self.take_duration("flow_sleep")?,
        );
        if let Some(w) = weight.filter(|w| *w > 0) {
            s.extra.flow = Some(crate::extras::FlowShare {
                id: id.unwrap_or(0),
                weight: w,
                sleep: sleep.unwrap_or_default(),
                flow: None,
            });
        }
        if let Some(v) = self.take_duration("startdelay")? {
            s.extra.startdelay = v;
        }
        // Measurement cost: pollwise measures every request all the same.
        self.take_bool("gtod_reduce")?;
        if let Some(v) = self.take_bool("norandommap")? {
            s.extra.norandommap = v;
        }
        let reads = !matches!(s.rw, crate::spec::Rw::Write | crate::spec::Rw::RandWrite);
        let varies = s.extra.sizes.iter().any(Option::is_some);
        let differ = s.extra.sizes[0] != s.extra.sizes[1] || s.extra.write_bs.is_some();
        if s.rw.random()
            && reads
            && s.rw.writes()
            && varies
            && differ
            && !s.extra.norandommap
            && s.extra.distribution.is_none()
        {
            let which = if self.has("bssplit") {
                "bssplit"
            } else {
                "bsrange"
            };
            return Err(usage(format!(
                "--{which} with other sizes for writes than for reads, on a mixed random job with fio's random map: fio 3.33 ends such a job before its size is done (examples/cmdprio-bssplit.fio's first job: 5.2 of 8 MiB) by a rule pollwise does not follow; add norandommap (both then end it by its size) or give reads and writes the same sizes{}",
                self.at(which)
            )));
        }
        // Every generator visits each block once per pass (the random map); pollwise draws
        // from its one generator.
        self.take_str("random_generator")?;
        if self.take_bool("randrepeat")? == Some(false) && !self.has("randseed") {
            s.seed = clock_seed();
        }
        self.take_files(s)?;
        if s.extra.fill_device && (s.extra.files.len() > 1 || !s.extra.clone_files.is_empty()) {
            return Err(usage(format!(
                "--fill_device is followed for one file written by one job thread; this job has several files: give a size instead{}",
                self.at("fill_device")
            )));
        }
        Ok(())
    }

    /// fio's `latency_target` and its window, percentile and `latency_run` (`run` only: for
    /// `advise`, `latency_target` is the recommendation's).
    fn take_latency_target(&mut self, s: &mut JobSpec) -> Result<()> {
        let target = self.take_str("latency_target")?;
        let window = self.take_duration("latency_window")?;
        let percentile = self.take_f64("latency_percentile")?;
        let run = self.take_bool("latency_run")?;
        let Some(t) = target else {
            return Ok(());
        };
        let at = self.at("latency_target");
        let target = pollwise::units::parse_duration(&t, Some(pollwise::units::TimeUnit::Micros))
            .map_err(|_| {
                usage(format!(
                    "--latency_target={t} is not a time: give the latency requests must meet, e.g. 500us or 2ms (a bare number is us){at}"
                ))
            })?;
        // fio's latency_target=0: no target.
        if target.is_zero() {
            return Ok(());
        }
        s.extra.latency = Some(crate::latency::LatSpec {
            target_ns: target.as_nanos().min(u64::MAX as u128) as u64,
            window: window.unwrap_or_default(),
            percentile: percentile.unwrap_or(100.0),
            run: run.unwrap_or(false),
        });
        Ok(())
    }

    /// fio's `zonemode=strided` and its sizes.
    fn take_zones(&mut self, s: &mut JobSpec) -> Result<()> {
        let mode = self.take_str("zonemode")?;
        let range = self.take_size("zonerange")?;
        let size = self.take_size("zonesize")?;
        let skip = self.take_size("zoneskip")?.unwrap_or(0);
        match mode.as_deref() {
            None | Some("none") => Ok(()),
            Some("zbd") => Err(usage(
                "--zonemode=zbd (a zoned block device's zones, written in order) is not implemented by pollwise: it does I/O on a file or device as one range; use zonemode=strided or drop it".into(),
            )),
            _ => {
                let size = size.ok_or_else(|| {
                    usage("--zonemode=strided needs --zonesize: the bytes of I/O in each zone".into())
                })?;
                s.extra.zones = Some((range.unwrap_or(size), size, skip));
                Ok(())
            }
        }
    }

    /// fio's buffer options: what writes write.
    fn take_content(&mut self, s: &mut JobSpec) -> Result<()> {
        use pollwise_bench::content::Bytes;
        let c = &mut s.extra.content;
        if let Some(p) = self.take_str("buffer_pattern")? {
            let bytes = pollwise_bench::content::parse_pattern(&p)
                .map_err(|why| usage(format!("--buffer_pattern={p}: {why}")))?;
            c.bytes = Bytes::Pattern(bytes);
        }
        if self.take_bool("zero_buffers")? == Some(true) {
            c.bytes = Bytes::Zero;
        }
        if let Some(pct) = self.take_u32("buffer_compress_percentage")? {
            if let Bytes::Random { compress_pct } = &mut c.bytes {
                *compress_pct = pct as u8;
            }
        }
        if let Some(v) = self.take_bool("refill_buffers")? {
            c.refill = v;
        }
        if let Some(v) = self.take_bool("scramble_buffers")? {
            c.scramble = v;
        }
        let pct = self.take_u32("dedupe_percentage")?.unwrap_or(0);
        let mode = self.take_str("dedupe_mode")?;
        let ws = self.take_u32("dedupe_working_set_percentage")?.unwrap_or(5);
        let global = self.take_bool("dedupe_global")?.unwrap_or(false);
        if pct > 0 {
            let working = mode.as_deref() == Some("working_set");
            c.dedupe = Some(pollwise_bench::content::Dedupe {
                percentage: pct as u8,
                working_set: working.then_some(ws as u8),
                global: working && global,
                // The run's thread numbers are set when the jobs start.
                thread: (0, 1),
                seed: 0x5EED_DED0_u64,
            });
        }
        Ok(())
    }

    /// fio's `bsrange`, `bssplit` and `blockalign`: sizes that vary by request.
    fn take_block_sizes(&mut self, s: &mut JobSpec) -> Result<()> {
        let range = self.take_str("bsrange")?;
        let split = self.take_str("bssplit")?;
        if let Some(v) = self.take_sizes("blockalign")? {
            s.extra.align = v.into_iter().flatten().next();
        }
        // As fio, bssplit wins over bsrange.
        let per_dir = match (&split, &range) {
            (Some(v), _) => parse_per_dir(v, "bssplit", parse_bssplit)?,
            (None, Some(v)) => parse_per_dir(v, "bsrange", parse_bsrange)?,
            (None, None) => return Ok(()),
        };
        for (d, sizes) in per_dir.into_iter().enumerate() {
            match sizes {
                // One size: the direction's block size.
                Some(b) if b.min() == b.max() => {
                    if d == 0 {
                        s.bs = b.min();
                    } else if b.min() != s.bs && d == 1 {
                        s.extra.write_bs = Some(b.min());
                    } else if b.min() != s.bs {
                        s.extra.trim_bs = Some(b.min());
                    }
                }
                other => s.extra.sizes[d] = other,
            }
        }
        Ok(())
    }

    /// fio's I/O logs: `write_iolog`, and `read_iolog` with its `replay_*` options. A replay
    /// takes its file, directions, block sizes and size from the log.
    fn take_iolog(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(w) = self.take_str("write_iolog")? {
            if s.numjobs > 1 {
                return Err(usage(format!(
                    "--write_iolog with --numjobs={}: fio's clones would each write the one log over the others'; give the clones jobs of their own, each with its log{}",
                    s.numjobs,
                    self.at("write_iolog")
                )));
            }
            s.extra.write_iolog = Some(w.into());
        }
        let o = crate::iolog::ReplayOpts {
            no_stall: self.take_bool("replay_no_stall")?.unwrap_or(false),
            redirect: self.take_str("replay_redirect")?.map(Into::into),
            time_scale: self.take_u32("replay_time_scale")?.unwrap_or(100),
        };
        let Some(path) = self.take_str("read_iolog")? else {
            return Ok(());
        };
        let what = format!("--read_iolog={path}{}", self.at("read_iolog"));
        if s.time_based {
            return Err(usage(format!(
                "{what}: --time_based with a replayed log is not implemented by pollwise: a replay ends with its log; drop time_based (a runtime still bounds the replay)"
            )));
        }
        if s.verify {
            return Err(usage(format!(
                "{what}: --verify with a replayed log is not implemented by pollwise: it verifies the blocks of its own pattern; drop verify"
            )));
        }
        let log = crate::iolog::read(std::path::Path::new(&path), &o, &what)?;
        // As fio: the log's directions make the job's.
        s.rw = match log.dirs() {
            [true, false, false] => crate::spec::Rw::Read,
            [false, false, true] => crate::spec::Rw::Trim,
            [false, true, true] => crate::spec::Rw::TrimWrite,
            [true, true, _] | [true, _, true] => crate::spec::Rw::ReadWrite,
            _ => crate::spec::Rw::Write,
        };
        s.bs = log.max_len();
        s.extra.write_bs = None;
        s.extra.trim_bs = None;
        s.extra.sizes = Default::default();
        if s.ioengine.has_file() {
            s.filename = log.file.clone();
        }
        s.size = s.size.max(log.extent()).max(s.bs as u64);
        s.extra.replay = Some(std::sync::Arc::new(log));
        Ok(())
    }

    /// Several files in one job take a job's whole-block sequential pattern, spread over them
    /// as fio's `file_service_type` spreads it (see `PatternConfig::files`); the options that
    /// would move a request across files, or that name one file, are refused with their line.
    fn check_files(&self, s: &JobSpec) -> Result<()> {
        let n = s.extra.files.len();
        if n < 2 {
            return Ok(());
        }
        let x = &s.extra;
        let refused = |option: &str, why: &str| -> Result<()> {
            Err(usage(format!(
                "--{option} with {n} files in one job (--filename=a:b or --nrfiles): {why}{}",
                self.at(option)
            )))
        };
        let cmd = self.command().name;
        if !matches!(cmd, "run" | "compare") {
            return Err(usage(format!(
                "--filename names {n} files: several files in one job are for `pollwise run` and `compare`, not `{cmd}`; name one file{}",
                self.at("filename")
            )));
        }
        if !s.ioengine.has_file() {
            return refused("ioengine", "this engine has no files; drop the files or use io_uring, libaio or the sync engines");
        }
        if s.rw.random() || x.seq_add != 0 {
            return refused("rw", "pollwise spreads a sequential pattern over the files (fio's file_service_type); a random or holed one is not implemented: give each file its own job");
        }
        if x.offset.is_some() || x.offset_increment.is_some() {
            let o = if x.offset.is_some() {
                "offset"
            } else {
                "offset_increment"
            };
            return refused(o, "offsets within each of several files are not implemented: give each file its own job");
        }
        if x.zones.is_some() {
            return refused("zonemode", "zones within each of several files are not implemented: give each file its own job");
        }
        if x.sync.fsync > 0 || x.sync.fdatasync > 0 || x.sync.end_fsync {
            let o = if x.sync.fsync > 0 {
                "fsync"
            } else if x.sync.fdatasync > 0 {
                "fdatasync"
            } else {
                "end_fsync"
            };
            return refused(o, "pollwise syncs one file per job (fio syncs the file of the last write): give each file its own job, or use fsync_on_close");
        }
        if x.replay.is_some() || x.write_iolog.is_some() {
            let o = if x.replay.is_some() {
                "read_iolog"
            } else {
                "write_iolog"
            };
            return refused(
                o,
                "pollwise's I/O logs name one file: give each file its own job",
            );
        }
        if x.sizes.iter().any(Option::is_some)
            || x.write_bs.is_some_and(|w| w != s.bs)
            || x.trim_bs.is_some_and(|t| t != s.bs)
        {
            let o = if self.has("bssplit") {
                "bssplit"
            } else if self.has("bsrange") {
                "bsrange"
            } else {
                "bs"
            };
            return refused(
                o,
                "requests of several sizes over several files are not implemented: use one --bs",
            );
        }
        if x.filesize.is_some() {
            return refused(
                "filesize",
                "pollwise shares --size among the files; use --size (the total) instead",
            );
        }
        if s.size == 0 || x.size_percent.is_some() {
            return refused(
                "size",
                "give the total as bytes (e.g. --size=512k): pollwise shares it among the files",
            );
        }
        Ok(())
    }

    /// fio's files: `directory`, `filename_format` (the names of a job file's job without a
    /// filename, one per clone), `filesize`, `nrfiles`.
    fn take_files(&mut self, s: &mut JobSpec) -> Result<()> {
        let directory = self.take_str("directory")?;
        let format = self.take_str("filename_format")?;
        let nrfiles = self.take_u32("nrfiles")?;
        if let Some(v) = self.take_str("file_service_type")? {
            s.extra.file_switch = Some(file_switch(&v).ok_or_else(|| {
                usage(format!(
                    "--file_service_type={v}: pollwise takes roundrobin, roundrobin:N and sequential (fio's random, zipf, pareto and normal choose files at random, which pollwise does not){}",
                    self.at("file_service_type")
                ))
            })?);
        }
        s.extra.filesize = self.take_size("filesize")?;
        if let (Some(f), 0, None) = (s.extra.filesize, s.size, s.extra.size_percent) {
            // fio: without a size, the I/O covers the file.
            s.size = f;
        }
        if let Some(d) = directory.as_deref() {
            if split_filenames(d).len() > 1 {
                return Err(usage(format!(
                    "--directory={d} names several directories (fio's ':' separator): pollwise takes one"
                )));
            }
        }
        let dir = directory.as_deref().map(std::path::Path::new);
        if !s.filename.as_os_str().is_empty() {
            if let Some(d) = dir {
                for f in std::iter::once(&mut s.filename).chain(s.extra.files.iter_mut()) {
                    if f.is_relative() {
                        *f = d.join(&*f);
                    }
                }
            }
            let named = s.extra.files.len().max(1) as u32;
            if let Some(n) = nrfiles.filter(|n| *n != named) {
                return Err(usage(format!(
                    "--nrfiles={n} with --filename={} ({named} file{}): pollwise takes the files --filename names; drop nrfiles or name {n} files (a:b:c){}",
                    s.filename.display(),
                    if named == 1 { "" } else { "s" },
                    self.at("nrfiles")
                )));
            }
            return Ok(());
        }
        // Only a job file's job (or one given a directory or a format) is named as fio names
        // it; the command line's `run` asks for --filename.
        let named = self.from_job_file() || directory.is_some() || format.is_some();
        if !named || !s.ioengine.has_file() {
            return Ok(());
        }
        let format = format.as_deref().unwrap_or("$jobname.$jobnum.$filenum");
        let name = |clone: u32, filenum: u32| {
            let name = format
                .replace("$jobname", &s.name)
                .replace("$jobnum", &clone.to_string())
                .replace("$filenum", &filenum.to_string())
                .replace("$clientuid", "0");
            match dir {
                Some(d) => d.join(name),
                None => std::path::PathBuf::from(name),
            }
        };
        s.extra.made_up_names = true;
        let nrfiles = nrfiles.unwrap_or(1).max(1);
        if nrfiles > 1 {
            if s.numjobs > 1 {
                return Err(usage(format!(
                    "--nrfiles={nrfiles} with --numjobs={}: pollwise gives each job, not each clone, several files; run one clone or give each job its own{}",
                    s.numjobs,
                    self.at("nrfiles")
                )));
            }
            s.extra.files = (0..nrfiles).map(|f| name(0, f)).collect();
        }
        let files: Vec<std::path::PathBuf> = (0..s.numjobs.max(1)).map(|c| name(c, 0)).collect();
        s.filename = files[0].clone();
        if files.len() > 1 && files.iter().any(|f| *f != files[0]) {
            s.extra.clone_files = files;
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
        if self.take_bool("per_job_logs")? == Some(false) {
            if s.numjobs > 1 && s.logs.any() {
                return Err(usage(format!(
                    "--per_job_logs=0 with --numjobs={}: pollwise writes each thread's log on its own (NAME_bw.N.log); drop per_job_logs=0 or run one thread",
                    s.numjobs
                )));
            }
            s.logs.unnumbered = true;
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
        if let Some(v) = self.take_u64("poll_max_ns")? {
            p.poll_max_ns = v;
        }
        if let Some(v) = self.take_u64("poll_grow")? {
            p.poll_grow = v;
        }
        if let Some(v) = self.take_u64("poll_shrink")? {
            p.poll_shrink = v;
        }
        if let Some(v) = self.take_f64("auto_slack")? {
            p.auto_latency_slack = v;
        }
        Ok(p)
    }
}

impl Opts {
    /// fio's `ratemin`, `rate_iops_min` and `ratecycle`, checked against the job's `rate` and
    /// `rate_iops` as fio checks them.
    fn take_min_rate(
        &mut self,
        s: &mut JobSpec,
        rate_iops: Option<u64>,
        rate_bytes: Option<u64>,
    ) -> Result<()> {
        let per_dir = |v: Option<Vec<Option<u64>>>| -> [u64; 2] {
            match v.as_deref() {
                None => [0, 0],
                // One value is every direction's, as fio's.
                Some([one]) => [one.unwrap_or(0); 2],
                Some(l) => [
                    l.first().copied().flatten().unwrap_or(0),
                    l.get(1).copied().flatten().unwrap_or(0),
                ],
            }
        };
        let bytes = per_dir(self.take_sizes("ratemin")?);
        let iops = self.take_u64("rate_iops_min")?.map_or([0, 0], |v| [v, v]);
        let cycle_ms = self.take_u64("ratecycle")?.unwrap_or(1000);
        if bytes == [0, 0] && iops == [0, 0] {
            return Ok(());
        }
        let at = match self.at("ratemin") {
            a if a.is_empty() => self.at("rate_iops_min"),
            a => a,
        };
        let over =
            |cap: Option<u64>, min: [u64; 2]| cap.is_some_and(|c| min.iter().any(|&m| m > c));
        if over(rate_bytes, bytes) || over(rate_iops, iops) {
            return Err(usage(format!(
                "the minimum rate exceeds the rate (fio: minimum rate exceeds rate): lower ratemin or rate_iops_min, or raise rate or rate_iops{at}"
            )));
        }
        s.extra.min_rate = Some(crate::extras::MinRate {
            bytes,
            iops,
            cycle_ms,
        });
        Ok(())
    }
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
                "auto_slack",
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
    fn fio_units_and_aliases() {
        let s = spec(
            "run",
            "--thinktime=40 --thinktime_spin=10us --sqthread_idle=5 --readwrite=randrw --iodepth=4 --iodepth_batch=8 --iodepth_batch_submit=2",
        )
        .unwrap();
        assert_eq!(s.thinktime, Duration::from_micros(40));
        assert_eq!(s.thinktime_spin, Duration::from_micros(10));
        assert_eq!(s.sqthread_idle_ms, 5);
        assert_eq!(s.rw, crate::spec::Rw::RandRw);
        assert_eq!(s.iodepth_batch_submit, 2);
    }
}
