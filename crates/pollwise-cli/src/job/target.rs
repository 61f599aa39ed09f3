//! A job's target: its file laid out (or its device sized), opened, its cache dropped.
//!
//! Rule: a file is laid out with pseudo-random data, as fio lays it out, only after checking
//! that its filesystem has the room and opens it as the job will (O_DIRECT); a failure removes a
//! file it created and cuts back one it extended, so a refused run leaves the disk as it found
//! it. A block device is used as it is. (The file a command makes when no `--filename` is
//! given is the top-level `target` module's.)

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use super::check::{check_in_use, check_job, check_polled_io};
use super::{IoEngine, JobSpec, SIM_DEFAULT_SIZE};
use crate::{Error, Result};

/// What [`check_job`] learned about the target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Bytes used.
    pub size: u64,
    /// Logical block size, for O_DIRECT alignment.
    pub block_size: u32,
    /// The target is a block device.
    pub is_blockdev: bool,
}

/// Creates or extends the file to `size` bytes of random data, as fio lays out files, and
/// returns what it found out about the target. A block device is used as it is.
pub fn prepare_target(spec: &JobSpec) -> Result<Target> {
    if spec.extra.files.len() > 1 && spec.ioengine.has_file() {
        return prepare_targets(spec);
    }
    check_job(spec)?;
    if !spec.ioengine.has_file() {
        let size = match (spec.size, spec.ioengine) {
            (0, IoEngine::Null | IoEngine::Nop) => spec.io_size,
            (0, _) => SIM_DEFAULT_SIZE,
            (s, _) => s,
        };
        return Ok(Target {
            size,
            block_size: 512,
            is_blockdev: false,
        });
    }
    let path = &spec.filename;
    if spec.extra.made_up_names {
        crate::filekind::made_up(path)?;
    }
    // A FIFO would block the open below, a character device never end: refused first.
    crate::filekind::check_target("--filename", path)?;
    check_polled_io(spec)?;
    check_in_use(spec)?;
    let meta = std::fs::metadata(path).ok();
    let is_blockdev = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device());
    // /dev/null or /dev/zero: nothing to lay out; the job's size is its extent.
    if meta.as_ref().is_some_and(crate::filekind::is_null_sink) {
        if spec.size < spec.bs as u64 {
            return Err(Error::Usage(format!(
                "{} has no size of its own: give a --size of at least one block (--bs={})",
                path.display(),
                spec.bs
            )));
        }
        open_target(path, spec.direct, false)?;
        return Ok(Target {
            size: spec.size,
            block_size: 1,
            is_blockdev: false,
        });
    }
    let existing = if is_blockdev {
        let f = open_target(path, false, false)?;
        blockdev_size(&f)?
    } else {
        meta.as_ref().map_or(0, |m| m.len())
    };
    // fio's fill_device on a file: sized from the free space, written (not laid out) from the
    // start; on a block device, the device.
    let fill = spec.extra.fill_device && !is_blockdev;
    let size = if fill {
        crate::fill::fill_size(path, spec.size, spec.bs as u64)?
    } else if spec.size == 0 {
        existing
    } else {
        spec.size
    };
    if is_blockdev && size > existing {
        return Err(Error::Usage(format!(
            "--size={size} is larger than the device {} ({existing} bytes): use a smaller --size",
            path.display()
        )));
    }
    // fio's filesize: the file is that long, whatever part of it the I/O covers.
    let file_len = size.max(spec.extra.filesize.unwrap_or(0));
    if !is_blockdev && existing < file_len && !fill {
        lay_out(path, existing, file_len, spec.direct)?;
    }
    let f = open_target(path, spec.direct, false)?;
    let block_size = if spec.direct {
        logical_block_size(&f, is_blockdev)
    } else {
        1
    };
    if spec.direct && spec.bs % block_size != 0 {
        return Err(Error::Usage(format!(
            "--bs={} is not a multiple of the logical block size ({block_size}) of {}, which --direct=1 needs: use --bs=4k or --direct=0",
            spec.bs,
            path.display()
        )));
    }
    if size < spec.bs as u64 {
        return Err(Error::Usage(format!(
            "{} holds {size} bytes, less than one block of --bs={}: give a larger --size",
            path.display(),
            spec.bs
        )));
    }
    // No report, log or chart may be written over it.
    crate::outfile::protect(path);
    Ok(Target {
        size,
        block_size,
        is_blockdev,
    })
}

