//! Command-line options, written as fio writes them.
//!
//! fio users type `--bs=4k --direct=1 --hipri`: options with underscores, values after `=` or as
//! the next word, sizes with k/M/G suffixes, times with us/ms/s suffixes, and a bare boolean flag
//! meaning 1. Those habits do not fit a declarative parser well (a bare `--hipri` followed by a
//! value-less option, `--runtime=10` meaning seconds), so options are read in two steps: [`parse`]
//! splits the words into (name, value) pairs, and each command *takes* the options it knows with
//! typed getters; [`Opts::finish`] then names any option nobody took. Dashes and underscores in
//! names are the same (`--output-format` is `--output_format`).

use std::str::FromStr;
use std::time::Duration;

use crate::job::{IoEngine, JobSpec};
use crate::{Error, Result};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::predict::Statistic;
use pollwise::queue::sim::LatencyModel;

/// The options of one command, not yet taken.
#[derive(Debug, Clone)]
pub struct Opts {
    cmd: String,
    items: Vec<(String, Option<String>)>,
}

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// Splits `args` (the words after the command) into options for `cmd`.
pub fn parse(cmd: &str, args: &[String]) -> Result<Opts> {
    let mut items: Vec<(String, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let Some(body) = a.strip_prefix("--") else {
            return Err(usage(format!(
                "unexpected argument '{a}' for `pollwise {cmd}`: options are written --name=value (see `pollwise help`)"
            )));
        };
        if body.is_empty() {
            return Err(usage(format!(
                "empty option '--' for `pollwise {cmd}`: options are written --name=value"
            )));
        }
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => match args.get(i + 1) {
                Some(next) if !next.starts_with("--") => {
                    i += 1;
                    (body, Some(next.clone()))
                }
                _ => (body, None),
            },
        };
        let name = name.replace('-', "_");
        // As in fio, a later value overrides an earlier one.
        items.retain(|(n, _)| *n != name);
        items.push((name, value));
        i += 1;
    }
    Ok(Opts {
        cmd: cmd.to_string(),
        items,
    })
}

