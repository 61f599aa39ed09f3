//! `pollwise calibrate`'s command line and its report: the options that say what to time, the
//! table, and the JSON whose `platform` is a file `--platform` takes.

use std::path::PathBuf;

use super::{calibrate_for, Calibration, Pattern};
use crate::{Error, Result};
use pollwise_bench::engine::Rw;

/// The calibration as JSON: every figure, and the platform (a file `--platform` takes).
pub fn to_json(c: &Calibration) -> serde_json::Value {
    let mut figs = serde_json::Map::new();
    for (name, f) in &c.figures {
        figs.insert(
            (*name).to_string(),
            serde_json::json!({ "p50_ns": f.p50, "p90_ns": f.p90, "samples": f.n }),
        );
    }
    serde_json::json!({
        "calibration": {
            "target": c.target.display().to_string(),
            "bs": c.pattern.bs,
            "rw": c.pattern.rw.name(),
            "rwmixread": 100 - c.pattern.write_pct(),
            "direct": c.direct,
            "cores": c.cores,
            "figures": figs,
            "poll_queues": c.poll_queues.as_ref().map(|p| serde_json::json!({
                "device": p.device,
                "io_poll": p.io_poll,
                "nvme_poll_queues": p.nvme_poll_queues,
            })),
        },
        "platform": crate::platform::to_json(&c.platform, &crate::platform::calibrated_sources()),
    })
}

/// The calibration as a table.
pub fn to_text(c: &Calibration) -> String {
    let mut s = format!(
        "calibration of {} with {} ({}), {} cores\n{:<28} {:>10} {:>10} {:>8}\n",
        c.target.display(),
        c.pattern.words(),
        if c.direct {
            "O_DIRECT"
        } else {
            "buffered: O_DIRECT refused"
        },
        c.cores,
        "figure",
        "p50 ns",
        "p90 ns",
        "samples"
    );
    for (name, f) in &c.figures {
        s += &format!("{name:<28} {:>10} {:>10} {:>8}\n", f.p50, f.p90, f.n);
    }
    if let Some(p) = &c.poll_queues {
        let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        s += &format!(
            "poll queues: {} io_poll={}{}{}\n",
            p.device,
            n(p.io_poll),
            p.nvme_poll_queues
                .map(|q| format!(" nvme.poll_queues={q}"))
                .unwrap_or_default(),
            if p.polled() {
                if c.direct {
                    " (kernel polled I/O measured: iopoll_*)"
                } else {
                    " (not measured: the target refused O_DIRECT)"
                }
            } else {
                " (no kernel polled I/O here)"
            }
        );
    }
    s += "\nplatform for the model (--ioengine=sim --platform=FILE.json with this command's JSON):\n";
    s += &crate::platform::describe(&c.platform);
    s
}

/// `--bs=SIZE` for calibrate: 512 bytes to 64 MiB, a multiple of 512 (O_DIRECT's sector).
fn parse_bs(v: &str) -> Result<u32> {
    pollwise::units::parse_size(v)
        .ok()
        .filter(|&b| (512..=64 << 20).contains(&b) && b % 512 == 0)
        .map(|b| b as u32)
        .ok_or_else(|| {
            Error::Usage(format!(
                "--bs={v}: calibrate times requests of 512 bytes to 64 MiB, a multiple of 512: e.g. --bs=4k or --bs=128k"
            ))
        })
}

/// `pollwise calibrate`'s command line: `--filename=F`, `--bs=SIZE`, `--rw=PATTERN`,
/// `--rwmixread=PCT` (the requests timed: 4 KiB random reads by default),
/// `--output-format=normal|json`, `--output=FILE`.
pub fn run(args: &[String]) -> Result<(String, serde_json::Value, bool, Option<PathBuf>)> {
    let mut filename = None;
    let mut json = false;
    let mut output = None;
    let mut pattern = Pattern::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                let v = it
                    .next()
                    .cloned()
                    .ok_or_else(|| Error::Usage(format!("{a} needs a value: write {a}=VALUE")))?;
                (a.clone(), v)
            }
        };
        match k.replace('-', "_").as_str() {
            "__filename" => filename = Some(PathBuf::from(v)),
            "__output_format" => match v.as_str() {
                "json" => json = true,
                "normal" => json = false,
                _ => {
                    return Err(Error::Usage(format!(
                        "--output-format={v}: calibrate prints normal or json"
                    )))
                }
            },
            "__output" => output = Some(PathBuf::from(v)),
            "__bs" => pattern.bs = parse_bs(&v)?,
            "__rw" => {
                pattern.rw = Rw::from_name(&v).filter(|r| !r.trims()).ok_or_else(|| {
                    Error::Usage(format!(
                        "--rw={v}: calibrate times randread, randwrite, randrw, read, write or rw"
                    ))
                })?
            }
            "__rwmixread" => {
                pattern.rwmixread = v.parse().ok().filter(|&p: &u32| p <= 100).ok_or_else(|| {
                    Error::Usage(format!(
                        "--rwmixread={v}: give the percentage of reads, 0 to 100"
                    ))
                })?
            }
            _ => {
                return Err(Error::Usage(format!(
                    "`pollwise calibrate` takes --filename=F, --bs=SIZE, --rw=PATTERN, --rwmixread=PCT, --output-format=normal|json and --output=FILE, not {k}"
                )))
            }
        }
    }
    let path = filename.ok_or_else(|| {
        Error::Usage(
            "`pollwise calibrate` needs --filename=F: an existing file or block device to read"
                .into(),
        )
    })?;
    if let Some(out) = &output {
        crate::outfile::check_outputs(
            &[("--output".into(), out.clone())],
            std::slice::from_ref(&path),
        )?;
    }
    if pattern.rw.writes() {
        // Timing writes overwrites the target's blocks: never a mounted filesystem's.
        crate::job::check_in_use(&crate::job::JobSpec {
            filename: path.clone(),
            rw: pattern.rw,
            ..crate::job::JobSpec::default()
        })?;
    }
    let c = calibrate_for(&path, pattern)?;
    Ok((to_text(&c), to_json(&c), json, output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_calibrate_can_time() {
        assert_eq!(parse_bs("128k").unwrap(), 128 << 10);
        for bad in ["0", "100", "1g", "fast"] {
            assert!(parse_bs(bad).is_err(), "{bad}");
        }
    }
}
