//! The file a command runs on when the user names none.
//!
//! `compare` and the scenarios run on a file of their own when no `--filename` is given. The
//! file is never at a predictable path in a shared directory, where another user could plant a
//! symbolic link for it: pollwise makes a directory of its own under `$TMPDIR` (random name,
//! mode 0700, created with `mkdir`, which never follows a link), creates the file inside it with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600, and removes the directory however the run ends:
//! when the guard drops (success, error, panic), or from the signal path
//! ([`crate::cleanup`]).

use std::fs::{OpenOptions, Permissions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::spec::JobSpec;
use crate::{Error, Result};

/// A directory pollwise made for its own files; removed (with its contents) on drop.
pub struct TempDirGuard {
    dir: Option<tempfile::TempDir>,
    file: PathBuf,
}

impl TempDirGuard {
    /// The file inside the directory.
    pub fn file(&self) -> &Path {
        &self.file
    }
    /// The directory.
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            // Removed and forgotten under the registry's lock (see `cleanup`).
            let mut reg = crate::cleanup::lock();
            reg.unregister(d.path());
            // TempDir removes the directory and everything in it.
            drop(d);
        }
    }
}

/// Removes the directory it holds (if any) when dropped.
pub struct TempFile(pub Option<TempDirGuard>);

impl TempFile {
    /// The file pollwise created, if any.
    pub fn path(&self) -> Option<&Path> {
        self.0.as_ref().map(|g| g.file())
    }
}

/// Makes a directory of pollwise's own under `base` and creates `NAME.dat` in it, empty, with
/// `O_EXCL | O_NOFOLLOW` and mode 0600.
pub fn create_private(base: &Path, name: &str) -> Result<TempDirGuard> {
    // Made and registered under the registry's lock, so an exit on a signal cannot come between
    // (see `cleanup`).
    let mut reg = crate::cleanup::lock();
    let dir = tempfile::Builder::new()
        .prefix("pollwise-")
        .permissions(Permissions::from_mode(0o700))
        .tempdir_in(base)
        .map_err(|e| {
            Error::Usage(format!(
                "cannot make a directory in the temp directory {}: {}; set TMPDIR to a writable directory or give --filename",
                base.display(),
                crate::errno::plain(&e)
            ))
        })?;
    reg.register(dir.path());
    let file = dir.path().join(format!("{name}.dat"));
    let guard = TempDirGuard {
        dir: Some(dir),
        file,
    };
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&guard.file)
        .map_err(|e| {
            Error::Io(format!(
                "cannot create {}: {}",
                guard.file.display(),
                crate::errno::plain(&e)
            ))
        });
    // The guard's drop takes the lock: release it first.
    drop(reg);
    created?;
    Ok(guard)
}

/// With no `--filename` in `spec`, creates `NAME.dat` in a directory of pollwise's own under the
/// temp directory, points `spec` at it (of `size` bytes unless `--size` was given) and returns
/// the guard that removes it; otherwise a guard that removes nothing.
pub fn default_target(spec: &mut JobSpec, name: &str, size: u64) -> Result<TempFile> {
    if !spec.filename.as_os_str().is_empty() {
        // A FIFO would block the scenario's open: refused before it (see `filekind`).
        crate::filekind::check_target("--filename", &spec.filename)?;
        return Ok(TempFile(None));
    }
    let guard = create_private(&std::env::temp_dir(), name)?;
    spec.filename = guard.file().to_path_buf();
    if spec.size == 0 {
        spec.size = size;
    }
    Ok(TempFile(Some(guard)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn private_file_and_dir_modes_and_removal() {
        let base = tempfile::tempdir().unwrap();
        let g = create_private(base.path(), "t").unwrap();
        let dm = std::fs::metadata(g.dir()).unwrap().mode() & 0o777;
        let fm = std::fs::symlink_metadata(g.file()).unwrap().mode() & 0o777;
        assert_eq!(dm, 0o700);
        assert_eq!(fm, 0o600);
        assert!(crate::cleanup::registered().contains(&g.dir().to_path_buf()));
        let d = g.dir().to_path_buf();
        drop(g);
        assert!(!d.exists());
        assert!(!crate::cleanup::registered().contains(&d));
    }

    #[test]
    fn missing_base_is_one_line_naming_tmpdir() {
        let e = create_private(Path::new("/nonexistent/pollwise-test"), "t")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("TMPDIR"), "{e}");
        assert!(!e.contains("permissions"), "{e}");
    }
}
