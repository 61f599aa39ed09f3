//! Every file pollwise writes for the user (the report's `--output`, fio's logs, `--plot`'s
//! charts, calibrate's `--output`) is opened here, under one rule: nothing the user owns is
//! overwritten by accident.
//!
//! - An output is never a job's target: not the same path, not a path that resolves to it (a
//!   symbolic or hard link), checked before the run ([`check_outputs`]) and again, by inode,
//!   when the file is opened (targets are registered with [`protect`]).
//! - A symbolic link is not written through: another user may have planted it in a shared
//!   directory. The exception is a link to something that stores nothing (a pipe, a socket,
//!   `/dev/null`, a terminal), which is what `/dev/stdout` is.
//! - A whole file (a report, a chart) is written to a new file beside it (`O_EXCL`), synced and
//!   renamed over the name: a full disk or a signal leaves the old file, never an empty or
//!   half-written one ([`write_whole`]).
//! - A streamed file (a log) is written the same way, a new file beside the name renamed over
//!   it when the stream is committed ([`create_stream`]): a full disk leaves the old log, never
//!   an emptied one.
//! - A block device is never an output; a FIFO must have a reader when it is opened (opening
//!   it would block).

use std::collections::HashMap;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{Error, Result};

/// A job's target, as registered by [`protect`]: its resolved path and, if it exists, its
/// device and inode.
#[derive(Debug, Clone)]
struct Protected {
    path: PathBuf,
    id: Option<(u64, u64)>,
}

static TARGETS: Mutex<Vec<Protected>> = Mutex::new(Vec::new());

