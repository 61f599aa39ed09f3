//! The one size grammar and the one duration grammar of the workspace.
//!
//! Sizes are whole numbers of bytes with an optional binary suffix: `4096`, `4k`, `4KiB`, `1.5M`,
//! `1g` (k = 1024, as fio's default `kb_base`; `b`, `k`, `m`, `g`, `t`, each also as `kb`/`kib`,
//! case-insensitive). A fraction is allowed only when it names a whole number of bytes: `1.5k` is
//! 1536, `4.7` is refused rather than cut to 4.
//!
//! Durations are a number with an optional unit: `ns`, `us` (`µs`, `usec`), `ms` (`msec`),
//! `s` (`sec`), `m` (`min`), `h`, case-insensitive. What a bare number means is the caller's
//! choice ([`parse_duration`]'s `plain` unit, or `None` to refuse it). Fractions are rounded to
//! the nearest nanosecond.
//!
//! Errors are structured ([`SizeError`], [`DurationError`]); callers add the name of the setting.

use std::fmt;
use std::time::Duration;

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeError {
    /// No digits before the suffix (`k`, empty).
    NoNumber,
    /// A suffix that is not b, k, m, g or t (with optional `b`/`ib`).
    UnknownSuffix(String),
    /// The number is not a plain decimal (`1.2.3`, `-4k`).
    BadNumber,
    /// The value is not a whole number of bytes (`4.7`, `0.3k`).
    NotWhole,
    /// More than `u64::MAX` bytes.
    TooLarge,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::NoNumber => write!(f, "no number"),
            SizeError::UnknownSuffix(u) => write!(f, "unknown suffix '{u}'"),
            SizeError::BadNumber => write!(f, "not a number"),
            SizeError::NotWhole => write!(f, "not a whole number of bytes"),
            SizeError::TooLarge => write!(f, "too large"),
        }
    }
}

impl std::error::Error for SizeError {}

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// A leading minus sign.
    Negative,
    /// No number, or not a plain decimal.
    NoNumber,
    /// A bare number where the caller wants a unit.
    NoUnit,
    /// A unit this grammar does not know.
    UnknownUnit(String),
    /// Longer than about 31 years (10^18 ns).
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Negative => write!(f, "negative"),
            DurationError::NoNumber => write!(f, "no number"),
            DurationError::NoUnit => write!(f, "no unit"),
            DurationError::UnknownUnit(u) => write!(f, "unknown unit '{u}'"),
            DurationError::TooLong => write!(f, "too long"),
        }
    }
}

impl std::error::Error for DurationError {}

/// A unit of time: what a bare number means to [`parse_duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Nanos,
    /// Microseconds.
    Micros,
    /// Milliseconds.
    Millis,
    /// Seconds.
    Secs,
}

impl TimeUnit {
    /// Nanoseconds in one of this unit.
    pub fn nanos(self) -> u64 {
        match self {
            TimeUnit::Nanos => 1,
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Secs => 1_000_000_000,
        }
    }

    /// The unit's suffix in this grammar (`us`, `ms`, ...).
    pub fn suffix(self) -> &'static str {
        match self {
            TimeUnit::Nanos => "ns",
            TimeUnit::Micros => "us",
            TimeUnit::Millis => "ms",
            TimeUnit::Secs => "s",
        }
    }
}

/// Splits `t` into its leading decimal number and the rest.
fn split_number(t: &str) -> (&str, &str) {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    t.split_at(split)
}

/// Parses a size in bytes (see the module's grammar).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let (num, unit) = split_number(t);
    if num.is_empty() {
        return Err(if t.starts_with('-') || t.starts_with('+') {
            SizeError::BadNumber
        } else {
            SizeError::NoNumber
        });
    }
    let mult: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => return Err(SizeError::UnknownSuffix(other.to_string())),
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(SizeError::BadNumber);
    }
    // Exact arithmetic: value = int.frac * mult must be a whole number of bytes.
    let frac = frac.trim_end_matches('0');
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    if frac.len() > 30 {
        // 10^31 has a factor 5^31 that no power of two times a mantissa can cancel... unless
        // the mantissa does, which needs more digits than any u64 size has.
        return Err(SizeError::NotWhole);
    }
    if digits.len() > 38 {
        return Err(SizeError::TooLarge);
    }
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| SizeError::BadNumber)?
    };
    let scale = 10u128.pow(frac.len() as u32);
    let bytes = mantissa.checked_mul(mult).ok_or(SizeError::TooLarge)?;
    if bytes % scale != 0 {
        return Err(SizeError::NotWhole);
    }
    u64::try_from(bytes / scale).map_err(|_| SizeError::TooLarge)
}

