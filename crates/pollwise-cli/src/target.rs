//! The file a command runs on when the user names none.
//!
//! `compare` and the scenarios run on a file of their own in the temp directory when no
//! `--filename` is given, and remove it however the run ends, as fio users expect of a benchmark
//! that lays out its own file.

use std::path::PathBuf;

use crate::job::JobSpec;

/// Removes the file it names (if any) when dropped.
pub struct TempFile(pub Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// With no `--filename` in `spec`, points it at `pollwise-NAME-PID.dat` in the temp directory
/// (of `size` bytes unless `--size` was given) and returns the guard that removes it; otherwise
/// a guard that removes nothing.
pub fn default_target(spec: &mut JobSpec, name: &str, size: u64) -> TempFile {
    if !spec.filename.as_os_str().is_empty() {
        return TempFile(None);
    }
    let p = std::env::temp_dir().join(format!("pollwise-{name}-{}.dat", std::process::id()));
    spec.filename = p.clone();
    if spec.size == 0 {
        spec.size = size;
    }
    TempFile(Some(p))
}
