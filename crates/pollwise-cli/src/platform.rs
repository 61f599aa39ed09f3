//! `--platform=NAME|FILE.json`: the platform a `--ioengine=sim` job is modelled on.
//!
//! Presets ship with the command (`presets/*.json`): `here` (this project's machine, made by
//! `pollwise calibrate`), `nvme-baremetal` and `optane` (public figures; each file says where
//! every number comes from). A file is either a preset's form or `pollwise calibrate`'s JSON
//! (its `platform` object). Every field is required but `device_iops` (0, no limit, when
//! missing) and `device_latency_by_depth` (`[[depth, p50_ns], ...]`, the device's median
//! latency by the requests on it, depths rising from 1; none when missing: the latency does
//! not depend on the depth) and `iopoll_ns` (one reaping enter on an IOPOLL ring; 0 when
//! missing: kernel polled I/O is not modelled), and nothing else is allowed but `name`, `sources` and `note`: a
//! bad or missing field exits 2 naming it.

use std::path::Path;

use pollwise::queue::sim::LatencyModel;
use pollwise_bench::platform::Platform;

use serde_json::{json, Map, Value};

use crate::{Error, Result};

/// The presets, by name.
pub const PRESETS: &[(&str, &str)] = &[
    ("here", include_str!("../presets/here.json")),
    (
        "nvme-baremetal",
        include_str!("../presets/nvme-baremetal.json"),
    ),
    ("optane", include_str!("../presets/optane.json")),
];

/// The number fields of a platform file, in order.
pub const FIELDS: &[&str] = &[
    "cores",
    "time_slice_ns",
    "context_switch_ns",
    "syscall_ns",
    "submit_ns",
    "poll_ns",
    "engine_ns",
    "wait_cpu_ns",
    "wake_latency_ns",
    "sleep_cpu_ns",
    "timer_late_ns",
];

fn bad(origin: &str, field: &str, why: String) -> Error {
    Error::Usage(format!("--platform={origin}: field '{field}' {why}"))
}

/// The largest platform file read: a platform is a few dozen fields.
pub const MAX_PLATFORM_FILE: u64 = 1 << 20;

/// The platform `arg` names: a preset, or a JSON file.
pub fn load(arg: &str) -> Result<Platform> {
    if let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == arg) {
        return parse(arg, text);
    }
    let path = Path::new(arg);
    if !arg.ends_with(".json") && !path.exists() {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        return Err(Error::Usage(format!(
            "--platform={arg} is neither a preset ({}) nor a file: name a preset or a .json file (`pollwise calibrate --output-format=json` makes one)",
            names.join(", ")
        )));
    }
    let text = crate::infile::read_text("the --platform file", path, MAX_PLATFORM_FILE)
        .map_err(|e| {
            Error::Usage(format!(
                "--platform={arg} {e}; name a preset or a platform .json file (`pollwise calibrate --output-format=json` makes one)"
            ))
        })?
        .ok_or_else(|| {
            Error::Usage(format!("--platform={arg}: not JSON text: name a platform .json file"))
        })?;
    parse(arg, &text)
}

/// Parses a platform file's text; `origin` names it in messages.
pub fn parse(origin: &str, text: &str) -> Result<Platform> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::Usage(format!("--platform={origin}: not JSON: {e}")))?;
    let v = match v.get("platform") {
        Some(p) if v.get("calibration").is_some() => p.clone(),
        _ => v,
    };
    let Some(o) = v.as_object() else {
        return Err(Error::Usage(format!(
            "--platform={origin}: not a JSON object of platform fields"
        )));
    };
    for k in o.keys() {
        if !FIELDS.contains(&k.as_str())
            && !matches!(
                k.as_str(),
                "name" | "device" | "device_iops" | DEPTH_FIELD | IOPOLL_FIELD | "sources" | "note"
            )
        {
            return Err(bad(
                origin,
                k,
                format!(
                    "is not a platform field: use {}, device, device_iops, {DEPTH_FIELD}, {IOPOLL_FIELD}, name, sources, note",
                    FIELDS.join(", ")
                ),
            ));
        }
    }
    let num = |f: &str| -> Result<u64> {
        match o.get(f) {
            None => Err(bad(origin, f, "is missing".into())),
            Some(x) => x.as_u64().ok_or_else(|| {
                bad(
                    origin,
                    f,
                    format!(
                        "is {x}: it must be a whole number of nanoseconds (or cores), at least 0"
                    ),
                )
            }),
        }
    };
    let device = match o.get("device") {
        None => return Err(bad(origin, "device", "is missing".into())),
        Some(Value::String(s)) => s.parse::<LatencyModel>().map_err(|e| {
            bad(
                origin,
                "device",
                format!("'{s}' is not a latency model ({})", crate::Error::from(e)),
            )
        })?,
        Some(x) => {
            return Err(bad(
                origin,
                "device",
                format!("is {x}: write a latency model as a string, e.g. \"lognormal:10us,0.3\""),
            ))
        }
    };
    let cores = num("cores")?;
    let p = Platform {
        name: o
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(origin)
            .to_string(),
        cores: u32::try_from(cores).unwrap_or(u32::MAX),
        time_slice_ns: num("time_slice_ns")?,
        context_switch_ns: num("context_switch_ns")?,
        syscall_ns: num("syscall_ns")?,
        submit_ns: num("submit_ns")?,
        poll_ns: num("poll_ns")?,
        engine_ns: num("engine_ns")?,
        wait_cpu_ns: num("wait_cpu_ns")?,
        wake_latency_ns: num("wake_latency_ns")?,
        sleep_cpu_ns: num("sleep_cpu_ns")?,
        timer_late_ns: num("timer_late_ns")?,
        device,
        device_iops: match o.get("device_iops") {
            None => 0,
            Some(_) => num("device_iops")?,
        },
        device_latency_by_depth: match o.get(DEPTH_FIELD) {
            None => Vec::new(),
            Some(v) => depth_curve(origin, v)?,
        },
        iopoll_ns: match o.get(IOPOLL_FIELD) {
            None => 0,
            Some(_) => num(IOPOLL_FIELD)?,
        },
    };
    p.check().map_err(|e| match e {
        pollwise::Error::Config { field, reason } => bad(origin, field, reason.to_string()),
        other => Error::from(other),
    })?;
    Ok(p)
}