impl Opts {
    /// Whether `name` was given (without taking it).
    pub fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(n, _)| n == name)
    }

    fn take(&mut self, name: &str) -> Option<Option<String>> {
        let i = self.items.iter().position(|(n, _)| n == name)?;
        Some(self.items.remove(i).1)
    }

    fn take_value(&mut self, name: &str) -> Result<Option<String>> {
        match self.take(name) {
            None => Ok(None),
            Some(Some(v)) => Ok(Some(v)),
            Some(None) => Err(usage(format!(
                "--{name} needs a value: write --{name}=VALUE"
            ))),
        }
    }

    /// A string option.
    pub fn take_str(&mut self, name: &str) -> Result<Option<String>> {
        self.take_value(name)
    }

    /// A whole number.
    pub fn take_u64(&mut self, name: &str) -> Result<Option<u64>> {
        self.take_value(name)?
            .map(|v| {
                parse_u64(&v).ok_or_else(|| {
                    usage(format!(
                        "--{name}={v} is not a whole number: write e.g. --{name}=8"
                    ))
                })
            })
            .transpose()
    }

    /// A whole number that fits in u32.
    pub fn take_u32(&mut self, name: &str) -> Result<Option<u32>> {
        match self.take_u64(name)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| usage(format!("--{name}={v} is too large"))),
        }
    }

    /// A number.
    pub fn take_f64(&mut self, name: &str) -> Result<Option<f64>> {
        self.take_value(name)?
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| {
                        usage(format!(
                            "--{name}={v} is not a number: write e.g. --{name}=0.5"
                        ))
                    })
            })
            .transpose()
    }

    /// A size in bytes: `4096`, `4k`, `256M`, `1G` (k = 1024, as fio's default kb_base).
    pub fn take_size(&mut self, name: &str) -> Result<Option<u64>> {
        self.take_value(name)?
            .map(|v| {
                parse_size(&v).ok_or_else(|| {
                    usage(format!(
                        "--{name}={v} is not a size: write bytes with an optional k/M/G suffix, e.g. --{name}=4k"
                    ))
                })
            })
            .transpose()
    }

    /// A time: a plain number is seconds, as in fio; suffixes ns, us, ms, s, m, h.
    pub fn take_duration(&mut self, name: &str) -> Result<Option<Duration>> {
        self.take_duration_unit(name, 1_000_000_000)
    }

    /// A time whose plain numbers are in units of `unit_ns` (fio's `thinktime` is in µs).
    pub fn take_duration_unit(&mut self, name: &str, unit_ns: u64) -> Result<Option<Duration>> {
        self.take_value(name)?
            .map(|v| {
                parse_duration(&v, unit_ns).map_err(|why| {
                    usage(format!(
                        "--{name}={v} is not a time ({why}): write e.g. --{name}=10s, 500ms or 40us"
                    ))
                })
            })
            .transpose()
    }

    /// A boolean: a bare `--name` is true; values 1/0, true/false, yes/no, on/off.
    pub fn take_bool(&mut self, name: &str) -> Result<Option<bool>> {
        match self.take(name) {
            None => Ok(None),
            Some(None) => Ok(Some(true)),
            Some(Some(v)) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(Some(true)),
                "0" | "false" | "no" | "off" => Ok(Some(false)),
                _ => Err(usage(format!(
                    "--{name}={v} is not a boolean: write --{name}=1 or --{name}=0"
                ))),
            },
        }
    }

    /// A comma-separated list of whole numbers.
    #[allow(dead_code)] // for scenarios
    pub fn take_list_u64(&mut self, name: &str) -> Result<Option<Vec<u64>>> {
        self.take_value(name)?
            .map(|v| {
                v.split(',')
                    .map(|x| {
                        parse_u64(x).ok_or_else(|| {
                            usage(format!(
                                "--{name}={v}: '{x}' is not a whole number: write e.g. --{name}=2,4,8"
                            ))
                        })
                    })
                    .collect()
            })
            .transpose()
    }

    /// A comma-separated list of words.
    pub fn take_str_list(&mut self, name: &str) -> Result<Option<Vec<String>>> {
        Ok(self.take_value(name)?.map(|v| {
            v.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        }))
    }

    /// `--output-format normal|json`: true for JSON.
    pub fn take_json(&mut self) -> Result<bool> {
        match self.take_str("output_format")?.as_deref() {
            None | Some("normal") => Ok(false),
            Some("json") => Ok(true),
            Some(v) => Err(usage(format!(
                "--output-format={v} is not a format: use normal or json"
            ))),
        }
    }

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
            s.filename = v.into();
        }
        let latency = self.take_str("sim_latency")?;
        match (self.take_str("ioengine")?.as_deref(), latency) {
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
            (Some(e), _) => {
                return Err(usage(format!(
                    "--ioengine={e} is not supported: use --ioengine=io_uring or --ioengine=sim"
                )))
            }
        }
        if let Some(v) = self.take_size("size")? {
            s.size = v;
        }
        if let Some(v) = self.take_size("io_size")? {
            s.io_size = v;
        }
        if let Some(v) = self.take_str("rw")? {
            s.rw = crate::job::parse_rw(&v)?;
        }
        if let Some(v) = self.take_str("readwrite")? {
            s.rw = crate::job::parse_rw(&v)?;
        }
        if let Some(v) = self.take_u32("rwmixread")? {
            s.rwmixread = v;
        }
        if let Some(v) = self.take_size("bs")? {
            s.bs = u32::try_from(v).map_err(|_| usage(format!("--bs={v} is too large")))?;
        }
        if let Some(v) = self.take_u32("iodepth")? {
            s.iodepth = v;
        }
        if let Some(v) = self.take_bool("direct")? {
            s.direct = v;
        }
        if let Some(v) = self.take_duration("runtime")? {
            s.runtime = v;
        }
        if let Some(v) = self.take_bool("time_based")? {
            s.time_based = v;
        }
        if let Some(v) = self.take_duration("ramp_time")? {
            s.ramp_time = v;
        }
        if let Some(v) = self.take_u32("numjobs")? {
            s.numjobs = v;
        }
        for name in ["iodepth_batch_submit", "iodepth_batch"] {
            if let Some(v) = self.take_u32(name)? {
                s.iodepth_batch_submit = v;
            }
        }
        if let Some(v) = self.take_u32("iodepth_batch_complete_min")? {
            s.iodepth_batch_complete_min = v;
        }
        if let Some(v) = self.take_bool("registerfiles")? {
            s.registerfiles = v;
        }
        if let Some(v) = self.take_bool("fixedbufs")? {
            s.fixedbufs = v;
        }
        if let Some(v) = self.take_bool("sqthread_poll")? {
            s.sqthread_poll = v;
        }
        if let Some(v) = self.take_u32("sqthread_poll_cpu")? {
            s.sqthread_poll_cpu = Some(v);
        }
        if let Some(v) = self.take_duration_unit("sqthread_idle", 1_000_000)? {
            s.sqthread_idle_ms = u32::try_from(v.as_millis().max(1)).map_err(|_| {
                usage(format!(
                    "--sqthread_idle={v:?} is too long: use at most {} ms",
                    u32::MAX
                ))
            })?;
        }
        if let Some(v) = self.take_bool("sqthread_share")? {
            s.sqthread_share = v;
        }
        if let Some(v) = self.take_bool("hipri")? {
            s.hipri = v;
        }
        if let Some(v) = self.take_bool("hybrid_iopoll")? {
            s.hybrid_iopoll = v;
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
        // fio's thinktime values are microseconds when no unit is given.
        if let Some(v) = self.take_duration_unit("thinktime", 1_000)? {
            s.thinktime = v;
        }
        if let Some(v) = self.take_duration_unit("thinktime_spin", 1_000)? {
            s.thinktime_spin = v;
        }
        if let Some(v) = self.take_u32("thinktime_blocks")? {
            s.thinktime_blocks = v;
        }
        if let Some(v) = self.take_u64("randseed")? {
            s.seed = v;
        }
        let mode = match self.take_str("mode")? {
            Some(m) => Mode::from_str(&m).map_err(usage)?,
            None => s.policy.mode,
        };
        s.policy = self.policy_config(mode)?;
        Ok(s)
    }

    /// Takes the policy knobs for `mode`.
    pub fn policy_config(&mut self, mode: Mode) -> Result<PolicyConfig> {
        let mut p = PolicyConfig::new(mode);
        if let Some(v) = self.take_f64("hybrid_fraction")? {
            p.hybrid_fraction = v;
        }
        if let Some(v) = self.take_str("hybrid_stat")? {
            p.hybrid_stat = v.parse::<Statistic>()?;
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
        if let Some(v) = self.take_f64("auto_latency_slack")? {
            if !(0.0..=10.0).contains(&v) {
                return Err(usage(format!(
                    "--auto_latency_slack={v} is outside [0, 10]: use e.g. 0.10 (a median up to 10% above polling's)"
                )));
            }
            p.auto_latency_slack = v;
        }
        Ok(p)
    }

    /// Fails naming the first option nobody took.
    pub fn finish(&self) -> Result<()> {
        match self.items.first() {
            None => Ok(()),
            Some((n, _)) => Err(usage(format!(
                "unknown option --{n} for `pollwise {}`: see `pollwise help`",
                self.cmd
            ))),
        }
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok()
}

/// Parses `4096`, `4k`, `4K`, `4KiB`, `256M`, `1g`: k = 1024.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return None;
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult);
    }
    let f = num.parse::<f64>().ok()?;
    let v = f * mult as f64;
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

