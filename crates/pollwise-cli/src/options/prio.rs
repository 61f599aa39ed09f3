//! fio's priorities: the job's own (`prio`, `prioclass`) and each request's (the cmdprio
//! options), checked against each other and the engine as fio 3.33 checks them.

use super::Opts;
use crate::spec::{IoEngine, JobSpec};
use crate::{Error, Result};

fn usage(s: String) -> Error {
    Error::Usage(s)
}

impl Opts {
    /// fio's `prio`, `prioclass` and its cmdprio options (engines/cmdprio.c in fio 3.33).
    pub(super) fn take_prio(&mut self, s: &mut JobSpec) -> Result<()> {
        use pollwise_bench::prio::{ioprio_value, CmdPrio, DirPrio, CLASS_RT};
        let level = self.take_u64("prio")?;
        let class = self.take_u64("prioclass")?;
        let perc = self.take_str("cmdprio_percentage")?;
        let classes = self.take_str("cmdprio_class")?;
        let levels = self.take_str("cmdprio")?;
        let bssplit = self.take_str("cmdprio_bssplit")?;
        let default = (level.is_some() || class.is_some())
            .then(|| ioprio_value(class.unwrap_or(0) as u8, level.unwrap_or(0) as u8));
        s.extra.ioprio = default;
        let cmd = perc.is_some() || bssplit.is_some();
        // Without a percentage or a split, fio takes cmdprio_class and cmdprio and uses them for
        // nothing: so does pollwise.
        if !cmd {
            if let Some(d) = default {
                if matches!(s.ioengine, IoEngine::IoUring | IoEngine::Libaio { .. }) {
                    s.extra.cmdprio = Some(CmdPrio {
                        default: d,
                        dirs: Default::default(),
                    });
                }
            }
            return Ok(());
        }
        let at = ["cmdprio_percentage", "cmdprio_bssplit"]
            .iter()
            .map(|n| self.at(n))
            .find(|a| !a.is_empty())
            .unwrap_or_default();
        if !matches!(s.ioengine, IoEngine::IoUring | IoEngine::Libaio { .. }) {
            return Err(usage(format!(
                "the cmdprio options are io_uring's and libaio's (fio's too): --ioengine={} has no per-request priority; use io_uring or libaio, or prio/prioclass for the job's own{at}",
                s.ioengine.name()
            )));
        }
        if perc.is_some() && bssplit.is_some() {
            return Err(usage(format!(
                "cmdprio_percentage and cmdprio_bssplit options are mutually exclusive (fio): give one{at}"
            )));
        }
        let pair = |name: &str, v: Option<&str>, lo: u64, hi: u64| -> Result<[Option<u64>; 2]> {
            let Some(v) = v else {
                return Ok([None, None]);
            };
            let one = |x: &str| -> Result<Option<u64>> {
                let x = x.trim();
                if x.is_empty() {
                    return Ok(None);
                }
                match x.parse::<u64>() {
                    Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                    _ => Err(usage(format!(
                        "--{name}={v}: each value is a whole number from {lo} to {hi} (READ,WRITE, as fio)"
                    ))),
                }
            };
            let parts: Vec<&str> = v.split(',').collect();
            match parts.as_slice() {
                [a] => {
                    let a = one(a)?;
                    Ok([a, a])
                }
                [a, b] | [a, b, _] => Ok([one(a)?, one(b)?]),
                _ => Err(usage(format!(
                    "--{name}={v}: give READ,WRITE at most, as fio"
                ))),
            }
        };
        let classes = pair("cmdprio_class", classes.as_deref(), 1, 3)?;
        let levels = pair("cmdprio", levels.as_deref(), 0, 7)?;
        // Without cmdprio_class, real-time (fio).
        let implicit = |d: usize| {
            ioprio_value(
                classes[d].unwrap_or(CLASS_RT as u64) as u8,
                levels[d].unwrap_or(0) as u8,
            )
        };
        let mut dirs: [DirPrio; 2] = Default::default();
        if let Some(p) = perc {
            let percs = pair("cmdprio_percentage", Some(&p), 0, 100)?;
            for (d, slot) in dirs.iter_mut().enumerate() {
                if let Some(n) = percs[d].filter(|&n| n > 0) {
                    *slot = DirPrio::Percent {
                        perc: n as u32,
                        ioprio: implicit(d),
                    };
                }
            }
        }
        if let Some(b) = bssplit {
            let per_dir: Vec<&str> = b.split(',').collect();
            if per_dir.len() > 3 {
                return Err(usage(format!(
                    "--cmdprio_bssplit={b}: give READS,WRITES at most, as fio"
                )));
            }
            for (d, slot) in dirs.iter_mut().enumerate() {
                // One list is every direction's, as fio.
                let Some(list) = per_dir
                    .get(d)
                    .or(per_dir.first())
                    .filter(|l| !l.trim().is_empty())
                else {
                    continue;
                };
                let mut sizes: Vec<(u32, Vec<(u32, u16)>)> = Vec::new();
                for e in list.split(':') {
                    let f: Vec<&str> = e.trim().split('/').collect();
                    let bad = || {
                        usage(format!(
                            "--cmdprio_bssplit={b}: '{e}' is not BS/PERC or BS/PERC/CLASS/LEVEL (fio's form, e.g. 64k/40:1m/60/1/0)"
                        ))
                    };
                    let (bs, pc) = match f.as_slice() {
                        [bs, pc] | [bs, pc, _, _] => (*bs, *pc),
                        _ => return Err(bad()),
                    };
                    let bs = pollwise::units::parse_size(bs)
                        .ok()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(bad)?;
                    let pc: u32 = pc.parse().ok().filter(|&n| n <= 100).ok_or_else(bad)?;
                    let prio = match f.as_slice() {
                        [_, _, c, l] => {
                            let c: u8 = c
                                .parse()
                                .ok()
                                .filter(|&n| (1..=3).contains(&n))
                                .ok_or_else(bad)?;
                            let l: u8 = l.parse().ok().filter(|&n| n <= 7).ok_or_else(bad)?;
                            ioprio_value(c, l)
                        }
                        _ => implicit(d),
                    };
                    match sizes.iter_mut().find(|(s, _)| *s == bs) {
                        Some((_, v)) => v.push((pc, prio)),
                        None => sizes.push((bs, vec![(pc, prio)])),
                    }
                }
                for (bs, v) in &sizes {
                    if v.iter().map(|x| x.0).sum::<u32>() > 100 {
                        return Err(usage(format!(
                            "fio: cmdprio_bssplit total percentage for bs: {bs} exceeds 100{at}"
                        )));
                    }
                }
                *slot = DirPrio::BsSplit(sizes);
            }
        }
        s.extra.cmdprio = Some(CmdPrio {
            default: default.unwrap_or(0),
            dirs,
        });
        Ok(())
    }
}
