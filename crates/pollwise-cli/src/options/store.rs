//! Where each option's value goes in the job, as fio's `options.c` rows name `off1`: the
//! row's [`Store`] says it.
//!
//! A plain store (one value into its field, with the conversion the field needs) is a
//! [`Store::Job`] function, applied by [`Opts::job_spec_from`](super::Opts::job_spec_from) in
//! table order, before the options checked against others.

use std::time::Duration;

use super::value::Value;
use crate::spec::JobSpec;
use crate::{Error, Result};

/// A plain store: puts one checked value into the job.
pub type Put = fn(&mut JobSpec, &Value) -> Result<()>;

/// Where an option's value goes.
#[derive(Debug, Clone, Copy)]
pub enum Store {
    /// Into the job, by this function.
    Job(Put),
    /// Not stored by the table: the job's builder or the command takes it itself.
    Command,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::table::{command, Default, OPTIONS};
    use crate::options::{cmdline, Opts};

    /// A default given is the default not given: each row's store of its own default leaves
    /// the job as [`JobSpec::default`] has it.
    #[test]
    fn each_default_given_is_the_default_job() {
        let run = command("run").unwrap();
        let args: Vec<String> = OPTIONS
            .iter()
            .filter(|o| matches!(o.store, Store::Job(_)) && run.accepts(o))
            .filter_map(|o| match o.default {
                Default::Value(v) => Some(format!("--{}={v}", o.name)),
                _ => None,
            })
            .collect();
        assert!(!args.is_empty());
        let mut o = Opts::resolve(run, &cmdline::parse(&args).unwrap()).unwrap();
        let given = o.job_spec().unwrap();
        o.finish().unwrap();
        assert_eq!(format!("{given:?}"), format!("{:?}", JobSpec::default()));
    }
}
