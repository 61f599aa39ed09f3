//! `--fault`'s value: which failures to inject, and how often.

use crate::{Error, Result};

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
pub(super) fn parse_fault(v: &str) -> Result<pollwise_bench::fault::FaultSpec> {
    let mut f = pollwise_bench::fault::FaultSpec::default();
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
