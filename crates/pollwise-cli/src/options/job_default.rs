//! `pollwise run`'s job: every row's default, checked against its kind and stored through its
//! row, and the defaults the steps read from the rows. Each default is written once, in the
//! option table.

use super::check::parse_value;
use super::table::{lookup, Default, OPTIONS};
use super::value::{value_of, FromValue, Value};
use crate::spec::JobSpec;

/// `name`'s default as its row writes it, checked against its kind (a test holds every
/// row's default to its kind).
pub fn row_default(name: &str) -> Value {
    let o = lookup(name).unwrap_or_else(|| panic!("{name} is not in the option table"));
    match o.default {
        Default::Value(v) => {
            parse_value(o, o.name, Some(v)).unwrap_or_else(|e| panic!("{name}'s default: {e}"))
        }
        other => panic!("{name} has no default value: {other:?}"),
    }
}

/// `name`'s default as its row writes it, as the type `T` a step keeps it in.
pub fn default_of<T: FromValue>(name: &str) -> T {
    value_of(&row_default(name)).unwrap_or_else(|e| panic!("{name}'s default: {e}"))
}

/// `pollwise run`'s job: every row's default, stored through its row (fio's defaults, but
/// `rw=randread` and `direct=1`). Each default is written once, in the option table.
impl std::default::Default for JobSpec {
    fn default() -> JobSpec {
        let mut s = JobSpec::unset();
        for o in OPTIONS {
            if let (Some(put), Default::Value(_)) = (o.store.put(), o.default) {
                put(&mut s, &row_default(o.name))
                    .unwrap_or_else(|e| panic!("{}'s default does not store: {e}", o.name));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::table::command;
    use crate::options::test_job as spec;
    use crate::spec::IoEngine;
    use pollwise::policy::Mode;
    use pollwise_bench::engine::SubmitMode;

    #[test]
    fn the_default_job_is_the_tables() {
        let d = JobSpec::default();
        assert_eq!(d.name, "pollwise");
        assert_eq!(d.rw, crate::spec::Rw::RandRead);
        assert_eq!((d.bs, d.iodepth, d.numjobs), (4096, 1, 1));
        assert!(d.direct && !d.verify);
        assert_eq!(d.seed, 0x5eed_5eed);
        assert_eq!(d.sqthread_idle_ms, 1000);
        assert_eq!(d.submit_mode, SubmitMode::Separate);
        assert_eq!(d.ioengine, IoEngine::IoUring);
        assert_eq!(d.policy.mode, Mode::Interrupt);
        assert!(d.policy.hybrid_adaptive);
        assert_eq!(d.policy.hybrid_fraction, 0.5);
        assert_eq!(d.policy.poll_max_ns, 32768);
        assert!(d.extra.sync.invalidate && d.extra.content.scramble);
        assert!(d.taskrun_auto);
    }

    /// A default given is the default not given: a row's store of its own default leaves the
    /// job as [`JobSpec::default`] has it.
    #[test]
    fn each_default_given_is_the_default_job() {
        let run = command("run").unwrap();
        let args: Vec<String> = OPTIONS
            .iter()
            .filter(|o| o.store.put().is_some() && run.accepts(o))
            .filter_map(|o| match o.default {
                Default::Value(v) => Some(format!("--{}={v}", o.name)),
                _ => None,
            })
            .collect();
        assert!(args.len() > 50, "{args:?}");
        let given = spec("run", &args).unwrap();
        assert_eq!(format!("{given:?}"), format!("{:?}", JobSpec::default()));
    }
}
