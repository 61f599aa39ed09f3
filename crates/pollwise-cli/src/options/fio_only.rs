//! fio's command-line options (init.c's, not job options) that pollwise does not implement,
//! each with why and what to do instead: `--client` is fio's, not a typo of something else.

/// fio's command-line-only options pollwise lacks, with what to say of each.
const FIO_COMMAND_LINE: &[(&str, &str)] = &[
    ("client", "pollwise runs its jobs on this machine only, with no client/server mode: run pollwise on the machine to measure"),
    ("server", "pollwise runs its jobs on this machine only, with no client/server mode: run pollwise on the machine to measure"),
    ("daemonize", "it belongs to fio's server mode, which pollwise does not have"),
    ("remote_config", "it belongs to fio's client/server mode, which pollwise does not have: give the job file itself"),
    ("debug", "pollwise has no debug tracing of its own; its --output-format=json has the figures fio's debug output is used for"),
    ("terse_version", "pollwise writes fio's terse version 3 only (--minimal or --output-format=terse)"),
    ("crctest", "it benchmarks fio's checksum code, which pollwise does not share"),
    ("cpuclock_test", "it tests fio's CPU clock source, which pollwise does not use (`pollwise calibrate` measures its clock)"),
    ("idle_prof", "pollwise reports the CPU its jobs use (CPU%, CPU-us/IO) rather than idle time"),
    ("trigger", "it belongs to fio's client/server mode, which pollwise does not have"),
    ("trigger_file", "it belongs to fio's client/server mode, which pollwise does not have"),
    ("trigger_timeout", "it belongs to fio's client/server mode, which pollwise does not have"),
    ("trigger_remote", "it belongs to fio's client/server mode, which pollwise does not have"),
    ("inflate_log", "it reads fio's compressed logs, which pollwise does not write"),
    ("alloc_size", "pollwise allocates its own memory as it needs it"),
    ("profile", "pollwise has no built-in profiles: write the job as options or a job file"),
    ("merge_blktrace_only", "pollwise does not replay blktrace files (its --read_iolog replays fio's I/O logs)"),
    ("latency_log", "write the latency logs with the job option --write_lat_log=NAME"),
    ("bandwidth_log", "write the bandwidth log with the job option --write_bw_log=NAME"),
];

/// The message for fio's command-line option `name` (dashes or underscores) if pollwise lacks
/// it, else `None`.
pub fn not_implemented(name: &str) -> Option<String> {
    let n = name.replace('-', "_");
    FIO_COMMAND_LINE
        .iter()
        .find(|(o, _)| *o == n)
        .map(|(_, why)| format!("fio's --{name} is not implemented by pollwise: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_command_line_options_are_named_as_fios() {
        for o in [
            "client",
            "server",
            "daemonize",
            "remote-config",
            "trigger-file",
            "idle-prof",
        ] {
            let m = not_implemented(o).unwrap();
            assert!(
                m.starts_with(&format!("fio's --{o} is not implemented")),
                "{m}"
            );
        }
        assert!(not_implemented("iodepth").is_none());
        // None of them is an option pollwise has.
        for (o, _) in FIO_COMMAND_LINE {
            assert!(super::super::table::lookup(o).is_none(), "{o}");
        }
    }
}
