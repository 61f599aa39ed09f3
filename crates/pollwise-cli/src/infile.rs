//! Every file pollwise reads whole (a job file, `--read_iolog`, `--platform`, a report to plot)
//! is read here, under two rules:
//!
//! - It is a regular file, read under a size cap. A FIFO would block the open or the read until
//!   a writer comes, and a device (`/dev/zero`) never ends: neither has a meaning as one of
//!   these inputs, so both are refused before anything opens them, and a file larger than its
//!   cap is refused before it fills memory. The open is non-blocking and checked again on the
//!   open file (`fstat`), so a FIFO put in the place of a checked file cannot hang it either.
//! - It is remembered, by path and by device and inode, as an input of this run: nothing
//!   pollwise writes (see `outfile`) may be one of them, so a report named like the job file, a
//!   log named like the replayed one or a chart over the report it draws is refused instead of
//!   overwriting what the run reads.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Why an input was not read; its `Display` is the cause, for the caller to put after the
/// file's name and before the fix.
#[derive(Debug)]
pub enum Refused {
    /// The system's error (missing, no permission, ...).
    Io(std::io::Error),
    /// Not a regular file: what it is, in words.
    NotAFile(&'static str),
    /// Larger than the cap (bytes).
    Larger(u64),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(e) => write!(f, "cannot be read: {}", crate::errno::plain(e)),
            Refused::NotAFile(kind) => write!(
                f,
                "is {kind}, not a regular file: pollwise reads this file whole, and {} would never end",
                if kind.contains("FIFO") { "waiting on it" } else { "reading it" }
            ),
            Refused::Larger(cap) => write!(f, "is larger than {}", shown_size(*cap)),
        }
    }
}

impl Refused {
    /// The refusal as a sentence about `name` (`cannot read NAME: ...`, `NAME is a FIFO ...`).
    pub fn about(&self, name: &str) -> String {
        match self {
            Refused::Io(e) => format!("cannot read {name}: {}", crate::errno::plain(e)),
            _ => format!("{name} {self}"),
        }
    }
}

fn shown_size(b: u64) -> String {
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{b} bytes")
    }
}

/// What `m` is, in words, when it is not a regular file.
fn kind(m: &Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Reads the regular file at `path` whole, at most `cap` bytes, and remembers it as an input
/// of this run (`what` names it in messages: `the job file`, `the --read_iolog file`).
pub fn read(what: &str, path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let m = std::fs::metadata(path).map_err(Refused::Io)?;
    check(&m, cap)?;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(Refused::Io)?;
    let m = f.metadata().map_err(Refused::Io)?;
    check(&m, cap)?;
    remember(what, path, &m);
    read_capped(f, cap)
}

/// As [`read`], as UTF-8 text (`None` when it is not).
pub fn read_text(what: &str, path: &Path, cap: u64) -> Result<Option<String>, Refused> {
    read(what, path, cap).map(|b| String::from_utf8(b).ok())
}

fn check(m: &Metadata, cap: u64) -> Result<(), Refused> {
    if let Some(k) = kind(m) {
        return Err(Refused::NotAFile(k));
    }
    if m.len() > cap {
        return Err(Refused::Larger(cap));
    }
    Ok(())
}

/// At most `cap` bytes of `f`: a file that grew past it since its size was looked at is
/// refused too.
fn read_capped(f: File, cap: u64) -> Result<Vec<u8>, Refused> {
    let mut bytes = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::Larger(cap));
    }
    Ok(bytes)
}

/// An input of this run: what it is, its resolved path, its device and inode.
#[derive(Debug, Clone)]
struct Input {
    what: String,
    path: PathBuf,
    id: (u64, u64),
}

static INPUTS: Mutex<Vec<Input>> = Mutex::new(Vec::new());

fn inputs() -> std::sync::MutexGuard<'static, Vec<Input>> {
    // A panic while holding the lock leaves a list that is still valid.
    INPUTS.lock().unwrap_or_else(|p| p.into_inner())
}

fn remember(what: &str, path: &Path, m: &Metadata) {
    let i = Input {
        what: what.to_string(),
        path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        id: (m.dev(), m.ino()),
    };
    let mut all = inputs();
    if !all.iter().any(|j| j.path == i.path && j.id == i.id) {
        all.push(i);
    }
}

/// The input (what it is, its path) that the resolved path `resolved`, or the file of device
/// and inode `id`, is, if it is one of this run's inputs. An inode counts only while the input
/// still has it: a removed input's inode number is given to the next new file.
pub fn input_of(resolved: &Path, id: Option<(u64, u64)>) -> Option<(String, PathBuf)> {
    let still = |i: &Input| {
        std::fs::metadata(&i.path)
            .ok()
            .is_some_and(|m| (m.dev(), m.ino()) == i.id)
    };
    inputs()
        .iter()
        .find(|i| (i.path == resolved && still(i)) || (Some(i.id) == id && still(i)))
        .map(|i| (i.what.clone(), i.path.clone()))
}

/// The input of this run that `path` names (by its resolved path, or by device and inode), if
/// any: (what it is, its path).
pub fn input_at(path: &Path) -> Option<(String, PathBuf)> {
    let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    input_of(&resolved, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_large_files_are_refused_before_they_are_read() {
        let d = tempfile::tempdir().unwrap();
        let e = read("x", Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let fifo = d.path().join("p");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = read("x", &fifo, 10).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'a'; 11]).unwrap();
        let e = read("x", &big, 10).unwrap_err();
        assert!(e.to_string().contains("larger than 10 bytes"), "{e}");
        std::fs::write(&big, b"ok").unwrap();
        assert_eq!(read_text("x", &big, 10).unwrap().as_deref(), Some("ok"));
    }

    #[test]
    fn an_input_is_known_by_path_and_by_inode() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("in.json");
        std::fs::write(&f, b"{}").unwrap();
        read("the --platform file", &f, 10).unwrap();
        let m = std::fs::metadata(&f).unwrap();
        let (what, _) = input_of(Path::new("/nowhere"), Some((m.dev(), m.ino()))).unwrap();
        assert_eq!(what, "the --platform file");
        assert!(input_of(&std::fs::canonicalize(&f).unwrap(), None).is_some());
        std::fs::remove_file(&f).unwrap();
        assert!(input_of(Path::new("/nowhere"), Some((m.dev(), m.ino()))).is_none());
    }
}
