//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use pollwise::policy::{Mode, PolicyConfig};
use pollwise_cli::job::{JobSpec, Rw};

/// A temporary directory on a disk filesystem (O_DIRECT works there; /tmp is on the disk here).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("pollwise-test")
        .tempdir_in(std::env::temp_dir())
        .expect("temp dir")
}

/// A fresh temp dir (keep it: dropping it removes the file) and the path of a file `f` in it.
pub fn temp_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let path = dir.path().join("f");
    (dir, path)
}

/// A small job on `path`: `ios` requests, not time-based.
pub fn job(path: &Path, rw: Rw, mode: Mode, ios: u64) -> JobSpec {
    JobSpec {
        filename: PathBuf::from(path),
        size: 1 << 20,
        rw,
        bs: 4096,
        iodepth: 4,
        direct: true,
        runtime: Duration::from_secs(60),
        io_size: ios * 4096,
        policy: PolicyConfig::new(mode),
        ..JobSpec::default()
    }
}