fn targets() -> std::sync::MutexGuard<'static, Vec<Protected>> {
    // A panic while holding the lock leaves a list that is still valid.
    TARGETS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `target` (a job's file or device) as a file no output may be.
pub fn protect(target: &Path) {
    if target.as_os_str().is_empty() {
        return;
    }
    let p = Protected {
        path: resolve(target),
        id: std::fs::metadata(target).ok().map(|m| (m.dev(), m.ino())),
    };
    let mut t = targets();
    if !t.iter().any(|q| q.path == p.path && q.id == p.id) {
        t.push(p);
    }
}

/// `path` made absolute with its directory's links resolved (and its own, if it exists), so
/// that two names of one file compare equal.
pub fn resolve(path: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// `path` for messages: escaped and cut (see [`crate::error::shown`]).
fn show(path: &Path) -> String {
    crate::error::shown(&path.display().to_string()).into_owned()
}

/// The output `path` as messages name it: `--output=PATH` for an option, `the chart PATH`
/// for a file an option's value led to (`what` has a space).
fn named(what: &str, path: &Path) -> String {
    if !what.contains(' ') {
        format!("{what}={}", show(path))
    } else {
        format!("{what} {}", show(path))
    }
}

/// Whether a link that resolves to `m` may be written through: it stores nothing (a pipe, a
/// socket, `/dev/null`, a terminal).
fn harmless(m: &Metadata) -> bool {
    let t = m.file_type();
    if t.is_fifo() || t.is_socket() {
        return true;
    }
    if !t.is_char_device() {
        return false;
    }
    let (major, minor) = (libc::major(m.rdev()), libc::minor(m.rdev()));
    // /dev/null; the tty and pty majors (4, 5, 136-143).
    (major, minor) == (1, 3) || matches!(major, 4 | 5 | 136..=143)
}

/// The target `m` (or the resolved `path`) is, if any, or else the input of this run it is
/// (a job file, a replayed log, a platform file, a report to plot: see [`crate::infile`]), in
/// words: `the job's target T`, `the job file J, which this run reads`.
fn target_of(path: &Path, m: Option<&Metadata>) -> Option<String> {
    let resolved = resolve(path);
    let id = m.map(|m| (m.dev(), m.ino()));
    // An inode is only the target's while the target still has it: a removed target's inode
    // number is given to the next new file.
    let still = |t: &Protected| std::fs::metadata(&t.path).ok().map(|m| (m.dev(), m.ino())) == t.id;
    let target = targets()
        .iter()
        .find(|t| t.path == resolved || (id.is_some() && t.id == id && still(t)))
        .map(|t| format!("the job's target {}", show(&t.path)));
    target.or_else(|| {
        crate::infile::input_of(&resolved, id)
            .map(|(what, p)| format!("{what} {}, which this run reads", show(&p)))
    })
}

fn is_target_error(what: &str, path: &Path, target: &str) -> Error {
    Error::Usage(format!(
        "{} is {target}: writing it would overwrite that data; name another file",
        named(what, path),
    ))
}

/// The caller's own descriptor `path` names (`/dev/stdout`, `/dev/stderr`, `/dev/fd/1`,
/// `/proc/self/fd/2`): 1 or 2. These links are the system's, not planted; what they lead to
/// (a terminal, a pipe, a file the shell opened) is written in place, through the descriptor
/// itself, so a `>>` append or a pipe works as it does for fio.
fn caller_fd(path: &Path) -> Option<i32> {
    match path.to_str()? {
        "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(1),
        "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(2),
        _ => None,
    }
}

/// A new descriptor for the caller's descriptor `fd` (1 or 2), as a file.
fn dup_caller(what: &str, path: &Path, fd: i32) -> Result<File> {
    use std::os::fd::AsFd as _;
    let owned = if fd == 1 {
        std::io::stdout().as_fd().try_clone_to_owned()
    } else {
        std::io::stderr().as_fd().try_clone_to_owned()
    };
    owned
        .map(File::from)
        .map_err(|e| open_error(what, path, &e))
}

/// Whether an output at `path` is written in place rather than replaced whole: the caller's
/// descriptor, a pipe, a terminal, `/dev/null`.
pub fn in_place(path: &Path) -> bool {
    caller_fd(path).is_some() || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// What `path` is now, before it is opened: checks the rules that do not need the open file.
/// Returns the metadata of an existing file (a link's target for a harmless link).
fn check_before_open(what: &str, path: &Path) -> Result<Option<Metadata>> {
    if path.as_os_str().is_empty() {
        return Err(Error::Usage(format!("{what} needs a file name")));
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(Error::Usage(format!(
            "{} names a directory: name a file in it",
            named(what, path)
        )));
    }
    if caller_fd(path).is_some() {
        // Not a planted link; what it leads to may still be a target or an input.
        let m = std::fs::metadata(path).map_err(|e| open_error(what, path, &e))?;
        if let Some(t) = target_of(path, Some(&m)) {
            return Err(is_target_error(what, path, &t));
        }
        return Ok(Some(m));
    }
    let lm = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(t) = target_of(path, None) {
                return Err(is_target_error(what, path, &t));
            }
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
                return Err(Error::Usage(format!(
                    "{}: its directory {} does not exist: create it or name a file in another",
                    named(what, path),
                    show(dir)
                )));
            }
            return Ok(None);
        }
        Err(e) => return Err(open_error(what, path, &e)),
    };
    let m = if lm.file_type().is_symlink() {
        let followed = std::fs::metadata(path).ok();
        if let Some(t) = target_of(path, followed.as_ref()) {
            return Err(is_target_error(what, path, &t));
        }
        match followed {
            Some(m) if harmless(&m) => m,
            _ => {
                return Err(Error::Usage(format!(
                    "{} is a symbolic link: pollwise does not write through links (another user may have planted it); remove the link or name another file",
                    named(what, path)
                )))
            }
        }
    } else {
        lm
    };
    if let Some(t) = target_of(path, Some(&m)) {
        return Err(is_target_error(what, path, &t));
    }
    let ft = m.file_type();
    if ft.is_dir() {
        return Err(Error::Usage(format!(
            "{} is a directory: name a file",
            named(what, path)
        )));
    }
    if ft.is_block_device() {
        return Err(Error::Usage(format!(
            "{} is a block device: pollwise writes reports and logs to files; name a file",
            named(what, path)
        )));
    }
    // A mounted filesystem's image, by any name (known by device and inode).
    if let Some(why) = ft
        .is_file()
        .then(|| crate::device::write_hazard(path))
        .flatten()
    {
        return Err(Error::Usage(format!(
            "{} {why}: replacing it would lose that data; name another file",
            named(what, path)
        )));
    }
    Ok(Some(m))
}

/// Opens an existing file that stores nothing (a pipe, a terminal, `/dev/null`), following a
/// link to it, for writing. Opening a FIFO blocks until a reader comes, so it is first opened
/// without blocking (refused when nothing reads it); that open is kept until the blocking one
/// has returned, so that the reader never sees the writers all gone (an end of file).
fn open_special(what: &str, path: &Path, m: &Metadata) -> Result<File> {
    let open = |flags: i32| {
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC | flags)
            .open(path)
    };
    if !m.file_type().is_fifo() {
        return open(0).map_err(|e| open_error(what, path, &e));
    }
    let probe = open(libc::O_NONBLOCK).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENXIO) {
            Error::Usage(format!(
                "{} is a FIFO that nothing reads: start its reader first, or name a file",
                named(what, path)
            ))
        } else {
            open_error(what, path, &e)
        }
    })?;
    let f = open(0).map_err(|e| open_error(what, path, &e));
    drop(probe);
    f
}

