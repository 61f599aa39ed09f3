//! Filesystem space (`statvfs`), a file's blocking mode (`fcntl`) and its page cache
//! (`posix_fadvise`).

use std::io;
use std::path::Path;

/// Space on a filesystem, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsSpace {
    /// Free for an unprivileged user (`f_bavail` x `f_frsize`).
    pub available: u64,
    /// The filesystem's size (`f_blocks` x `f_frsize`).
    pub total: u64,
}

/// The space of the filesystem holding `path`, which must exist. A path with a NUL byte is
/// `InvalidInput`; otherwise the error is statvfs's.
pub fn space(path: &Path) -> io::Result<FsSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `statvfs` is plain old data (integers only), for which all-zero bytes are a valid
    // value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path that outlives the call, and `st` is a valid, writable
    // `statvfs` that statvfs(3) fills and nothing else aliases.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok(FsSpace {
        available: (st.f_bavail as u64).saturating_mul(frsize),
        total: (st.f_blocks as u64).saturating_mul(frsize),
    })
}

/// The `O_NONBLOCK` flag of `f`'s open file description.
pub fn is_nonblocking(f: &impl std::os::fd::AsRawFd) -> io::Result<bool> {
    // SAFETY: F_GETFL takes no argument and touches no memory; the fd is open for as long as
    // `f` is borrowed.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags & libc::O_NONBLOCK != 0)
}

/// Sets or clears `O_NONBLOCK` on `f`'s open file description (a file opened non-blocking so
/// that a FIFO cannot block the open, then found to be a regular file or a device).
pub fn set_nonblocking(f: &impl std::os::fd::AsRawFd, on: bool) -> io::Result<()> {
    let fd = f.as_raw_fd();
    // SAFETY: as in `is_nonblocking`.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let want = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if want != flags {
        // SAFETY: F_SETFL takes an int of flags and touches no memory; the fd is open for as
        // long as `f` is borrowed.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, want) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Drops the page cache of the whole file `f` (`posix_fadvise(POSIX_FADV_DONTNEED)`): dirty
/// pages are written back first by the kernel only if it chooses; clean ones are dropped.
pub fn drop_cache(f: &impl std::os::fd::AsRawFd) -> io::Result<()> {
    // SAFETY: posix_fadvise takes a descriptor and plain integers; a bad descriptor fails with
    // EBADF.
    match unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonblocking_is_set_and_cleared() {
        let f = tempfile::tempfile().unwrap();
        assert!(!is_nonblocking(&f).unwrap());
        set_nonblocking(&f, true).unwrap();
        assert!(is_nonblocking(&f).unwrap());
        set_nonblocking(&f, false).unwrap();
        assert!(!is_nonblocking(&f).unwrap());
    }

    #[test]
    fn a_directory_has_a_sized_filesystem_and_a_missing_path_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let s = space(d.path()).unwrap();
        assert!(s.total > 0, "{s:?}");
        assert!(s.available <= s.total, "{s:?}");
        let e = space(&d.path().join("no-such-file")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let e = space(Path::new("a\0b")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn space_agrees_with_df() {
        let d = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("df")
            .args(["--output=size", "-B1"])
            .arg(d.path())
            .output()
            .expect("df (coreutils) runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let size: u64 = text.lines().nth(1).unwrap().trim().parse().unwrap();
        assert_eq!(space(d.path()).unwrap().total, size);
    }
}