/// Several files in one job: each is prepared as a job of its own over its share of the size
/// (fio's `size / nrfiles`, whole stripes of `file_service_type`), with every check a one-file
/// job has (nothing the user owns is overwritten, no mounted device written); the target is
/// their sum.
fn prepare_targets(spec: &JobSpec) -> Result<Target> {
    let (n, per_file) = file_share(spec);
    if per_file == 0 {
        return Err(Error::Usage(format!(
            "--size={} over {n} files is less than one {} stripe on each: give a --size of at least {}",
            spec.size,
            spec.bs,
            n * file_stripe(spec, spec.bs as u64)
        )));
    }
    let mut total = Target {
        size: 0,
        block_size: 1,
        is_blockdev: false,
    };
    for f in &spec.extra.files {
        let mut one = spec.clone();
        one.filename = f.clone();
        one.extra.files = Vec::new();
        one.size = per_file;
        let t = prepare_target(&one)?;
        total.size += per_file;
        total.block_size = total.block_size.max(t.block_size);
        total.is_blockdev |= t.is_blockdev;
    }
    Ok(total)
}

/// The bytes of a job's `0..size` dealt to one file before the next (see
/// `PatternConfig::files`): `file_service_type=roundrobin:N` is N blocks, `sequential` a whole
/// file of `per_file` bytes.
pub(super) fn file_stripe(spec: &JobSpec, per_file: u64) -> u64 {
    match spec.extra.file_switch.unwrap_or(1) {
        0 => per_file,
        k => k * spec.bs as u64,
    }
}

/// How many files a job has and the bytes of I/O on each: fio's `size / nrfiles`, cut to
/// whole stripes.
pub(super) fn file_share(spec: &JobSpec) -> (u64, u64) {
    let n = spec.extra.files.len().max(1) as u64;
    let share = spec.size / n;
    let bs = (spec.bs as u64).max(1);
    let stripe = match spec.extra.file_switch.unwrap_or(1) {
        0 => share / bs * bs,
        _ => file_stripe(spec, share),
    };
    (n, share.checked_div(stripe).map_or(0, |k| k * stripe))
}

/// Bytes free for an unprivileged user on the filesystem that holds (or will hold) `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let dir = if path.exists() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    pollwise::sys::fs::space(&dir).ok().map(|s| s.available)
}

/// The error for a file that cannot be created: its cause and fix from the errno table.
fn create_error(path: &Path, e: &std::io::Error) -> Error {
    let msg = match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "cannot create {}: {}; choose a --filename in a directory you may write",
            path.display(),
            crate::errno::plain(e)
        ),
        _ => format!(
            "cannot create {}: {}",
            path.display(),
            crate::errno::explain(e, crate::errno::Op::Open)
        ),
    };
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOSPC | libc::EIO) => Error::Io(msg),
        _ => Error::Usage(msg),
    }
}

/// Extends `path` from `from` to `to` bytes of pseudo-random data (creating it if needed).
/// Checks first that the filesystem has the room and, for `direct`, that it opens the file
/// with O_DIRECT; on any failure (a signal included) a file it created is removed and one it
/// extended is cut back to its old length.
fn lay_out(path: &Path, from: u64, to: u64, direct: bool) -> Result<()> {
    if let Some(free) = free_bytes(path) {
        if free < to - from {
            return Err(Error::Usage(format!(
                "laying out {} needs {} more bytes but its filesystem has {free} free: give a smaller --size, free space (df -h) or choose another --filename",
                path.display(),
                to - from
            )));
        }
    }
    let (f, created) = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let opened =
                crate::filekind::open_target(OpenOptions::new().write(true), 0, "--filename", path);
            let f = match opened {
                Ok(f) => f,
                Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
                Err(crate::filekind::OpenError::Open(e)) => return Err(create_error(path, &e)),
            };
            (f, false)
        }
        Err(e) => return Err(create_error(path, &e)),
    };
    let r = fill(path, f, from, to, direct);
    if r.is_err() {
        if created {
            let _ = std::fs::remove_file(path);
        } else if let Ok(f) =
            crate::filekind::open_target(OpenOptions::new().write(true), 0, "--filename", path)
        {
            let _ = f.set_len(from);
        }
    }
    r
}

