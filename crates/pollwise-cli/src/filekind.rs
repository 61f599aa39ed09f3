//! What a target (`--filename`) may be: a regular file or a block device; never a FIFO, a
//! socket, a character device or a directory. (What pollwise writes for the user, `--output`
//! and the logs, follows `outfile`'s rules: a FIFO there is written when something reads it.)
//!
//! A FIFO blocks `open(2)` until someone opens its other end, so the command would hang before
//! its first signal check; a character device or a socket never ends or is no storage to
//! measure. So each path is looked at with `stat(2)`, which opens nothing, before anything
//! opens it, and refused in one line naming it (exit 2). A target is then opened with
//! `O_NONBLOCK` ([`open_target`]): should a FIFO be put in its place after the check, the open
//! still returns at once, `fstat(2)` on the opened file refuses it, and the flag is cleared on a
//! file that passes (it would change how the kernel treats the I/O).

use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::{Error, Result};

/// What `t` is, in words, when it is not what a target or report may be.
fn odd_kind(t: &FileType, block_ok: bool) -> Option<&'static str> {
    if t.is_file() || (block_ok && t.is_block_device()) {
        None
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// Whether `m` is `/dev/null` or `/dev/zero` (character device 1:3 or 1:5, whatever its path):
/// fio's sinks, which take any write and give zeros (or nothing) to reads, and which a job file
/// names to measure the overhead of a path without storage. A target may be one of them.
pub fn is_null_sink(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dev = m.rdev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    m.file_type().is_char_device() && major == 1 && (minor == 3 || minor == 5)
}

fn target_error(option: &str, path: &Path, kind: &str) -> Error {
    if kind == "a directory" {
        return Error::Usage(format!(
            "{option}={} is a directory: name a file inside it, e.g. {option}={}",
            path.display(),
            path.join("pollwise.dat").display()
        ));
    }
    Error::Usage(format!(
        "{option}={} is {kind}, so it cannot be opened for I/O: name a file or a block device",
        path.display()
    ))
}

/// Refuses a target path (`option` names it: `--filename`) that exists and is neither a
/// regular file nor a block device. Follows symbolic links (`stat(2)`, which opens nothing); a
/// path that does not exist yet passes (it will be created as a regular file).
pub fn check_target(option: &str, path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if is_null_sink(&m) => Ok(()),
        Ok(m) => match odd_kind(&m.file_type(), true) {
            Some(kind) => Err(target_error(option, path, kind)),
            None => Ok(()),
        },
        Err(_) => Ok(()),
    }
}

/// Opens a target with `opts` and `flags` (custom flags such as `O_DIRECT`) plus `O_NONBLOCK`,
/// refuses what is not a regular file or block device (`option` names the path in the
/// message), and clears `O_NONBLOCK` again. The error of the open itself is returned as is, for
/// the caller's message.
pub fn open_target(
    opts: &mut OpenOptions,
    flags: i32,
    option: &str,
    path: &Path,
) -> std::result::Result<File, OpenError> {
    let nofollow = if is_made_up(path) {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let f = opts
        .custom_flags(flags | libc::O_NONBLOCK | nofollow)
        .open(path)
        .map_err(|e| {
            if nofollow != 0 && e.raw_os_error() == Some(libc::ELOOP) {
                return OpenError::Kind(planted(path));
            }
            // A FIFO with no reader refuses a write-only non-blocking open with ENXIO.
            // A null sink's own error (O_DIRECT on /dev/null: EINVAL) is the system's.
            match std::fs::metadata(path).map(|m| {
                (!is_null_sink(&m))
                    .then(|| odd_kind(&m.file_type(), true))
                    .flatten()
            }) {
                Ok(Some(kind)) => OpenError::Kind(target_error(option, path, kind)),
                _ => OpenError::Open(e),
            }
        })?;
    let meta = f.metadata().map_err(OpenError::Open)?;
    if let (false, Some(kind)) = (is_null_sink(&meta), odd_kind(&meta.file_type(), true)) {
        return Err(OpenError::Kind(target_error(option, path, kind)));
    }
    pollwise::sys::fs::set_nonblocking(&f, false).map_err(OpenError::Open)?;
    Ok(f)
}

/// The names pollwise made up for targets (see [`made_up`]).
static MADE_UP: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

fn made_up_names() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    // A panic while holding the lock leaves a list that is still valid.
    MADE_UP.lock().unwrap_or_else(|p| p.into_inner())
}

fn is_made_up(path: &Path) -> bool {
    made_up_names().iter().any(|p| p == path)
}

fn planted(path: &Path) -> Error {
    Error::Usage(format!(
        "{} is a symbolic link, and pollwise made this name up itself (filename_format, $jobname.$jobnum.$filenum): it does not follow a link there (another user may have planted it); remove the link, or name the file with filename=",
        crate::error::shown(&path.display().to_string())
    ))
}

/// Marks `path` as a target name pollwise made up (fio's `filename_format`), not one the user
/// gave: a symbolic link there now is refused, and every later [`open_target`] of it opens with
/// `O_NOFOLLOW`, so a link planted after this check is refused too (a new file is created with
/// `O_EXCL`, which follows no link either).
pub fn made_up(path: &Path) -> Result<()> {
    {
        let mut names = made_up_names();
        if !names.iter().any(|p| p == path) {
            names.push(path.to_path_buf());
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(planted(path)),
        _ => Ok(()),
    }
}

/// Why [`open_target`] failed.
#[derive(Debug)]
pub enum OpenError {
    /// The open (or `fstat`, `fcntl`) failed: the system's error.
    Open(io::Error),
    /// The path is not a regular file or block device: the message, ready.
    Kind(Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(p: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo {}", p.display());
    }

    #[test]
    fn fifos_directories_and_char_devices_are_refused_files_pass() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("p");
        mkfifo(&fifo);
        let e = check_target("--filename", &fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO") && e.contains("--filename="), "{e}");
        let e = check_target("--filename", d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a directory: name a file inside it"), "{e}");
        let e = check_target("--filename", Path::new("/dev/urandom"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        // fio's sinks are targets.
        check_target("--filename", Path::new("/dev/null")).unwrap();
        check_target("--filename", Path::new("/dev/zero")).unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        check_target("--filename", &f).unwrap();
        check_target("--filename", &d.path().join("new")).unwrap();
    }

    #[test]
    fn opening_a_fifo_returns_at_once_refused() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("p");
        mkfifo(&fifo);
        for write in [false, true] {
            let r = open_target(
                OpenOptions::new().read(!write).write(write),
                0,
                "--filename",
                &fifo,
            );
            match r {
                Err(OpenError::Kind(e)) => assert!(e.to_string().contains("FIFO"), "{e}"),
                other => panic!("{other:?}"),
            }
        }
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let file = open_target(OpenOptions::new().read(true), 0, "--filename", &f).unwrap();
        assert!(!pollwise::sys::fs::is_nonblocking(&file).unwrap());
    }

    #[test]
    fn a_made_up_name_is_opened_without_following_a_link_planted_after_the_check() {
        let d = tempfile::tempdir().unwrap();
        let name = d.path().join("job1.0.0");
        std::fs::write(&name, b"old").unwrap();
        made_up(&name).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::fs::remove_file(&name).unwrap();
        std::os::unix::fs::symlink(&victim, &name).unwrap();
        match open_target(OpenOptions::new().write(true), 0, "--filename", &name) {
            Err(OpenError::Kind(e)) => assert!(e.to_string().contains("symbolic link"), "{e}"),
            other => panic!("opened through the link: {other:?}"),
        }
        assert!(made_up(&name).is_err());
    }
}
