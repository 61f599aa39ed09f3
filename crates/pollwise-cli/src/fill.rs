//! fio's `fill_device` (`fill_fs`) on a file: a sequential write until the file's filesystem
//! is full, then the job ends without an error.
//!
//! fio sets the size to "unlimited" (init.c: `size = -1ULL` without a size), does not lay the
//! file out (filesetup.c `extend_file`) and stops the job at the first `ENOSPC` or `EDQUOT`,
//! clearing the error (backend.c `io_queue_event`, `do_io`). pollwise sizes the job when it
//! starts from the free space its filesystem reports (fio reads the same figure for its ETA,
//! filesetup.c `get_fs_free_counts`), less a small part for the blocks a filesystem keeps for
//! the file's own map, and writes that much from the file's start, extending it as fio does:
//! the job ends by its size where fio's ends at `ENOSPC`, with the filesystem as full.
//!
//! Filling a filesystem is a thing a user does on purpose to a filesystem of its own. pollwise
//! refuses to fill the root filesystem, and any with more than [`FILL_MAX`] to fill: a full `/`
//! stops the machine's other programs, and a fill that large is more likely a mistaken
//! `filename` than a surface scan. A size the filesystem has room for is written as asked,
//! anywhere: no `ENOSPC` can end it, so `fill_device` changes nothing. A block device is
//! written whole (its size is known), with a block device's checks (never one that is mounted).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The most pollwise writes to fill a filesystem: 4 GiB.
pub const FILL_MAX: u64 = 4 << 30;

/// The bytes a `fill_device` job writes to the regular file `path`, from its start: `asked`
/// when the filesystem has room for it (0: no size given), else the filesystem's free space and
/// what the file already holds, in whole blocks of `bs` (refused on `/` and over
/// [`FILL_MAX`]). Creates the file (empty) if it does not exist, as fio's write does.
pub fn fill_size(path: &Path, asked: u64, bs: u64) -> Result<u64> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |what: &str, e: std::io::Error| {
        Error::Usage(format!(
            "--fill_device: cannot {what} {}: {e}",
            dir.display()
        ))
    };
    let space = pollwise::sys::fs::space(&dir).map_err(|e| io("read the free space of", e))?;
    let existing = std::fs::metadata(path).map_or(0, |m| m.len());
    let room = space.available.saturating_add(existing);
    // A filesystem keeps some blocks for a file's own map (extents, indirect blocks): leave
    // 1/4096 of the room for them (1 MiB of 4 GiB), so the job's last write does not meet
    // ENOSPC. On a tmpfs, which keeps none, the job writes the whole blocks fio writes.
    let usable = room.saturating_sub(room / 4096);
    // A size the filesystem has room for: fill_device changes nothing (no ENOSPC to meet).
    if asked != 0 && asked <= usable {
        create(path)?;
        return Ok(asked);
    }
    let dev = std::fs::metadata(&dir).map_err(|e| io("stat", e))?.dev();
    if std::fs::metadata("/").is_ok_and(|m| m.dev() == dev) {
        return Err(Error::Usage(format!(
            "--fill_device would fill the root filesystem ({} is on /): pollwise fills only a filesystem of its own, e.g. a tmpfs (mount -t tmpfs -o size=64m tmpfs DIR) or a loop device's; or give a size it has room for",
            path.display()
        )));
    }
    if usable > FILL_MAX {
        return Err(Error::Usage(format!(
            "--fill_device would write {} MiB to fill {}'s filesystem, more than pollwise fills ({} MiB): fill a smaller filesystem of its own (a tmpfs or a loop device's) or give a size it has room for",
            usable >> 20,
            path.display(),
            FILL_MAX >> 20
        )));
    }
    let size = usable / bs.max(1) * bs.max(1);
    if size == 0 {
        return Err(Error::Usage(format!(
            "--fill_device: {}'s filesystem has no room for one block of --bs={bs} ({} bytes free)",
            path.display(),
            space.available
        )));
    }
    create(path)?;
    Ok(size)
}

/// Opens `path` for writing, creating it empty if it does not exist (never truncating it).
fn create(path: &Path) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|e| {
            Error::Usage(format!(
                "--fill_device: cannot create {}: {e}",
                path.display()
            ))
        })
}
