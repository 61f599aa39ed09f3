//! The report's own output: a reader that went away ends the command quietly; a full disk is one
//! line and exit 1; never a panic.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

const RUN: &[&str] = &["run", "--ioengine=sim", "--runtime=0.2", "--time_based"];

#[test]
fn closed_pipe_exits_quietly() {
    for args in [RUN, &["help"]] {
        // The reader is gone before the command starts: with a pipe dropped after the spawn,
        // `help` could fill the pipe's buffer and exit 0 before the reader went away. A stream
        // socket whose peer is closed answers a write as a pipe without a reader does (EPIPE
        // and SIGPIPE), and its other end is closed before the child exists.
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(ours);
        let child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(args)
            .stdout(Stdio::from(OwnedFd::from(theirs)))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "{args:?}: {err}");
        assert_eq!(
            out.status.code(),
            Some(128 + libc::SIGPIPE),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn full_disk_is_one_line_and_exit_1() {
    for args in [
        RUN,
        &["help"],
        &[
            "run",
            "--ioengine=sim",
            "--runtime=0.2",
            "--output-format=json",
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(args)
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim(),
            "pollwise: cannot write the report: No space left on device",
            "{args:?}"
        );
    }
}
