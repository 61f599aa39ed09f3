//! What pollwise must remove however the run ends: a registry of the directories it made.
//!
//! Files pollwise creates for the user live in directories it made itself (see
//! [`crate::target`]). Each is registered here while it exists, so that the paths that end the
//! process early (a second Ctrl-C, see [`crate::signals`]) can remove them before exiting; the
//! normal paths remove them when their guard drops.
//!
//! A directory is made, filled and removed with the registry locked ([`Registry`]), and the
//! early exit takes the same lock: an exit can never fall between a directory's creation and its
//! registration, nor between its removal and its unregistration, and so never leaves one behind.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The registry, locked: an early exit waits until it is dropped.
pub struct Registry(MutexGuard<'static, Vec<PathBuf>>);

/// Locks the registry (see the module docs).
pub fn lock() -> Registry {
    // A panic while holding the lock leaves a list that is still valid.
    Registry(DIRS.lock().unwrap_or_else(|p| p.into_inner()))
}

impl Registry {
    /// Registers `dir` (and everything in it) for removal when the process ends early.
    pub fn register(&mut self, dir: &Path) {
        self.0.push(dir.to_path_buf());
    }

    /// Forgets `dir` (its owner removed it).
    pub fn unregister(&mut self, dir: &Path) {
        self.0.retain(|d| d != dir);
    }

    /// Removes every registered directory with its contents and forgets them; returns how
    /// many were removed. Each is first renamed out of the way: a file the run opens by its
    /// path while the removal goes on (laying out, say) then fails to open, where it would
    /// otherwise be created in the directory between the removal of its files and its own,
    /// and keep it.
    pub fn remove_all(&mut self) -> usize {
        let list = std::mem::take(&mut *self.0);
        list.iter()
            .filter(|d| {
                let doomed = d.file_name().map(|n| {
                    let mut n = n.to_os_string();
                    n.push(".removing");
                    d.with_file_name(n)
                });
                match doomed {
                    Some(x) if std::fs::rename(d, &x).is_ok() => std::fs::remove_dir_all(&x),
                    _ => std::fs::remove_dir_all(d),
                }
                .is_ok()
            })
            .count()
    }
}

/// Registers `dir` (and everything in it) for removal when the process ends early.
pub fn register_dir(dir: &Path) {
    lock().register(dir);
}

/// Forgets `dir` (its owner removed it).
pub fn unregister_dir(dir: &Path) {
    lock().unregister(dir);
}

/// Removes every registered directory with its contents; returns how many were removed.
pub fn remove_all() -> usize {
    lock().remove_all()
}

/// As [`remove_all`], for a process about to exit: the registry stays locked, so nothing new
/// is made (and left) before the exit.
pub fn remove_all_before_exit() -> usize {
    let mut reg = lock();
    let n = reg.remove_all();
    std::mem::forget(reg);
    n
}

/// The directories registered now.
pub fn registered() -> Vec<PathBuf> {
    lock().0.clone()
}