fn open_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    let msg = format!(
        "cannot write {}: {}",
        named(what, path),
        crate::errno::explain(e, crate::errno::Op::OutputFile)
    );
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EIO | libc::EMFILE | libc::ENFILE | libc::EDQUOT) => {
            Error::Io(msg)
        }
        Some(libc::ELOOP) => Error::Usage(format!(
            "{} is a symbolic link: pollwise does not write through links (another user may have planted it); remove the link or name another file",
            named(what, path)
        )),
        _ => Error::Usage(format!("{msg}; choose a file in a directory you may write")),
    }
}

/// Checks, before a run, that none of `outputs` (what, path) is one of `targets`, resolves to
/// one, is a symbolic link that may not be followed, a directory or a block device, and that
/// no two outputs are the same file. (A FIFO's reader is asked for when it is opened: asking
/// earlier would end the reader's input.)
pub fn check_outputs(outputs: &[(String, PathBuf)], targets: &[PathBuf]) -> Result<()> {
    let tids: Vec<(PathBuf, Option<(u64, u64)>)> = targets
        .iter()
        .filter(|t| !t.as_os_str().is_empty())
        .map(|t| {
            (
                resolve(t),
                std::fs::metadata(t).ok().map(|m| (m.dev(), m.ino())),
            )
        })
        .collect();
    let mut seen: HashMap<PathBuf, (&str, &Path)> = HashMap::new();
    for (what, path) in outputs {
        // The target first: a link to it is named as the target, not as a link.
        let r = resolve(path);
        let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        if let Some((t, _)) = tids
            .iter()
            .find(|(t, tid)| *t == r || (id.is_some() && *tid == id))
        {
            return Err(is_target_error(
                what,
                path,
                &format!("the job's target {}", show(t)),
            ));
        }
        let m = check_before_open(what, path)?;
        let special =
            caller_fd(path).is_some() || m.as_ref().is_some_and(|m| !m.file_type().is_file());
        if !special {
            if let Some((w, p)) = seen.get(&r) {
                return Err(Error::Usage(format!(
                    "{} and {} are the same file: give them different names",
                    named(what, path),
                    named(w, p)
                )));
            }
            seen.insert(r, (what, path));
        }
    }
    Ok(())
}

/// Opens a file to stream into (a log): never through a symbolic link that stores something,
/// never a target or an input. A regular file is written as a new file beside the name and
/// renamed over it by [`Stream::commit`], so a full disk or a failed run leaves the old file as
/// it was, never an emptied or half-written one; a pipe, a terminal or `/dev/null` is written in
/// place.
pub fn create_stream(what: &str, path: &Path) -> Result<Stream> {
    let m = check_before_open(what, path)?;
    if let Some(fd) = caller_fd(path) {
        return Ok(Stream {
            what: what.to_string(),
            path: path.to_path_buf(),
            to: To::InPlace(dup_caller(what, path, fd)?),
        });
    }
    if let Some(m) = m.as_ref().filter(|m| !m.file_type().is_file()) {
        // A harmless link or a pipe, terminal, /dev/null named directly: nothing to replace.
        return Ok(Stream {
            what: what.to_string(),
            path: path.to_path_buf(),
            to: To::InPlace(open_special(what, path, m)?),
        });
    }
    let mode = m.as_ref().map(|m| m.mode() & 0o777);
    let tmp =
        NewFile::beside(path, mode.unwrap_or(0o666)).map_err(|e| open_error(what, path, &e))?;
    Ok(Stream {
        what: what.to_string(),
        path: path.to_path_buf(),
        to: To::Beside(tmp, mode),
    })
}

/// A file being streamed (see [`create_stream`]).
#[derive(Debug)]
pub struct Stream {
    what: String,
    path: PathBuf,
    to: To,
}

#[derive(Debug)]
enum To {
    /// A pipe, a terminal or `/dev/null`.
    InPlace(File),
    /// A new file beside the name, and the mode of the file it replaces, if any.
    Beside(NewFile, Option<u32>),
}

impl Stream {
    fn shared(&self) -> &File {
        match &self.to {
            To::InPlace(f) => f,
            To::Beside(t, _) => &t.file,
        }
    }

    fn file(&mut self) -> &mut File {
        match &mut self.to {
            To::InPlace(f) => f,
            To::Beside(t, _) => &mut t.file,
        }
    }

