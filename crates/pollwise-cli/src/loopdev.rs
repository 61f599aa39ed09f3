//! The files under the system's loop devices, known by device and inode.
//!
//! A file that backs a loop device is the same data whatever name reaches it: the path the
//! device was set up with, a hard link, a bind mount, or a name left after the first was
//! removed. So a loop device's backing file is known by its `(st_dev, st_ino)`: the kernel's own
//! record of it (`LOOP_GET_STATUS64`'s `lo_device` and `lo_inode`, which no rename or unlink
//! changes), or, where the device cannot be opened, the file that sysfs's `loop/backing_file`
//! names, looked at with `stat(2)`.

#![allow(unsafe_code)]

use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

/// `LOOP_GET_STATUS64` (linux/loop.h).
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// `struct loop_info64` (linux/loop.h): only the first two fields are read; the rest are laid
/// out for the kernel to fill.
#[repr(C)]
#[allow(dead_code)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// One loop device with a backing file.
#[derive(Debug, Clone, PartialEq)]
pub struct Backed {
    /// Its kernel name (`loop0`).
    pub name: String,
    /// Its device number (major, minor).
    pub dev: (u32, u32),
    /// The backing file's device (major, minor) and inode.
    pub file: ((u32, u32), u64),
    /// The backing file's path, as sysfs names it (for messages).
    pub path: String,
}

/// The kernel's `huge_encode_dev` undone: (major, minor).
fn decode_dev(d: u64) -> (u32, u32) {
    let major = ((d & 0xfff00) >> 8) as u32;
    let minor = ((d & 0xff) | ((d >> 12) & 0xfff00)) as u32;
    (major, minor)
}

/// The backing file's (device, inode) as the kernel records it, asking the device node.
fn status(node: &std::path::Path) -> Option<((u32, u32), u64)> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(node)
        .ok()?;
    // SAFETY: `LoopInfo64` is plain integers and byte arrays, for which all zeroes is a value.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: `f` is an open descriptor for the whole call; LOOP_GET_STATUS64 writes one
    // `struct loop_info64`, which `LoopInfo64` lays out field for field (`repr(C)`), into the
    // memory `info` owns, and reads nothing else.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) };
    (r == 0).then(|| (decode_dev(info.lo_device), info.lo_inode))
}

/// Every loop device that has a backing file, with that file's device and inode.
pub fn backed() -> Vec<Backed> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let sys = e.path();
        let read = |f: &str| std::fs::read_to_string(sys.join(f)).ok();
        let Some(path) = read("loop/backing_file").map(|s| s.trim().to_string()) else {
            continue;
        };
        let Some(dev) = read("dev").and_then(|d| {
            let (a, b) = d.trim().split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        }) else {
            continue;
        };
        let node = PathBuf::from(format!("/dev/{name}"));
        let by_stat = || {
            let m = std::fs::metadata(path.trim_end_matches(" (deleted)")).ok()?;
            Some(((libc::major(m.dev()), libc::minor(m.dev())), m.ino()))
        };
        if let Some(file) = status(&node).or_else(by_stat) {
            out.push(Backed {
                name,
                dev,
                file,
                path,
            });
        }
    }
    out
}

/// The loop devices whose backing file is `m`'s file (by device and inode).
pub fn backing(m: &std::fs::Metadata) -> Vec<Backed> {
    let id = ((libc::major(m.dev()), libc::minor(m.dev())), m.ino());
    backed().into_iter().filter(|b| b.file == id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_decode_as_the_kernel_encodes_them() {
        // new_encode_dev(MKDEV(259, 3)) and MKDEV(8, 300).
        assert_eq!(decode_dev((259 << 8) | 3), (259, 3));
        assert_eq!(
            decode_dev((300 & 0xff) | (8 << 8) | ((300 & !0xff) << 12)),
            (8, 300)
        );
    }

    #[test]
    fn the_kernel_struct_has_its_size() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    }
}
