//! Block devices and direct I/O: a device's size, its logical block size, and a file's direct
//! I/O alignment (`statx` with `STATX_DIOALIGN`, Linux 6.1).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `BLKGETSIZE64 = _IOR(0x12, 114, size_t)`.
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
/// `BLKSSZGET = _IO(0x12, 104)`.
const BLKSSZGET: libc::c_ulong = 0x1268;
/// `STATX_DIOALIGN`.
const STATX_DIOALIGN: u32 = 0x0000_2000;

/// The size in bytes of the block device open as `f` (`BLKGETSIZE64`).
pub fn size(f: &File) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer we pass, which is live.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// The logical block size of the block device open as `f` (`BLKSSZGET`).
pub fn sector_size(f: &File) -> io::Result<u32> {
    let mut bs: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer we pass, which is live.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKSSZGET, &mut bs as *mut libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if bs <= 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(bs as u32)
}

/// The direct I/O offset alignment of the file open as `f`, if the kernel and filesystem say
/// (`statx` `STATX_DIOALIGN`); `None` when they do not.
pub fn dio_offset_align(f: &File) -> io::Result<Option<u32>> {
    // SAFETY: struct statx is plain C data for which all-zero bytes are valid.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx fills the struct we provide; an empty (NUL-terminated, static) path with
    // AT_EMPTY_PATH names the fd itself.
    let r = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_DIOALIGN,
            &mut stx,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if stx.stx_mask & STATX_DIOALIGN != 0 && stx.stx_dio_offset_align > 0 {
        Ok(Some(stx.stx_dio_offset_align))
    } else {
        Ok(None)
    }
}

/// The alignment direct I/O on `f` needs: the device's logical block size for a block device,
/// the file's `STATX_DIOALIGN` offset alignment otherwise; 512 when neither can be learned.
pub fn logical_block_size(f: &File, is_blockdev: bool) -> u32 {
    let got = if is_blockdev {
        sector_size(f).ok()
    } else {
        dio_offset_align(f).ok().flatten()
    };
    got.unwrap_or(512)
}

/// Writes back and drops the buffer cache of block device `f` (`BLKFLSBUF`; root only).
pub fn flush_buffers(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // BLKFLSBUF is _IO(0x12, 97).
    const BLKFLSBUF: libc::c_ulong = 0x1261;
    // SAFETY: BLKFLSBUF takes no argument beyond the descriptor, which `f` owns for the call.
    if unsafe { libc::ioctl(f.as_raw_fd(), BLKFLSBUF as _, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `BLKDISCARD = _IO(0x12, 119)`.
const BLKDISCARD: libc::c_ulong = 0x1277;
/// The block layer's io_uring discard command (`BLOCK_URING_CMD_DISCARD = _IO(0x12, 0)`, Linux
/// 6.12): an `IORING_OP_URING_CMD` with the range's start in `addr` and its length in `addr3`.
pub const BLOCK_URING_CMD_DISCARD: u32 = 0x1200;

/// Whether `fd` is a block device (`fstat`); `false` when it cannot be told.
pub fn is_blockdev_fd(fd: std::os::fd::RawFd) -> bool {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat through the pointer, which is live; a bad fd is an error.
    let r = unsafe { libc::fstat(fd, &mut st) };
    r == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFBLK
}

/// Trims `len` bytes at `offset` of `fd` synchronously, as fio's `do_io_u_trim`: a block device
/// is discarded (`BLKDISCARD`), a file gets a hole (`fallocate(PUNCH_HOLE | KEEP_SIZE)`).
/// Returns 0 or `-errno`, as a completion's result.
pub fn trim_sync(fd: std::os::fd::RawFd, offset: u64, len: u64) -> i32 {
    let r = if is_blockdev_fd(fd) {
        let range = [offset, len];
        // SAFETY: BLKDISCARD reads two u64 (start, length) through the pointer, which is live.
        unsafe { libc::ioctl(fd, BLKDISCARD, range.as_ptr()) }
    } else {
        // SAFETY: fallocate takes only integers; a bad fd or range is an error, not UB.
        unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        }
    };
    if r < 0 {
        -io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_not_a_block_device() {
        let f = tempfile::tempfile().unwrap();
        let e = size(&f).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
        let a = logical_block_size(&f, false);
        assert!(a.is_power_of_two() && a >= 1, "{a}");
        if let Some(a) = dio_offset_align(&f).unwrap() {
            assert_eq!(logical_block_size(&f, false), a);
        }
    }
}
