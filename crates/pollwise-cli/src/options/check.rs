//! Checking one value against its option's [`Kind`]: the one place values are parsed.

use pollwise::units::{parse_duration, parse_size};

use super::table::{is_type_max, size_text, Default, Kind, Opt};
use super::value::Value;

/// An example value for messages: the option's default, else something in range.
fn example(o: &Opt) -> String {
    match (o.default, o.kind) {
        (Default::Value(v), _) if v != "0" => v.to_string(),
        (_, Kind::Int { min, .. }) => min.max(1).to_string(),
        (_, Kind::Size { .. }) => "4k".into(),
        _ => "1".into(),
    }
}

fn range_error(given: &str, raw: &str, min: u64, max: u64, fmt: &dyn Fn(u64) -> String) -> String {
    if is_type_max(max) {
        format!(
            "--{given}={raw} is out of range: it must be at least {}",
            fmt(min)
        )
    } else {
        format!(
            "--{given}={raw} is out of range: use {} to {}",
            fmt(min),
            fmt(max)
        )
    }
}

/// "a, b or c".
pub fn or_list(choices: &[&str]) -> String {
    match choices {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok()
}

fn check_size(o: &Opt, given: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n = parse_size(v).map_err(|why| {
        format!(
            "--{given}={v} is not a size ({why}): write bytes with an optional k/M/G suffix, e.g. --{given}={}",
            example(o)
        )
    })?;
    check_range(given, v, n, (min, max), " bytes", &size_text)
}

/// `n` (written `raw`) if it is within `min..=max`, else the range error; `unit` follows the
/// number where the only bound is the type's own maximum.
fn check_range(
    given: &str,
    raw: &str,
    n: u64,
    (min, max): (u64, u64),
    unit: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<u64, String> {
    if n > max && is_type_max(max) {
        return Err(format!(
            "--{given}={raw} is too large: use at most {max}{unit}"
        ));
    }
    if n < min || n > max {
        return Err(range_error(given, raw, min, max, fmt));
    }
    Ok(n)
}

/// Checks `raw` (None: a bare `--given`) against `o`'s kind. Errors are one line naming the
/// option as the user wrote it (`given`) and the fix.
pub fn parse_value(o: &Opt, given: &str, raw: Option<&str>) -> Result<Value, String> {
    let v = match raw.or(o.kind.bare()) {
        Some(v) => v,
        None => return Err(format!("--{given} needs a value: write --{given}=VALUE")),
    };
    let raw = v;
    // fio's keywords ($pagesize, $mb_memory, $ncpus) and (arithmetic) in a number.
    let numeric = matches!(
        o.kind,
        Kind::Int { .. } | Kind::Size { .. } | Kind::SizeList { .. } | Kind::SizeOrPercent { .. }
    );
    let expanded;
    let v = if numeric && (v.contains('$') || v.trim_start().starts_with('(')) {
        expanded = super::expr::expand(v).map_err(|why| {
            format!("--{given}={v} is not a number fio's expressions give ({why}): write e.g. --{given}=(512*2048)")
        })?;
        expanded.as_str()
    } else {
        v
    };
    match o.kind {
        Kind::Bool => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Value::Bool(true)),
            "0" | "false" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "--{given}={v} is not a boolean: write --{given}=1 or --{given}=0"
            )),
        },
        Kind::Int { min, max } => {
            let n = parse_u64(v).ok_or_else(|| {
                format!(
                    "--{given}={v} is not a whole number: write e.g. --{given}={}",
                    example(o)
                )
            })?;
            check_range(given, raw, n, (min, max), "", &|x| x.to_string()).map(Value::Int)
        }
        Kind::Float { min, min_open, max } => {
            let x = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    format!(
                        "--{given}={v} is not a number: write e.g. --{given}={}",
                        example(o)
                    )
                })?;
            let low_ok = if min_open { x > min } else { x >= min };
            if !low_ok || x > max {
                return Err(format!(
                    "--{given}={v} is out of range {}{min}, {max}]: write e.g. --{given}={}",
                    if min_open { "(" } else { "[" },
                    example(o)
                ));
            }
            Ok(Value::Float(x))
        }
        Kind::Size { min, max } => check_size(o, given, v, min, max).map(Value::Size),
        Kind::SizeList { min, max } => {
            if !v.contains(',') {
                return check_size(o, given, v, min, max).map(Value::Size);
            }
            let parts: Vec<&str> = v.split(',').map(str::trim).collect();
            if parts.len() > 3 {
                return Err(format!(
                    "--{given}={v} has {} sizes: give READ,WRITE (and TRIM) at most",
                    parts.len()
                ));
            }
            parts
                .iter()
                .map(|p| {
                    if p.is_empty() {
                        Ok(None)
                    } else {
                        check_size(o, given, p, min, max).map(Some)
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Sizes)
        }
        Kind::SizeOrPercent { min, max } => match v.trim().strip_suffix('%') {
            Some(pct) => {
                let x = pct
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0 && *x <= 100.0)
                    .ok_or_else(|| {
                        format!("--{given}={v} is not a percentage in (0, 100]: write e.g. --{given}=50%")
                    })?;
                Ok(Value::Percent(x))
            }
            None => check_size(o, given, v, min, max).map(Value::Size),
        },
        Kind::Duration { plain } => {
            parse_duration(v, Some(plain))
                .map(Value::Duration)
                .map_err(|why| {
                    format!(
                    "--{given}={v} is not a time ({why}): write e.g. --{given}=10s, 500ms or 40us"
                )
                })
        }
        Kind::Enum { choices, noun } => {
            let w = v.trim();
            if choices.contains(&w) {
                return Ok(Value::Word(w.to_string()));
            }
            let last = choices.last().copied().unwrap_or_default();
            Err(match noun {
                Some(noun) => format!(
                    "unknown {noun} '{w}': use {}, e.g. --{given}={last}",
                    or_list(choices)
                ),
                None => format!(
                    "unknown --{given}={w}: use {}, e.g. --{given}={last}",
                    or_list(choices)
                ),
            })
        }
        Kind::EnumList { choices, noun } => {
            let mut out = Vec::new();
            for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                if !choices.contains(&w) {
                    return Err(format!(
                        "--{given}={v}: unknown {noun} '{w}': use some of {}",
                        choices.join(",")
                    ));
                }
                out.push(w.to_string());
            }
            Ok(Value::Words(out))
        }
        Kind::IntList { min, max } => {
            let mut out = Vec::new();
            for x in v.split(',') {
                let n = parse_u64(x).ok_or_else(|| {
                    format!(
                        "--{given}={v}: '{x}' is not a whole number: write e.g. --{given}=2,4,8"
                    )
                })?;
                if n < min || n > max {
                    return Err(format!(
                        "--{given}={v}: {n} is out of range: use {min} to {max}, e.g. --{given}=2,4,8"
                    ));
                }
                out.push(n);
            }
            Ok(Value::Ints(out))
        }
        Kind::Str { .. } => Ok(Value::Word(v.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::table::lookup;
    use std::time::Duration;

    fn p(name: &str, v: &str) -> Result<Value, String> {
        parse_value(lookup(name).unwrap(), name, Some(v))
    }

    #[test]
    fn each_kind() {
        assert_eq!(p("bs", "4k"), Ok(Value::Size(4096)));
        assert_eq!(p("bs", "1.5k"), Ok(Value::Size(1536)));
        assert_eq!(p("iodepth", "32"), Ok(Value::Int(32)));
        assert_eq!(p("direct", "off"), Ok(Value::Bool(false)));
        assert_eq!(
            parse_value(lookup("hipri").unwrap(), "hipri", None),
            Ok(Value::Bool(true))
        );
        let dur = |d: Duration| Ok(Value::Duration(d));
        assert_eq!(p("runtime", "500ms"), dur(Duration::from_millis(500)));
        assert_eq!(p("runtime", "2"), dur(Duration::from_secs(2)));
        assert_eq!(p("thinktime", "40"), dur(Duration::from_micros(40)));
        assert_eq!(p("sqthread_idle", "5"), dur(Duration::from_millis(5)));
        assert_eq!(p("hybrid_fraction", "1"), Ok(Value::Float(1.0)));
        assert_eq!(p("rw", "randrw"), Ok(Value::Word("randrw".into())));
        assert_eq!(
            p("modes", "poll,hybrid,"),
            Ok(Value::Words(vec!["poll".into(), "hybrid".into()]))
        );
        assert_eq!(p("threads", "2,4"), Ok(Value::Ints(vec![2, 4])));
        assert_eq!(
            parse_value(lookup("cmdhelp").unwrap(), "cmdhelp", None),
            Ok(Value::Word("all".into()))
        );
    }

    #[test]
    fn bad_values_name_the_option_and_the_fix() {
        for (name, v, needles) in [
            (
                "bs",
                "4.7",
                &["--bs=4.7", "not a whole number of bytes"][..],
            ),
            ("bs", "4q", &["--bs=4q is not a size", "4k"]),
            ("bs", "8G", &["--bs=8G is too large"]),
            (
                "iodepth",
                "0",
                &["--iodepth=0 is out of range", "1 to 32768"],
            ),
            ("iodepth", "deep", &["--iodepth=deep is not a whole number"]),
            ("numjobs", "0", &["at least 1"]),
            ("hybrid_fraction", "0", &["--hybrid_fraction=0", "(0, 1]"]),
            ("hybrid_fraction", "nan", &["not a number"]),
            ("runtime", "-5s", &["--runtime=-5s", "negative"]),
            ("rw", "sideways", &["unknown --rw=sideways", "randread"]),
            ("mode", "spin", &["unknown mode 'spin'", "interrupt"]),
            ("fdmon", "kqueue", &["--fdmon=epoll"]),
            ("ioengine", "spdk", &["--ioengine=sim"]),
            ("hybrid_stat", "max", &["mean, min or p10"]),
            (
                "output_format",
                "xml",
                &["unknown format 'xml'", "normal,json,json+,terse"],
            ),
            ("modes", "poll,spin", &["unknown mode 'spin'"]),
            (
                "variants",
                "separate,bogus",
                &["unknown variant 'bogus'", "attach_wq"],
            ),
            ("threads", "0", &["--threads=0", "1 to 1024"]),
            ("direct", "maybe", &["--direct=maybe is not a boolean"]),
        ] {
            let e = p(name, v).unwrap_err();
            for n in needles {
                assert!(e.contains(n), "{name}={v}: '{n}' not in: {e}");
            }
        }
        let e = parse_value(lookup("iodepth").unwrap(), "iodepth", None).unwrap_err();
        assert!(e.contains("--iodepth needs a value"), "{e}");
    }
}