fn fill(path: &Path, mut f: File, from: u64, to: u64, direct: bool) -> Result<()> {
    if direct {
        // The capability first: no point writing a file the job cannot open.
        open_target(path, true, false)?;
    }
    let io = |e: std::io::Error| {
        Error::Io(format!(
            "laying out {}: {}",
            path.display(),
            crate::errno::explain(&e, crate::errno::Op::Write)
        ))
    };
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut rng = pollwise::rng::Rng::new(from);
    let mut left = to - from;
    while left > 0 {
        rng.fill(&mut chunk);
        if crate::signals::interrupted() {
            return Err(Error::interrupted("while laying out the file"));
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(io)?;
        left -= n as u64;
    }
    f.sync_all().map_err(io)?;
    Ok(())
}

fn open_target(path: &Path, direct: bool, writable: bool) -> Result<File> {
    open_target_with(path, direct, writable, 0)
}

/// [`open_target`] with more open flags (fio's `sync`: `O_SYNC`, `O_DSYNC`; `O_NOATIME`, which
/// the kernel refuses with EPERM to one not the file's owner: then it opens without, as fio).
pub(super) fn open_target_with(
    path: &Path,
    direct: bool,
    writable: bool,
    more: i32,
) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(writable);
    let flags = if direct { libc::O_DIRECT } else { 0 } | more;
    // Non-blocking, so a FIFO put in the target's place cannot hang the open (see `filekind`).
    let opened = crate::filekind::open_target(&mut o, flags, "--filename", path);
    let e = match opened {
        Ok(f) => return Ok(f),
        Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
        Err(crate::filekind::OpenError::Open(e)) => e,
    };
    if more & libc::O_NOATIME != 0 && e.raw_os_error() == Some(libc::EPERM) {
        return open_target_with(path, direct, writable, more & !libc::O_NOATIME);
    }
    Err({
        if direct && e.raw_os_error() == Some(libc::EINVAL) {
            Error::Unsupported(format!(
                "cannot open {} with O_DIRECT: its filesystem does not support direct I/O (tmpfs?); put the file on a disk filesystem or use --direct=0",
                path.display()
            ))
        } else if e.kind() == std::io::ErrorKind::PermissionDenied {
            Error::Usage(format!(
                "cannot open {}: permission denied; choose a file you may {}",
                path.display(),
                if writable { "write" } else { "read" }
            ))
        } else if let Some(hint) = e
            .raw_os_error()
            .and_then(|n| crate::errno::hint(n, errno_op(writable)))
        {
            // A system limit or a read-only target: the path is fine.
            let msg = format!(
                "cannot open {}: {}; {hint}",
                path.display(),
                crate::errno::plain(&e)
            );
            match e.raw_os_error() {
                Some(libc::EROFS) => Error::Usage(msg),
                _ => Error::Io(msg),
            }
        } else {
            Error::Usage(format!(
                "cannot open {}: {}; check the path",
                path.display(),
                crate::errno::plain(&e)
            ))
        }
    })
}

/// The errno table's operation for opening the target.
fn errno_op(writable: bool) -> crate::errno::Op {
    if writable {
        crate::errno::Op::Write
    } else {
        crate::errno::Op::Open
    }
}

fn blockdev_size(f: &File) -> Result<u64> {
    pollwise::sys::blockdev::size(f).map_err(|e| {
        Error::Io(format!(
            "cannot read the device's size: {}",
            crate::errno::explain(&e, crate::errno::Op::Other)
        ))
    })
}

fn logical_block_size(f: &File, is_blockdev: bool) -> u32 {
    pollwise::sys::blockdev::logical_block_size(f, is_blockdev)
}

/// fio's `invalidate` (its `__file_invalidate_cache`): drops the page cache of a regular file
/// (`posix_fadvise(POSIX_FADV_DONTNEED)`) or a block device (`BLKFLSBUF`) before the job. As in
/// fio, a failure is said in one line and the job goes on (it then may start warm); other kinds
/// of target have no cache to drop.
pub(super) fn invalidate_cache(file: &File, path: &Path) {
    let Ok(meta) = file.metadata() else {
        return;
    };
    let kind = meta.file_type();
    let err = if kind.is_file() {
        pollwise::sys::fs::drop_cache(file).err()
    } else if std::os::unix::fs::FileTypeExt::is_block_device(&kind) {
        pollwise::sys::blockdev::flush_buffers(file).err()
    } else {
        None
    };
    if let Some(e) = err {
        eprintln!(
            "pollwise: cache invalidation of {} failed: {} (the job goes on, as fio's; --invalidate=0 skips it)",
            path.display(),
            crate::errno::plain(&e)
        );
    }
}