/// The platform file's field for the device's latency by depth.
pub const DEPTH_FIELD: &str = "device_latency_by_depth";

/// The platform file's field for one reaping enter on an IOPOLL ring (kernel polled I/O's
/// cost; 0 or missing: the device has no poll queues, or it was not measured).
pub const IOPOLL_FIELD: &str = "iopoll_ns";

/// `[[depth, p50_ns], ...]`: pairs of whole numbers (the library checks their order).
fn depth_curve(origin: &str, v: &Value) -> Result<Vec<(u32, u64)>> {
    let shape = || {
        bad(
            origin,
            DEPTH_FIELD,
            format!("is {v}: write [[depth, p50_ns], ...], whole numbers, e.g. [[1, 21000], [2, 33000]]"),
        )
    };
    let pairs = v.as_array().ok_or_else(shape)?;
    pairs
        .iter()
        .map(|pair| match pair.as_array().map(Vec::as_slice) {
            Some([d, p]) => {
                let d = d.as_u64().and_then(|d| u32::try_from(d).ok());
                match (d, p.as_u64()) {
                    (Some(d), Some(p)) => Ok((d, p)),
                    _ => Err(shape()),
                }
            }
            _ => Err(shape()),
        })
        .collect()
}

/// A latency model in `--sim_latency`'s grammar.
pub fn model_text(m: &LatencyModel) -> String {
    match *m {
        LatencyModel::Fixed(n) => format!("fixed:{n}ns"),
        LatencyModel::Uniform(a, b) => format!("uniform:{a}ns,{b}ns"),
        LatencyModel::Normal { mean_ns, sd_ns } => format!("normal:{mean_ns}ns,{sd_ns}ns"),
        LatencyModel::LogNormal { mean_ns, sigma } => format!("lognormal:{mean_ns}ns,{sigma}"),
        LatencyModel::Bimodal {
            fast_ns,
            slow_ns,
            p_slow,
        } => format!("bimodal:{fast_ns}ns,{slow_ns}ns,{p_slow}"),
    }
}

/// Where a calibrated platform's numbers come from.
pub fn calibrated_sources() -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in [
        ("cores", "sched_getaffinity"),
        ("time_slice_ns", "Linux's base slice 0.75 ms x (1 + log2(min(cores, 8))), kernel/sched/fair.c"),
        ("context_switch_ns", "socket ping-pong between two threads: half a round trip minus two system calls"),
        ("syscall_ns", "getppid, median"),
        ("submit_ns", "io_uring_enter submitting one 4 KiB read, median"),
        ("poll_ns", "one check of an idle plain ring's completion queue, median"),
        ("engine_ns", "the engine's CPU per request over the simulated device in virtual time, median"),
        ("wait_cpu_ns", "thread CPU of a blocking wait on an interrupt ring, less the submit and the reap it includes"),
        ("wake_latency_ns", "interrupt-ring latency less submit, polled clat and one poll (medians)"),
        ("sleep_cpu_ns", "thread CPU of a 10 us nanosleep, timer slack 1 ns, median"),
        ("timer_late_ns", "lateness of a 10 us nanosleep, timer slack 1 ns, median"),
        ("device", "log-normal with the polled QD1 clat's median and 90th percentile (sigma capped at 0.5)"),
        ("device_iops", "4 KiB random reads per second at queue depth 32 on an interrupt ring (the engine): the fastest of 3 windows of 150 ms"),
        (IOPOLL_FIELD, "one non-blocking io_uring_enter(GETEVENTS) on an IOPOLL ring with a 4 KiB read in flight that finds nothing, median (0: the device has no poll queues)"),
        (DEPTH_FIELD, "median polled clat of 4 KiB random reads kept at depths 1, 2, 4 and 8 on a plain ring (one thread, each completed read re-issued at once), counting only completions seen by a poll after an empty one (timed to a poll, not delayed by a submit); running maximum over the depths"),
    ] {
        m.insert(k.into(), v.into());
    }
    m
}

