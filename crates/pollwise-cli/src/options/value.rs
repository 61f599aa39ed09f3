//! A checked option value, and the field types it is read as: what `check` gives, `store`
//! puts into the job and the steps take.

use std::time::Duration;

use crate::{Error, Result};

/// A value, checked against its option's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `Kind::Bool`.
    Bool(bool),
    /// `Kind::Int`.
    Int(u64),
    /// `Kind::Float`.
    Float(f64),
    /// `Kind::Size`, in bytes.
    Size(u64),
    /// `Kind::Duration`.
    Duration(Duration),
    /// `Kind::Enum` or `Kind::Str`.
    Word(String),
    /// `Kind::EnumList`.
    Words(Vec<String>),
    /// `Kind::IntList`.
    Ints(Vec<u64>),
    /// `Kind::SizeList` with a comma: one entry per direction (`None`: the default).
    Sizes(Vec<Option<u64>>),
    /// `Kind::SizeOrPercent` as a percentage, in (0, 100].
    Percent(f64),
}

/// A field's type, read from a checked value (the table's kind guarantees the variant).
pub trait FromValue: Sized {
    /// The value as this type, if its variant is one.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl FromValue for u64 {
    fn from_value(v: &Value) -> Option<u64> {
        match v {
            Value::Int(n) | Value::Size(n) => Some(*n),
            _ => None,
        }
    }
}

impl FromValue for u32 {
    fn from_value(v: &Value) -> Option<u32> {
        u64::from_value(v).and_then(|n| u32::try_from(n).ok())
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<f64> {
        match v {
            Value::Float(x) => Some(*x),
            _ => None,
        }
    }
}

impl FromValue for Duration {
    fn from_value(v: &Value) -> Option<Duration> {
        match v {
            Value::Duration(d) => Some(*d),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Option<String> {
        match v {
            Value::Word(w) => Some(w.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Option<T>> {
        T::from_value(v).map(Some)
    }
}

/// `v` as the type `T` of the field it goes into.
pub fn value_of<T: FromValue>(v: &Value) -> Result<T> {
    T::from_value(v).ok_or_else(|| {
        Error::Usage(format!(
            "internal: the option table's kind gives {v:?}, which its field does not hold"
        ))
    })
}