    /// Puts what was written in place: synced and renamed over the name (once; a second call
    /// does nothing). Not called, the stream's new file is removed when it is dropped.
    pub fn commit(&mut self) -> Result<()> {
        let (what, path) = (&self.what, &self.path);
        let To::Beside(tmp, mode) = &mut self.to else {
            return Ok(());
        };
        if tmp.keep {
            return Ok(());
        }
        tmp.file
            .sync_all()
            .and_then(|_| match mode {
                // The mode asked for was cut by the umask; a replaced file keeps its own.
                Some(m) => tmp
                    .file
                    .set_permissions(std::fs::Permissions::from_mode(*m)),
                None => Ok(()),
            })
            .map_err(|e| open_error(what, path, &e))?;
        // The name may have become a target or an input meanwhile: checked once more.
        if let Some(t) = target_of(path, std::fs::symlink_metadata(path).ok().as_ref()) {
            return Err(is_target_error(what, path, &t));
        }
        std::fs::rename(&tmp.path, path).map_err(|e| open_error(what, path, &e))?;
        tmp.keep = true;
        Ok(())
    }
}

impl std::io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

/// Written through a shared reference, as a `&File` is (a report goes on after the interim
/// ones through the same open file).
impl std::io::Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.shared().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.shared().flush()
    }
}

/// Writes `bytes` as the whole of `path`: to a new file beside it (`O_EXCL | O_NOFOLLOW`, the old file's
/// mode, or 0666 less the umask), synced, then renamed over the name. On any failure the new
/// file is removed and the old one is left as it was. A harmless link, a pipe or a terminal is
/// written in place.
pub fn write_whole(what: &str, path: &Path, bytes: &[u8]) -> Result<()> {
    let m = check_before_open(what, path)?;
    let in_place = match caller_fd(path) {
        Some(fd) => Some(dup_caller(what, path, fd)?),
        None => match m.as_ref().filter(|m| !m.file_type().is_file()) {
            Some(m) => Some(open_special(what, path, m)?),
            None => None,
        },
    };
    if let Some(mut f) = in_place {
        // The caller's descriptor, a pipe or a terminal: written in place, nothing to sync.
        return f
            .write_all(bytes)
            .and_then(|_| f.flush())
            .map_err(|e| open_error(what, path, &e));
    }
    let mode = m.as_ref().map_or(0o666, |m| m.mode() & 0o777);
    let mut tmp = NewFile::beside(path, mode).map_err(|e| open_error(what, path, &e))?;
    let f = &mut tmp.file;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| {
            // The mode asked for was cut by the umask; an existing file keeps its own.
            match &m {
                Some(_) => f.set_permissions(std::fs::Permissions::from_mode(mode)),
                None => Ok(()),
            }
        })
        .map_err(|e| open_error(what, path, &e))?;
    // The name may have become a target meanwhile: checked once more. (It may also have become
    // a link: rename replaces the name itself, never what a link points to.)
    if let Some(t) = target_of(path, std::fs::symlink_metadata(path).ok().as_ref()) {
        return Err(is_target_error(what, path, &t));
    }
    std::fs::rename(&tmp.path, path).map_err(|e| open_error(what, path, &e))?;
    tmp.keep = true;
    Ok(())
}

/// A new file beside an output (`.NAME.PID.N.tmp`, created with `O_EXCL | O_NOFOLLOW`),
/// removed on drop unless kept.
#[derive(Debug)]
struct NewFile {
    path: PathBuf,
    file: File,
    keep: bool,
}

impl NewFile {
    fn beside(path: &Path, mode: u32) -> std::io::Result<NewFile> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut tries = 0;
        loop {
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = dir.join(format!(".{name}.{}.{nanos:x}{n}.tmp", std::process::id()));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&p)
            {
                Ok(file) => {
                    return Ok(NewFile {
                        path: p,
                        file,
                        keep: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                    tries += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_file_replaces_and_keeps_the_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.txt");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_whole("--output", &p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o640);
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_are_refused_unless_harmless() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_whole("--output", &link, b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = create_stream("--write_lat_log", &link)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let null = d.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        write_whole("--output", &null, b"x").unwrap();
        create_stream("--write_lat_log", &null).unwrap();
    }

    #[test]
    fn a_target_is_never_an_output() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("data.bin");
        std::fs::write(&t, "data").unwrap();
        let hard = d.path().join("hard");
        std::fs::hard_link(&t, &hard).unwrap();
        protect(&t);
        for p in [&t, &hard] {
            let e = write_whole("--output", p, b"x").unwrap_err().to_string();
            assert!(e.contains("target"), "{e}");
            let e = create_stream("--write_bw_log", p)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("target"), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "data");
        let e = check_outputs(
            &[("--output".into(), d.path().join("./data.bin"))],
            std::slice::from_ref(&t),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("target"), "{e}");
    }

    #[test]
    fn two_outputs_may_not_be_one_file() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let e = check_outputs(
            &[
                ("--output".into(), a.clone()),
                ("--write_lat_log".into(), a),
            ],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("same file"), "{e}");
    }
}
