//! fio's compound values, parsed for the steps and stores that take them: `rw`'s modifier,
//! per-direction lists, block-size ranges and splits, distributions, file names and log names.

use crate::extras::BlockSizes;
use crate::spec::JobSpec;
use crate::{Error, Result};

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// A log named after the job (a bare `--write_*_log`): the job's name is the log's path, as
/// in fio, but it may not climb out of its directory (`--name=../../x` must not put logs two
/// directories up).
pub(super) fn log_name_from_job(key: &str, job: &str) -> Result<String> {
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
pub(super) fn log_prefix(key: &str, v: &str) -> Result<String> {
    if v.split('/').any(|c| c == "..") {
        return Err(usage(format!(
            "--{key}={} climbs out of its directory ('..'): name the logs with a path without '..'",
            crate::error::shown(v)
        )));
    }
    Ok(v.to_string())
}

/// fio's `rate=READ,WRITE[,TRIM]` for `s`'s directions, as one cap on all its requests: the
/// rate of the direction it does, or the sum of equal rates for an even mix. Uneven ones are
/// refused (pollwise paces all a job's requests as one stream).
pub(super) fn rate_of_directions(s: &JobSpec, per_dir: &[Option<u64>]) -> Result<Option<u64>> {
    if let [one] = per_dir {
        return Ok(*one);
    }
    let reads = s.rw.reads();
    let writes = s.rw.writes();
    let r = per_dir.first().copied().flatten();
    let w = per_dir.get(1).copied().flatten();
    Ok(match (reads, writes) {
        (true, false) => r,
        (false, true) => w,
        _ => match (r, w) {
            (None, None) => None,
            (Some(a), Some(b)) if a == b && s.rwmixread == 50 => Some(a + b),
            _ => {
                return Err(usage(format!(
                    "--rate with a rate per direction ({}) on a mixed job is only implemented for equal rates and rwmixread=50: pollwise paces all of a job's requests as one stream; give one rate",
                    per_dir
                        .iter()
                        .map(|x| x.map_or(String::new(), |v| v.to_string()))
                        .collect::<Vec<_>>()
                        .join(",")
                )))
            }
        },
    })
}

/// fio's `rw` modifier (`rw=read:8k`, `rw=read:-8k`, `rw=randread:8`), as written in `v`.
pub(super) fn rw_modifier(s: &mut JobSpec, v: &str, m: &str) -> Result<()> {
    let bad = |why: &str| {
        usage(format!(
            "--rw={v}: {why}: write rw=read:8k (skip 8k after each request), rw=read:-8k (backwards) or rw=randread:8 (a new random offset every 8 requests)"
        ))
    };
    if s.rw.random() {
        let n: u64 = m
            .parse()
            .map_err(|_| bad("the modifier of a random pattern is a count"))?;
        s.extra.random_every = n;
        return Ok(());
    }
    let (neg, size) = match m.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, m.strip_prefix('+').unwrap_or(m)),
    };
    let n = pollwise::units::parse_size(size).map_err(|_| bad("the modifier is a size"))?;
    let n = i64::try_from(n).map_err(|_| bad("the modifier is too large"))?;
    s.extra.seq_add = if neg { -n } else { n };
    Ok(())
}

/// A per-direction list (`READ,WRITE[,TRIM]`) of `what`, each entry parsed by `one`; an empty
/// entry keeps the default, a single entry applies to every direction, and trims take the
/// writes' entry when none is given (as fio).
pub(super) fn parse_per_dir(
    v: &str,
    what: &str,
    one: fn(&str, &str) -> Result<BlockSizes>,
) -> Result<[Option<BlockSizes>; 3]> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let r = match parts.first() {
        Some(p) if !p.is_empty() => Some(one(p, what)?),
        _ => None,
    };
    let w = match parts.get(1) {
        None => r.clone(),
        Some(p) if !p.is_empty() => Some(one(p, what)?),
        Some(_) => None,
    };
    let t = match parts.get(2) {
        None => w.clone(),
        Some(p) if !p.is_empty() => Some(one(p, what)?),
        Some(_) => None,
    };
    Ok([r, w, t])
}

fn size_in(v: &str, what: &str, whole: &str) -> Result<u32> {
    let n = pollwise::units::parse_size(v).map_err(|_| {
        usage(format!(
            "--{what}={whole}: '{v}' is not a size: write e.g. --{what}={}",
            if what == "bssplit" {
                "4k/50:64k/50"
            } else {
                "4k-64k"
            }
        ))
    })?;
    u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
        usage(format!(
            "--{what}={whole}: '{v}' is out of range: use 1 to 4G"
        ))
    })
}

/// fio's `bsrange=MIN-MAX` (or `MIN:MAX`).
pub(super) fn parse_bsrange(v: &str, what: &str) -> Result<BlockSizes> {
    let (a, b) = v
        .split_once('-')
        .or_else(|| v.split_once(':'))
        .unwrap_or((v, v));
    let (min, max) = (size_in(a.trim(), what, v)?, size_in(b.trim(), what, v)?);
    Ok(BlockSizes::Range {
        min: min.min(max),
        max: min.max(max),
    })
}

