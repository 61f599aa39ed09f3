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