/// Parses a time; plain numbers are in units of `unit_ns`.
pub fn parse_duration(s: &str, unit_ns: u64) -> std::result::Result<Duration, &'static str> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err("negative");
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| "no number")?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" => unit_ns as f64,
        "ns" => 1.0,
        "us" | "µs" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err("unknown unit"),
    };
    let ns = n * mult;
    if !ns.is_finite() || ns > 1e18 {
        return Err("too long");
    }
    Ok(Duration::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn fio_forms() {
        let mut o = parse(
            "run",
            &args("--bs=4k --iodepth 32 --hipri --direct=0 --output-format json --runtime=500ms"),
        )
        .unwrap();
        assert_eq!(o.take_size("bs").unwrap(), Some(4096));
        assert_eq!(o.take_u64("iodepth").unwrap(), Some(32));
        assert_eq!(o.take_bool("hipri").unwrap(), Some(true));
        assert_eq!(o.take_bool("direct").unwrap(), Some(false));
        assert!(o.take_json().unwrap());
        assert_eq!(
            o.take_duration("runtime").unwrap(),
            Some(Duration::from_millis(500))
        );
        o.finish().unwrap();
    }

    #[test]
    fn sizes_and_times() {
        assert_eq!(parse_size("256M"), Some(256 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("4KiB"), Some(4096));
        assert_eq!(parse_size("4x"), None);
        assert_eq!(parse_size("k"), None);
        assert_eq!(
            parse_duration("10", 1_000_000_000),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(parse_duration("40us", 1), Ok(Duration::from_micros(40)));
        assert_eq!(parse_duration("-1s", 1), Err("negative"));
        assert!(parse_duration("5parsecs", 1).is_err());
    }

    #[test]
    fn unknown_and_bad_values_are_usage_errors() {
        let o = parse("run", &args("--bogus=1")).unwrap();
        let e = o.finish().unwrap_err();
        assert!(e.to_string().contains("unknown option --bogus"));
        assert_eq!(e.exit_code(), 2);
        assert!(parse("run", &args("bs=4k")).is_err());
        let mut o = parse("run", &args("--mode=spin")).unwrap();
        let e = o.job_spec().unwrap_err();
        assert!(e.to_string().contains("unknown mode 'spin'"), "{e}");
        let mut o = parse("run", &args("--iodepth=deep")).unwrap();
        assert!(o.job_spec().is_err());
    }
}