/// Parses a duration (see the module's grammar). `plain` is the unit of a bare number; `None`
/// refuses bare numbers ([`DurationError::NoUnit`]).
pub fn parse_duration(s: &str, plain: Option<TimeUnit>) -> Result<Duration, DurationError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(DurationError::Negative);
    }
    let (num, unit) = split_number(t);
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" => match plain {
            Some(u) => u.nanos() as f64,
            None => return Err(DurationError::NoUnit),
        },
        "ns" => 1.0,
        "us" | "µs" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => return Err(DurationError::UnknownUnit(other.to_string())),
    };
    let n: f64 = num.parse().map_err(|_| DurationError::NoNumber)?;
    let ns = (n * mult).round();
    if !ns.is_finite() || ns > 1e18 {
        return Err(DurationError::TooLong);
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// The forms a latency model is written in (`LatencyModel`'s `FromStr`), for messages.
pub const MODEL_FORMS: &str = "fixed:10us, uniform:8us,12us, normal:10us,1us, lognormal:10us,0.5 (mean, sigma) or bimodal:10us,100us,0.1 (fast, slow, share of slow)";

/// How a refused duration `given` reads (the words of `Reason::Duration`).
pub(crate) fn write_duration_error(
    f: &mut fmt::Formatter<'_>,
    given: &str,
    error: &DurationError,
) -> fmt::Result {
    match error {
        DurationError::Negative => {
            write!(
                f,
                "'{given}' is negative: durations are at least 0, e.g. 10us"
            )
        }
        DurationError::NoUnit => {
            write!(
                f,
                "'{given}' has no unit: write e.g. 10us (ns, us, ms or s)"
            )
        }
        DurationError::UnknownUnit(unit) => write!(
            f,
            "'{given}' has an unknown unit '{unit}': use ns, us, ms or s, e.g. 10us"
        ),
        DurationError::NoNumber => write!(f, "'{given}' is not a duration: write e.g. 10us"),
        DurationError::TooLong => {
            write!(f, "'{given}' is too long: use at most a few seconds")
        }
    }
}

/// Why a latency model did not parse (`Reason::Latency`); its words follow the model as
/// written (`"fixed:10"` then `": '10' has no unit ..."`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LatencyError {
    /// No `name:` part.
    NoModel,
    /// The wrong number of values for the model.
    Arity {
        /// The model.
        name: &'static str,
        /// How many values it takes.
        n: usize,
        /// An example.
        form: &'static str,
    },
    /// A duration that does not parse.
    Duration {
        /// The value given.
        given: String,
        /// Why it does not parse.
        error: DurationError,
    },
    /// A uniform model whose lower bound is above its upper.
    BoundsReversed,
    /// A lognormal sigma that is not a number.
    SigmaNotANumber(String),
    /// A lognormal sigma outside 0 to 10.
    SigmaRange,
    /// A bimodal share that is not a number.
    FractionNotANumber(String),
    /// A bimodal share outside 0 to 1.
    NotAProbability(f64),
    /// A model name not known.
    Unknown(String),
}

impl fmt::Display for LatencyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatencyError::NoModel => write!(f, " names no model: use one of {MODEL_FORMS}"),
            LatencyError::Arity { name, n, form } => {
                write!(f, ": {name} takes {n} value(s), e.g. {form}")
            }
            LatencyError::Duration { given, error } => {
                f.write_str(": ")?;
                write_duration_error(f, given, error)
            }
            LatencyError::BoundsReversed => {
                f.write_str(": the lower bound is above the upper: write uniform:LOW,HIGH")
            }
            LatencyError::SigmaNotANumber(s) => write!(
                f,
                ": sigma '{s}' is not a number: write e.g. lognormal:10us,0.5"
            ),
            LatencyError::SigmaRange => f.write_str(": sigma must be between 0 and 10, e.g. 0.5"),
            LatencyError::FractionNotANumber(s) => {
                write!(f, ": '{s}' is not a number: write e.g. 0.1")
            }
            LatencyError::NotAProbability(p) => {
                write!(f, ": {p} is not a probability: use 0 to 1, e.g. 0.1")
            }
            LatencyError::Unknown(name) => write!(
                f,
                ": unknown latency model '{name}': use one of {MODEL_FORMS}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("0.5M"), Ok(512 << 10));
        assert_eq!(parse_size("4.0"), Ok(4));
        assert_eq!(parse_size("4.70k"), Err(SizeError::NotWhole));
        assert_eq!(parse_size("4.7"), Err(SizeError::NotWhole));
        assert_eq!(parse_size("0.3k"), Err(SizeError::NotWhole));
        assert_eq!(parse_size("k"), Err(SizeError::NoNumber));
        assert_eq!(parse_size(""), Err(SizeError::NoNumber));
        assert_eq!(parse_size("-4k"), Err(SizeError::BadNumber));
        assert_eq!(parse_size("1.2.3"), Err(SizeError::BadNumber));
        assert_eq!(parse_size("."), Err(SizeError::BadNumber));
        assert_eq!(parse_size("4x"), Err(SizeError::UnknownSuffix("x".into())));
        assert_eq!(parse_size("99999999999t"), Err(SizeError::TooLarge));
        assert_eq!(
            parse_size("9999999999999999999999999999999999"),
            Err(SizeError::TooLarge)
        );
        assert_eq!(parse_size(&u64::MAX.to_string()), Ok(u64::MAX));
    }

    #[test]
    fn durations() {
        let secs = Some(TimeUnit::Secs);
        assert_eq!(parse_duration("10", secs), Ok(Duration::from_secs(10)));
        assert_eq!(
            parse_duration("40", Some(TimeUnit::Micros)),
            Ok(Duration::from_micros(40))
        );
        assert_eq!(parse_duration("40us", secs), Ok(Duration::from_micros(40)));
        assert_eq!(parse_duration("40µs", secs), Ok(Duration::from_micros(40)));
        assert_eq!(
            parse_duration("1.5ms", None),
            Ok(Duration::from_micros(1500))
        );
        assert_eq!(parse_duration("2m", secs), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h", secs), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("10MS", secs), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("-1s", secs), Err(DurationError::Negative));
        assert_eq!(parse_duration("10", None), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("s", secs), Err(DurationError::NoNumber));
        assert_eq!(
            parse_duration("5parsecs", secs),
            Err(DurationError::UnknownUnit("parsecs".into()))
        );
        assert_eq!(
            parse_duration("9999999999s", secs),
            Err(DurationError::TooLong)
        );
    }
}
