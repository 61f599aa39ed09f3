//! From checked option values to a job: the one place a [`JobSpec`] is built from options.
//!
//! Every option's row says where its value goes ([`Store`]): the plain stores are applied in
//! table order, then the [`Step`]s take the options checked against others, in [`Step::ALL`]'s
//! order.

use crate::spec::{IoEngine, JobSpec};
use crate::{Error, Result};
use pollwise::policy::Mode;

use super::fault::parse_fault;
use super::job_default::default_of;
use super::parse::{
    clock_seed, file_switch, log_name_from_job, log_prefix, parse_bsrange, parse_bssplit,
    parse_per_dir, rate_of_directions, split_filenames,
};
use super::store::{Step, Store};
use super::table::OPTIONS;
use super::value::{value_of, FromValue};
use super::{Opts, SizeOrPercent};
use crate::extras::Rate;

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
        for o in OPTIONS {
            match o.store {
                Store::Job(put) | Store::Checked(put, _) => {
                    if let Some(v) = self.take_value(o.name) {
                        put(&mut s, &v)?;
                    }
                }
                Store::Unused => {
                    self.take_value(o.name);
                }
                Store::Step(_) | Store::Command => {}
            }
        }
        for step in Step::ALL {
            self.step(step, &mut s)?;
        }
        // fio's synchronous engines do one I/O at a time: fio caps the depth at 1 and says so.
        // The note comes once the job is known good, so a refusal stays one line.
        let capped = matches!(s.ioengine, IoEngine::Sync(_)) && s.iodepth > 1;
        if capped {
            s.iodepth = 1;
            s.iodepth_batch_submit = s.iodepth_batch_submit.min(1);
            s.iodepth_batch_complete_min = s.iodepth_batch_complete_min.min(1);
        }
        self.check_files(&s)?;
        if capped {
            eprintln!(
                "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"
            );
        }
        Ok(s)
    }

    /// `name`'s value, or its row's default when it was not given: a step reads its default
    /// from the row, where it is written once.
    fn take_or_default<T: FromValue>(&mut self, name: &str) -> Result<T> {
        match self.take_value(name) {
            Some(v) => value_of(&v),
            None => Ok(default_of(name)),
        }
    }

    fn step(&mut self, step: Step, s: &mut JobSpec) -> Result<()> {
        match step {
            Step::Engine => self.take_engine(s),
            Step::Inverse => self.take_inverses(s),
            Step::Offsets => {
                s.extra.offset = self.take_size_or_percent("offset")?;
                s.extra.offset_increment = self.take_size_or_percent("offset_increment")?;
                Ok(())
            }
            Step::Passes => self.take_io_size(s),
            Step::Fill => self.take_fill_device(s),
            Step::Rates => self.take_rates(s),
            Step::Prio => self.take_prio(s),
            Step::BlockSizes => self.take_block_sizes(s),
            Step::Content => self.take_content(s),
            Step::Zones => self.take_zones(s),
            Step::ExperimentalVerify => self.take_experimental_verify(s),
            Step::Exit => self.take_exit(s),
            Step::LatencyTarget => self.take_latency_target(s),
            Step::Steady => self.take_steady(s),
            Step::Threads => self.take_threads(),
            Step::Flow => self.take_flow(s),
            Step::Seed => {
                if self.take_bool("randrepeat")? == Some(false) && !self.has("randseed") {
                    s.seed = clock_seed();
                }
                Ok(())
            }
            Step::Files => self.take_files_and_fill(s),
            Step::Iolog => self.take_iolog(s),
            Step::Logs => self.take_log_options(s),
            Step::Fault => self.take_fault(s),
            Step::Policy => self.check_mode(s),
        }
    }

    /// The engine's options: `sim_latency` and `platform` need `ioengine=sim` (as given),
    /// `userspace_reap` needs libaio.
    fn take_engine(&mut self, s: &mut JobSpec) -> Result<()> {
        let latency = self.take_str("sim_latency")?;
        s.sim_latency_given = latency.is_some();
        let platform = self.take_str("platform")?;
        if let Some(p) = &platform {
            s.platform = Some(crate::platform::load(p)?);
        }
        let engine = self.given_str("ioengine");
        if platform.is_some() && engine.as_deref() != Some("sim") {
            return Err(usage(
                "--platform needs --ioengine=sim: it is the modelled machine the simulated device runs on".into(),
            ));
        }
        match (engine.as_deref(), latency) {
            (_, None) => {}
            (Some("sim"), Some(l)) => s.ioengine = IoEngine::Sim(l.parse()?),
            (None | Some("io_uring"), Some(_)) => {
                return Err(usage(
                    "--sim_latency needs --ioengine=sim: it is the simulated device's latency"
                        .into(),
                ))
            }
            (Some(e), Some(_)) => {
                return Err(usage(format!(
                "--sim_latency needs --ioengine=sim, not {e}: it is the simulated device's latency"
            )))
            }
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
        Ok(())
    }

    /// `buffered` and `rwmixwrite`, the inverses of `direct` and `rwmixread`: the later given
    /// of each pair wins, as fio.
    fn take_inverses(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(v) = self.take_bool("buffered")? {
            if !self.has_later("direct", "buffered") {
                s.direct = !v;
            }
        }
        if let Some(v) = self.take_u32("rwmixwrite")? {
            if !self.has_later("rwmixread", "rwmixwrite") {
                s.rwmixread = 100 - v;
            }
        }
        Ok(())
    }

    /// `io_size`, where fio 3.33's passes would mean another byte count than pollwise's.
    fn take_io_size(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(v) = self.take_size("io_size")? {
            s.io_size = v;
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
        Ok(())
    }

    /// `fill_device`: fio fills with a sequential write from the file's start, one writer, and
    /// stops at ENOSPC (backend.c io_queue_event, do_io): other shapes would mean another thing.
    fn take_fill_device(&mut self, s: &mut JobSpec) -> Result<()> {
        if self.take_bool("fill_device")? != Some(true) {
            return Ok(());
        }
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
        Ok(())
    }

    /// fio's rates: `rate_iops`, `rate` (per direction), `rate_process`, and the minimum
    /// rates.
    fn take_rates(&mut self, s: &mut JobSpec) -> Result<()> {
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
        self.take_min_rate(s, iops, bytes)
    }

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
        let cycle_ms = self.take_or_default("ratecycle")?;
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

    /// `experimental_verify`: a write-only job without a backlog follows fio's experimental
    /// verify over loops (`passes::experimental_verify_bytes`); other shapes are refused.
    fn take_experimental_verify(&mut self, s: &mut JobSpec) -> Result<()> {
        let experimental = self.take_bool("experimental_verify")? == Some(true);
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
        Ok(())
    }

    /// `exitall`, `exitall_on_error` and `exit_what`: what this job's end stops.
    fn take_exit(&mut self, s: &mut JobSpec) -> Result<()> {
        let exitall: bool = self.take_or_default("exitall")?;
        let on_error: bool = self.take_or_default("exitall_on_error")?;
        let what: String = self.take_or_default("exit_what")?;
        if exitall || on_error {
            s.extra.exit = Some(crate::extras::ExitAll {
                on_end: exitall,
                all: what == "all",
            });
        }
        Ok(())
    }

    /// fio's steady state: `steadystate`, its duration and its ramp.
    fn take_steady(&mut self, s: &mut JobSpec) -> Result<()> {
        let ss = self.take_str("steadystate")?;
        let ss_dur = self.take_duration("steadystate_duration")?;
        let ss_ramp = self.take_duration("steadystate_ramp_time")?;
        if ss.is_some() || ss_dur.is_some() || ss_ramp.is_some() {
            s.extra.steady = crate::steady::SteadySpec::parse(
                &ss.unwrap_or_else(|| default_of("steadystate")),
                ss_dur.unwrap_or_default(),
                ss_ramp.unwrap_or_default(),
            )
            .map_err(|e| usage(format!("{e}{}", self.at("steadystate"))))?;
        }
        Ok(())
    }

    /// `threads`: `run` and `compare` refuse it on the command line (a job runs --numjobs
    /// threads) and take it from a job file as fio does, its tiobench profile's option, which
    /// fio accepts in any job and uses in none; hybrid-contention takes it itself.
    fn take_threads(&mut self) -> Result<()> {
        if !matches!(self.command().name, "run" | "compare") {
            return Ok(());
        }
        if self.on_command_line("threads") {
            return Err(usage(format!(
                "--threads is not an option of `{}`: it belongs to `pollwise scenario hybrid-contention`; a job runs --numjobs threads",
                self.command().invocation()
            )));
        }
        self.take_list_u64("threads")?;
        Ok(())
    }

    /// fio's flow control: `flow` (a weight), `flow_id`, `flow_sleep`.
    fn take_flow(&mut self, s: &mut JobSpec) -> Result<()> {
        let weight: u32 = self.take_or_default("flow")?;
        let id = self.take_or_default("flow_id")?;
        let sleep = self.take_or_default("flow_sleep")?;
        if weight > 0 {
            s.extra.flow = Some(crate::extras::FlowShare {
                id,
                weight,
                sleep,
                flow: None,
            });
        }
        Ok(())
    }

    /// `fault`: the platform model's device injects nothing, so a fault asked there would give
    /// a clean run that looks like one with faults.
    fn take_fault(&mut self, s: &mut JobSpec) -> Result<()> {
        if let Some(v) = self.take_str("fault")? {
            let f = parse_fault(&v)?;
            s.fault = (!f.is_empty()).then_some(f);
        }
        if s.fault.is_some() && s.platform.is_some() {
            return Err(usage(format!(
                "--fault does not apply under --platform: the platform model's device injects no faults; drop --fault or --platform{}",
                self.at("fault")
            )));
        }
        Ok(())
    }

    /// `mode`, given, must be a wait of the engine's; `write_auto_log` logs `auto`'s choices.
    fn check_mode(&self, s: &JobSpec) -> Result<()> {
        let mode = s.policy.mode;
        if self.has("mode") && !s.ioengine.waits() && mode != Mode::Interrupt {
            return Err(usage(format!(
                "--mode={} does not apply to --ioengine={}: it does each I/O inside its system call, so there is no wait to choose; for the kernel's polled read use --ioengine=pvsync2 --hipri, to compare wait modes use io_uring or libaio",
                mode.name(),
                s.ioengine.name()
            )));
        }
        if s.logs.auto.is_some() && mode != Mode::Auto {
            return Err(Error::Usage(format!(
                "--write_auto_log logs auto's choices, and this job runs --mode={}: add --mode=auto or drop --write_auto_log",
                mode.name()
            )));
        }
        Ok(())
    }

    /// fio's `latency_target` and its window, percentile and `latency_run` (`run` only: for
    /// `advise`, `latency_target` is the recommendation's).
    fn take_latency_target(&mut self, s: &mut JobSpec) -> Result<()> {
        if self.command().name != "run" {
            return Ok(());
        }
        let target = self.take_str("latency_target")?;
        let window = self.take_or_default("latency_window")?;
        let percentile = self.take_or_default("latency_percentile")?;
        let run = self.take_or_default("latency_run")?;
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
            window,
            percentile,
            run,
        });
        Ok(())
    }

    /// fio's `zonemode=strided` and its sizes.
    fn take_zones(&mut self, s: &mut JobSpec) -> Result<()> {
        let mode = self.take_str("zonemode")?;
        let range = self.take_size("zonerange")?;
        let size = self.take_size("zonesize")?;
        let skip = self.take_or_default("zoneskip")?;
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

    /// fio's buffer options that decide together what writes write: a pattern, zeros (which
    /// win over a pattern), compressible random bytes, and duplicates.
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
        let pct: u32 = self.take_or_default("dedupe_percentage")?;
        let mode: String = self.take_or_default("dedupe_mode")?;
        let ws: u32 = self.take_or_default("dedupe_working_set_percentage")?;
        let global: bool = self.take_or_default("dedupe_global")?;
        if pct > 0 {
            let working = mode == "working_set";
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

    /// fio's `bsrange`, `bssplit` and `blockalign`: sizes that vary by request; and `bs`'s
    /// READ,WRITE sizes, which only `run` and `compare` take.
    fn take_block_sizes(&mut self, s: &mut JobSpec) -> Result<()> {
        if s.extra.write_bs.is_some() && !matches!(self.command().name, "run" | "compare") {
            return Err(usage(format!(
                "--bs with READ,WRITE sizes is not used by `{}`: give one size",
                self.command().invocation()
            )));
        }
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
        self.check_mixed_sizes(s)
    }

    /// Sizes that differ between reads and writes on a mixed random job with fio's random map:
    /// fio 3.33 ends such a job early by a rule pollwise does not follow.
    fn check_mixed_sizes(&self, s: &JobSpec) -> Result<()> {
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
            no_stall: self.take_or_default("replay_no_stall")?,
            redirect: self.take_str("replay_redirect")?.map(Into::into),
            time_scale: self.take_or_default("replay_time_scale")?,
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

    /// fio's files, and `fill_device` checked against them: one file written by one thread.
    fn take_files_and_fill(&mut self, s: &mut JobSpec) -> Result<()> {
        self.take_files(s)?;
        if s.extra.fill_device && (s.extra.files.len() > 1 || !s.extra.clone_files.is_empty()) {
            return Err(usage(format!(
                "--fill_device is followed for one file written by one job thread; this job has several files: give a size instead{}",
                self.at("fill_device")
            )));
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
        let format: String = format.unwrap_or_else(|| default_of("filename_format"));
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
        let nrfiles = nrfiles.unwrap_or_else(|| default_of("nrfiles")).max(1);
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

    /// Takes fio's log options that name files (`write_lat_log`, `write_bw_log`,
    /// `write_iops_log`, `write_auto_log`) and `per_job_logs`, checked against the threads;
    /// only `run` takes them (the table says so).
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec(cmd: &str, s: &str) -> Result<JobSpec> {
        let a: Vec<String> = s.split_whitespace().map(String::from).collect();
        crate::options::test_job(cmd, &a)
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

    #[test]
    fn a_fraction_without_a_statistic_is_kept_and_auto_adapts_again() {
        let p = |a: &str| spec("run", a).unwrap().policy;
        assert!(p("").hybrid_adaptive);
        assert!(!p("--hybrid_fraction=0.3").hybrid_adaptive);
        assert!(p("--hybrid_stat=auto --hybrid_fraction=0.3").hybrid_adaptive);
        let q = p("--hybrid_stat=p10");
        assert!(!q.hybrid_adaptive);
        assert_eq!(q.hybrid_stat, pollwise::predict::Statistic::LowQuantile);
    }
}
