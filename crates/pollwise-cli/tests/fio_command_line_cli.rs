//! fio's command-line options that pollwise lacks are named as fio's (exit 2, one line), not as
//! unknown options with a far-fetched "did you mean"; and `-` is a job file on standard input,
//! as `fio -` reads it.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{outcome, pollwise, tempdir};

#[test]
fn fios_command_line_options_are_named_as_fios() {
    for opt in [
        "--client=host",
        "--server",
        "--daemonize=pid",
        "--remote-config=x.fio",
        "--debug=io",
        "--terse-version=3",
        "--crctest",
        "--idle-prof=calibrate",
        "--trigger-file=t",
        "--trigger-timeout=10",
        "--trigger=cmd",
        "--latency-log",
    ] {
        let (code, _out, err) = pollwise(&["run", opt, "--ioengine=sim", "--runtime=10ms"]);
        assert_eq!(code, 2, "{opt}: {err}");
        assert_eq!(err.lines().count(), 1, "{opt}: {err}");
        let name = opt.trim_start_matches("--").split('=').next().unwrap();
        assert!(
            err.contains(&format!("fio's --{name} is not implemented by pollwise")),
            "{opt}: {err}"
        );
        assert!(!err.contains("did you mean"), "{opt}: {err}");
    }
}

#[test]
fn a_job_file_on_standard_input() {
    let d = tempdir();
    for args in [&["-"][..], &["run", "-"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(args)
            .arg("--minimal")
            .current_dir(d.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"[fromstdin]\nioengine=sim\nsize=1M\nruntime=100ms\n")
            .unwrap();
        let (code, out, err) = outcome(child.wait_with_output().unwrap());
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains(";fromstdin;"), "{args:?}: {out}");
    }
}