/// The platform as a file `--platform` takes, with `sources` saying where each number is from.
pub fn to_json(p: &Platform, sources: &Map<String, Value>) -> Value {
    json!({
        "name": p.name,
        "cores": p.cores,
        "time_slice_ns": p.time_slice_ns,
        "context_switch_ns": p.context_switch_ns,
        "syscall_ns": p.syscall_ns,
        "submit_ns": p.submit_ns,
        "poll_ns": p.poll_ns,
        "engine_ns": p.engine_ns,
        "wait_cpu_ns": p.wait_cpu_ns,
        "wake_latency_ns": p.wake_latency_ns,
        "sleep_cpu_ns": p.sleep_cpu_ns,
        "timer_late_ns": p.timer_late_ns,
        "device": model_text(&p.device),
        "device_iops": p.device_iops,
        DEPTH_FIELD: p.device_latency_by_depth.iter().map(|&(d, ns)| json!([d, ns])).collect::<Vec<_>>(),
        IOPOLL_FIELD: p.iopoll_ns,
        "sources": sources,
    })
}

/// The platform as lines of text.
pub fn describe(p: &Platform) -> String {
    let v = to_json(p, &Map::new());
    let mut s = String::new();
    for f in FIELDS
        .iter()
        .chain(["device", "device_iops", DEPTH_FIELD].iter())
    {
        s += &format!("  {f:<20} {}\n", v[*f]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(text: &str) -> String {
        match parse("t.json", text) {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_depth_curve_round_trips_and_its_absence_is_none() {
        let mut p = load("nvme-baremetal").unwrap();
        assert!(p.device_latency_by_depth.is_empty());
        p.device_latency_by_depth = vec![(1, 10_000), (2, 12_500), (8, 30_000)];
        let v = to_json(&p, &Map::new());
        assert_eq!(
            v[DEPTH_FIELD],
            json!([[1, 10_000], [2, 12_500], [8, 30_000]])
        );
        assert_eq!(parse("t.json", &v.to_string()).unwrap(), p);
        assert!(describe(&p).contains("[[1,10000],[2,12500],[8,30000]]"));
    }

    #[test]
    fn every_preset_loads_and_round_trips() {
        for (name, _) in PRESETS {
            let p = load(name).unwrap();
            let again = parse(name, &to_json(&p, &Map::new()).to_string()).unwrap();
            assert_eq!(p, again, "{name}");
        }
    }

    #[test]
    fn every_preset_number_states_its_origin() {
        for (name, text) in PRESETS {
            let v: Value = serde_json::from_str(text).unwrap();
            for f in FIELDS.iter().chain(["device"].iter()) {
                let s = v["sources"][*f].as_str().unwrap_or("");
                assert!(!s.is_empty(), "{name}: {f} has no source");
            }
        }
    }

    #[test]
    fn bad_fields_are_named() {
        let good = to_json(&load("nvme-baremetal").unwrap(), &Map::new());
        let with = |k: &str, v: Value| {
            let mut g = good.clone();
            g[k] = v;
            g.to_string()
        };
        let without = |k: &str| {
            let mut g = good.clone();
            g.as_object_mut().unwrap().remove(k);
            g.to_string()
        };
        assert!(field_of(&with("cores", json!(0))).contains("field 'cores'"));
        assert!(field_of(&with("poll_ns", json!(-3))).contains("field 'poll_ns'"));
        assert!(field_of(&with("submit_ns", json!("1us"))).contains("field 'submit_ns'"));
        assert!(field_of(&with("device", json!("gauss:1us"))).contains("field 'device'"));
        assert!(field_of(&with("wake_ns", json!(1))).contains("field 'wake_ns'"));
        assert!(field_of(&without("timer_late_ns")).contains("field 'timer_late_ns' is missing"));
        assert!(field_of("[1]").contains("not a JSON object"));
        for curve in [
            json!(5),
            json!([[1]]),
            json!([[1, -3]]),
            json!([[1, "20us"]]),
            json!([[0, 1000]]),
            json!([[1, 2000], [2, 1000]]),
            json!([[1, 1000], [1, 2000]]),
            json!([[5_000_000_000u64, 1000]]),
        ] {
            let m = field_of(&with(DEPTH_FIELD, curve.clone()));
            assert!(
                m.contains("field 'device_latency_by_depth'"),
                "{curve}: {m}"
            );
        }
        assert!(matches!(load("no-such-preset"), Err(Error::Usage(_))));
    }
}
