//! What pollwise must remove however the run ends: a registry of the directories it made.
//!
//! Files pollwise creates for the user live in directories it made itself (see
//! [`crate::target`]). Each is registered here while it exists, so that the paths that end the
//! process early (a second Ctrl-C, see [`crate::signals`]) can remove them before exiting; the
//! normal paths remove them when their guard drops.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn dirs() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while holding the lock leaves a list that is still valid.
    DIRS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `dir` (and everything in it) for removal when the process ends early.
pub fn register_dir(dir: &Path) {
    dirs().push(dir.to_path_buf());
}

/// Forgets `dir` (its owner removed it).
pub fn unregister_dir(dir: &Path) {
    dirs().retain(|d| d != dir);
}

/// Removes every registered directory with its contents; returns how many were removed.
pub fn remove_all() -> usize {
    let list = std::mem::take(&mut *dirs());
    list.iter()
        .filter(|d| std::fs::remove_dir_all(d).is_ok())
        .count()
}

/// The directories registered now.
pub fn registered() -> Vec<PathBuf> {
    dirs().clone()
}