/// fio's `bssplit=SIZE/PERCENT:...`: entries without a percentage share what the others leave.
pub(super) fn parse_bssplit(v: &str, what: &str) -> Result<BlockSizes> {
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for e in v.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        let (size, pct) = e.split_once('/').unwrap_or((e, ""));
        let pct = match pct.trim() {
            "" => None,
            p => Some(p.parse::<u32>().ok().filter(|p| *p <= 100).ok_or_else(|| {
                usage(format!(
                    "--{what}={v}: '{p}' is not a percentage: write SIZE/PERCENT, e.g. 4k/50"
                ))
            })?),
        };
        entries.push((size_in(size.trim(), what, v)?, pct));
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let open = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if entries.is_empty() || given > 100 || (open == 0 && given != 100) {
        return Err(usage(format!(
            "--{what}={v}: the percentages must add up to 100 (entries without one share the rest)"
        )));
    }
    let share = (100 - given).checked_div(open).unwrap_or(0);
    let mut split: Vec<(u32, u32)> = entries
        .into_iter()
        .map(|(b, p)| (b, p.unwrap_or(share)))
        .collect();
    // What an even share leaves over goes to the last open entry (fio's rounding).
    let total: u32 = split.iter().map(|e| e.1).sum();
    if let Some(last) = split.last_mut() {
        last.1 += 100 - total;
    }
    split.sort_by_key(|e| e.0);
    Ok(BlockSizes::Split(split))
}

/// fio's `random_distribution`: `None` for `random`.
pub(super) fn parse_distribution(v: &str) -> Result<Option<pollwise_bench::pattern::Distribution>> {
    use pollwise_bench::pattern::Distribution as D;
    let bad = |why: &str| {
        usage(format!(
            "--random_distribution={v}: {why}: write random, zipf:1.2, pareto:0.2, normal:10 or zoned:50/5:30/15:20/80"
        ))
    };
    let (kind, rest) = v.split_once(':').unwrap_or((v, ""));
    let num = |i: usize| -> Result<Option<f64>> {
        match rest
            .split(':')
            .nth(i)
            .map(str::trim)
            .filter(|x| !x.is_empty())
        {
            None => Ok(None),
            Some(x) => x.parse::<f64>().map(Some).map_err(|_| bad("not a number")),
        }
    };
    if !kind.starts_with("zoned") && num(1)?.is_some() {
        return Err(bad(
            "a center (the third part) is not implemented by pollwise",
        ));
    }
    Ok(Some(match kind.trim() {
        "random" => return Ok(None),
        "zipf" => {
            let theta = num(0)?.ok_or_else(|| bad("zipf needs its exponent"))?;
            if theta.is_nan() || theta <= 0.0 || theta == 1.0 {
                return Err(bad("zipf's exponent is above 0 and not 1"));
            }
            D::Zipf { theta }
        }
        "pareto" => {
            let h = num(0)?.ok_or_else(|| bad("pareto needs its shape"))?;
            if !(h > 0.0 && h < 1.0) {
                return Err(bad("pareto's shape is in (0, 1)"));
            }
            D::Pareto { h }
        }
        "normal" | "gauss" => D::Normal {
            dev: num(0)?.unwrap_or(0.0).max(0.0),
        },
        "zoned" => {
            let mut zones = Vec::new();
            let mut sizes = 0.0;
            let mut access = 0.0;
            let parts: Vec<&str> = rest.split(':').map(str::trim).filter(|p| !p.is_empty()).collect();
            for (i, z) in parts.iter().enumerate() {
                let (a, sz) = z.split_once('/').ok_or_else(|| bad("a zone is ACCESS/SIZE"))?;
                let a: f64 = a.trim().parse().map_err(|_| bad("a zone's ACCESS is a percentage"))?;
                let sz: f64 = match sz.trim() {
                    "" if i + 1 == parts.len() => 100.0 - sizes,
                    x => x.parse().map_err(|_| bad("a zone's SIZE is a percentage"))?,
                };
                access += a;
                sizes += sz;
                zones.push((a, sz));
            }
            if zones.is_empty() || (access - 100.0).abs() > 1e-6 || (sizes - 100.0).abs() > 1e-6 {
                return Err(bad("the zones' accesses and sizes each add up to 100"));
            }
            D::Zoned(zones)
        }
        "zoned_abs" => return Err(bad("zoned_abs (zones in bytes) is not implemented by pollwise; give zoned: with percentages")),
        _ => return Err(bad("unknown distribution")),
    }))
}

/// A seed from the clock, for `randrepeat=0`.
pub(super) fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// fio's `file_service_type` as requests on a file before the next (0: each file to its end),
/// or `None` for a type pollwise does not take.
pub(super) fn file_switch(v: &str) -> Option<u64> {
    let (kind, n) = match v.split_once(':') {
        Some((k, n)) => (k, Some(n.trim().parse::<u64>().ok().filter(|n| *n > 0)?)),
        None => (v, None),
    };
    match kind.trim() {
        "roundrobin" => Some(n.unwrap_or(1)),
        "sequential" if n.is_none() => Some(0),
        _ => None,
    }
}

/// fio's `filename`: names separated by ':', with '\\:' for a ':' inside a name.
pub(super) fn split_filenames(v: &str) -> Vec<String> {
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

    #[test]
    fn filenames_split_on_colons_unless_escaped() {
        assert_eq!(split_filenames("a:b"), ["a", "b"]);
        assert_eq!(split_filenames(r"a\:b"), ["a:b"]);
        assert_eq!(split_filenames("/x/y"), ["/x/y"]);
    }
}
