//! The block device under a target, and its queue settings from sysfs.
//!
//! Found as fio's `disk_util` finds it: the file's `st_dev` names a device in
//! `/sys/dev/block`; a partition leads to its disk, a loop device to the device under its
//! backing file; a filesystem without a device of its own (btrfs, overlay) is looked up in
//! `/proc/self/mountinfo`. The reports state it; job checks ask it whether polled I/O can work.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The block device a target lives on, and its queue settings from sysfs.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Kernel name of the whole disk (`vda`, `nvme0n1`).
    pub name: String,
    /// How it was reached from the target: `partition vda1`, `loop0 backing file /x`, ...
    pub via: Vec<String>,
    /// `queue/scheduler` (the active one, in brackets in sysfs).
    pub scheduler: Option<String>,
    /// `queue/nr_requests`.
    pub nr_requests: Option<u64>,
    /// `queue/io_poll`.
    pub io_poll: Option<u64>,
    /// `queue/io_poll_delay`.
    pub io_poll_delay: Option<i64>,
    /// `queue/rotational`.
    pub rotational: Option<u64>,
    /// `queue/logical_block_size`.
    pub logical_block_size: Option<u64>,
}

pub(crate) fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

pub(crate) fn read_num<T: std::str::FromStr>(p: &Path) -> Option<T> {
    read_trim(p)?.parse().ok()
}

fn dev_of(major: u32, minor: u32) -> String {
    format!("{major}:{minor}")
}

/// The (major, minor) of the device holding `path`: the device itself for a block device,
/// else the filesystem's; a path that does not exist yet is looked up through its directory.
fn st_dev(path: &Path) -> Option<(u32, u32)> {
    let mut p = path.to_path_buf();
    let meta = loop {
        match std::fs::metadata(&p) {
            Ok(m) => break m,
            Err(_) => {
                let parent = p.parent()?.to_path_buf();
                p = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent
                };
            }
        }
    };
    let d = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    Some((libc::major(d), libc::minor(d)))
}

/// The mount source of the filesystem whose device number is `dev` (for filesystems such as
/// btrfs whose `st_dev` is not a block device).
fn mount_source(dev: (u32, u32)) -> Option<PathBuf> {
    let t = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = dev_of(dev.0, dev.1);
    t.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(2) != Some(&want.as_str()) {
            return None;
        }
        let dash = f.iter().position(|x| *x == "-")?;
        let src = f.get(dash + 2)?;
        src.starts_with("/dev/").then(|| PathBuf::from(src))
    })
}

/// The whole disk under `path`, through partitions and loop devices.
pub fn device_of(path: &Path) -> Result<Device, String> {
    let mut dev = st_dev(path).ok_or_else(|| format!("cannot stat {}", path.display()))?;
    let mut via = Vec::new();
    for _ in 0..8 {
        let link = PathBuf::from(format!("/sys/dev/block/{}", dev_of(dev.0, dev.1)));
        let Ok(sys) = std::fs::canonicalize(&link) else {
            match mount_source(dev) {
                Some(src) => {
                    via.push(format!("filesystem on {}", src.display()));
                    dev = st_dev(&src).ok_or_else(|| format!("cannot stat {}", src.display()))?;
                    continue;
                }
                None => {
                    return Err(format!(
                        "the filesystem of {} (device {}) has no block device (tmpfs or overlay?)",
                        path.display(),
                        dev_of(dev.0, dev.1)
                    ))
                }
            }
        };
        let mut disk = sys.clone();
        if sys.join("partition").exists() {
            let name = sys.file_name().unwrap_or_default().to_string_lossy();
            via.push(format!("partition {name}"));
            disk = sys.parent().map(Path::to_path_buf).unwrap_or(sys.clone());
        }
        let name = disk
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if let Some(backing) = read_trim(&disk.join("loop/backing_file")) {
            via.push(format!("{name} backing file {backing}"));
            dev = st_dev(Path::new(&backing))
                .ok_or_else(|| format!("cannot stat {name}'s backing file {backing}"))?;
            continue;
        }
        let q = disk.join("queue");
        let scheduler = read_trim(&q.join("scheduler")).map(|s| {
            s.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or(s)
        });
        return Ok(Device {
            name,
            via,
            scheduler,
            nr_requests: read_num(&q.join("nr_requests")),
            io_poll: read_num(&q.join("io_poll")),
            io_poll_delay: read_num(&q.join("io_poll_delay")),
            rotational: read_num(&q.join("rotational")),
            logical_block_size: read_num(&q.join("logical_block_size")),
        });
    }
    Err("too many loop devices stacked".into())
}

/// Why writing `path` would damage data the system is using, if it would (fio's
/// `allow_mounted_write` guard, and more):
///
/// - a block device that is mounted, or one of whose partitions is (`/proc/self/mountinfo`, by
///   device number and by mount source), that is swap (`/proc/swaps`), that another device is
///   built on (`holders/`: device-mapper, md, LVM), or that the kernel refuses an exclusive
///   open (`O_EXCL`: claimed by a filesystem in another mount namespace, a RAID, ...);
/// - a block device that holds a filesystem, swap or partition-table signature, mounted or not
///   (the magic numbers `blkid` reads, see [`signature`]);
/// - a regular file that backs a loop device in any of those uses.
pub fn write_hazard(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.file_type().is_block_device() {
        let dev = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
        in_use(path, dev)
            .or_else(|| backed_loop_in_use(path))
            .or_else(|| {
                read_head(path)
                    .and_then(|head| signature(&head))
                    .map(|s| format!("holds {s}"))
            })
    } else if meta.is_file() {
        backed_loop_in_use(path)
    } else {
        None
    }
}

/// The devices of `dev` and its partitions, with their kernel names.
fn with_partitions(dev: (u32, u32)) -> Vec<((u32, u32), String)> {
    let sys = PathBuf::from(format!("/sys/dev/block/{}", dev_of(dev.0, dev.1)));
    let name = std::fs::canonicalize(&sys)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dev_of(dev.0, dev.1));
    let mut out = vec![(dev, name)];
    if let Ok(rd) = std::fs::read_dir(&sys) {
        for e in rd.flatten() {
            let p = e.path();
            if !p.join("partition").exists() {
                continue;
            }
            let parsed = read_trim(&p.join("dev")).and_then(|d| {
                let (a, b) = d.split_once(':')?;
                Some((a.parse().ok()?, b.parse().ok()?))
            });
            if let Some(d) = parsed {
                out.push((d, e.file_name().to_string_lossy().into_owned()));
            }
        }
    }
    out
}

/// The device number of the block device at `p`, if it is one.
fn rdev_of(p: &Path) -> Option<(u32, u32)> {
    let m = std::fs::metadata(p).ok()?;
    m.file_type()
        .is_block_device()
        .then(|| (libc::major(m.rdev()), libc::minor(m.rdev())))
}

/// `mountinfo`'s escapes (`\040` for a space) undone.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let octal = |d: &[u8]| -> Option<u8> {
        let v = d.iter().try_fold(0u32, |v, c| {
            (b'0'..=b'7')
                .contains(c)
                .then(|| v * 8 + u32::from(c - b'0'))
        })?;
        u8::try_from(v).ok()
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Some(v) = octal(&b[i + 1..i + 4]) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where one of `devs` is mounted, from `mountinfo` text: (the device's name, the mount
/// point, the filesystem type).
fn mounted(mountinfo: &str, devs: &[((u32, u32), String)]) -> Option<(String, String, String)> {
    for l in mountinfo.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let (Some(num), Some(point)) = (f.get(2), f.get(4)) else {
            continue;
        };
        let Some(dash) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        let fstype = f.get(dash + 1).copied().unwrap_or("");
        let source = f.get(dash + 2).map(|s| unescape_mount(s));
        let by_num = devs.iter().find(|(d, _)| dev_of(d.0, d.1) == *num);
        let by_source = || {
            let src = source.as_deref().filter(|s| s.starts_with('/'))?;
            let d = rdev_of(Path::new(src))?;
            devs.iter().find(|(x, _)| *x == d)
        };
        if let Some((_, name)) = by_num.or_else(by_source) {
            return Some((name.clone(), unescape_mount(point), fstype.to_string()));
        }
    }
    None
}

/// Why the block device `path` (device `dev`) is in use by the system, if it is.
fn in_use(path: &Path, dev: (u32, u32)) -> Option<String> {
    let devs = with_partitions(dev);
    let whole = &devs[0].1;
    let which = |name: &str| {
        if name == whole {
            String::new()
        } else {
            format!("its partition {name} ")
        }
    };
    if let Ok(t) = std::fs::read_to_string("/proc/self/mountinfo") {
        if let Some((name, point, fstype)) = mounted(&t, &devs) {
            return Some(format!("{}is mounted at {point} ({fstype})", which(&name)));
        }
    }
    if let Ok(t) = std::fs::read_to_string("/proc/swaps") {
        for l in t.lines().skip(1) {
            let Some(p) = l.split_whitespace().next() else {
                continue;
            };
            let p = unescape_mount(p);
            if let Some((_, name)) =
                rdev_of(Path::new(&p)).and_then(|d| devs.iter().find(|(x, _)| *x == d))
            {
                return Some(format!("{}is in use as swap", which(name)));
            }
        }
    }
    for (d, name) in &devs {
        let dir = format!("/sys/dev/block/{}/holders", dev_of(d.0, d.1));
        let holders: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !holders.is_empty() {
            return Some(format!(
                "{}is in use by {} (a device built on it: device-mapper, md or LVM)",
                which(name),
                holders.join(", ")
            ));
        }
    }
    // The kernel's own answer: a block device opened with O_EXCL fails with EBUSY while a
    // filesystem (in any mount namespace), a RAID or another exclusive user holds it.
    let excl = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path);
    if matches!(excl, Err(ref e) if e.raw_os_error() == Some(libc::EBUSY)) {
        return Some(
            "is in use by the system (the kernel refuses it an exclusive open: mounted in another namespace, or held by a RAID or another exclusive user)".into(),
        );
    }
    None
}

/// Bytes of a device's start that [`signature`] reads.
pub const HEAD: usize = 0x10100;

/// The first [`HEAD`] bytes of `path` (fewer if it is shorter).
fn read_head(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::with_capacity(HEAD);
    f.take(HEAD as u64).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The filesystem, swap area or partition table whose signature `head` (a device's first
/// bytes) carries, as `blkid` would name it: the magic numbers at their offsets, with enough of
/// the structure around them checked that random data does not pass.
pub fn signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    let le16 = |off: usize| {
        head.get(off..off + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let le32 = |off: usize| {
        head.get(off..off + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    // ext2/3/4: the superblock at 1024, s_magic 0xEF53 at +56, s_log_block_size (+24) at most
    // 6 (64 KiB blocks), a non-zero inode count (+0) and blocks per group (+32).
    if le16(1024 + 56) == Some(0xEF53)
        && le32(1024 + 24).is_some_and(|v| v <= 6)
        && le32(1024).is_some_and(|v| v > 0)
        && le32(1024 + 32).is_some_and(|v| v > 0)
    {
        let incompat = le32(1024 + 96).unwrap_or(0);
        let compat = le32(1024 + 92).unwrap_or(0);
        return Some(if incompat & 0x40 != 0 || incompat & 0x80 != 0 {
            "an ext4 filesystem"
        } else if compat & 0x4 != 0 {
            "an ext3 filesystem"
        } else {
            "an ext2 filesystem"
        });
    }
    if at(0, b"XFSB") {
        return Some("an xfs filesystem");
    }
    if at(0x10040, b"_BHRfS_M") {
        return Some("a btrfs filesystem");
    }
    if at(0, b"LUKS\xba\xbe") {
        return Some("a LUKS encrypted volume");
    }
    if at(0, b"hsqs") {
        return Some("a squashfs filesystem");
    }
    if le32(1024) == Some(0xF2F5_2010) {
        return Some("an f2fs filesystem");
    }
    if at(0x8001, b"CD001") {
        return Some("an iso9660 filesystem");
    }
    if at(3, b"NTFS    ") {
        return Some("an ntfs filesystem");
    }
    if at(3, b"EXFAT   ") {
        return Some("an exfat filesystem");
    }
    if at(510, b"\x55\xaa") && (at(0x36, b"FAT1") || at(0x52, b"FAT32   ")) {
        return Some("a vfat filesystem");
    }
    for page in [4096usize, 8192, 16384, 65536] {
        if at(page - 10, b"SWAPSPACE2") || at(page - 10, b"SWAP-SPACE") {
            return Some("a swap area");
        }
    }
    if at(512 + 24, b"LVM2 001") && at(512, b"LABELONE") {
        return Some("an LVM physical volume");
    }
    if at(512, b"EFI PART") || at(4096, b"EFI PART") {
        return Some("a partition table (gpt)");
    }
    // MBR: the boot signature, each entry's status 0x00 or 0x80, and at least one entry used.
    if at(510, b"\x55\xaa") {
        let entries = (0..4).map(|i| 446 + 16 * i);
        let sane = entries.clone().all(|e| matches!(head[e], 0x00 | 0x80));
        let used = entries.clone().any(|e| head[e + 4] != 0);
        if sane && used {
            return Some("a partition table (dos)");
        }
    }
    None
}

/// Why writing `path` (a regular file or a block device) would damage data in use: it backs a
/// loop device that is mounted, swap or held. The backing file is known by device and inode
/// ([`crate::loopdev`]), so a hard link or a bind mount of it is the same file.
fn backed_loop_in_use(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    for b in crate::loopdev::backing(&m) {
        let node = PathBuf::from(format!("/dev/{}", b.name));
        if let Some(why) = in_use(&node, b.dev) {
            return Some(format!(
                "backs the loop device {} (its backing file {}), which {why}",
                b.name, b.path
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_data_has_no_signature() {
        let mut rng = pollwise::rng::Rng::new(7);
        let mut head = vec![0u8; HEAD];
        for _ in 0..2000 {
            rng.fill(&mut head);
            assert_eq!(signature(&head), None);
        }
        assert_eq!(signature(&vec![0u8; HEAD]), None);
        assert_eq!(signature(&[]), None);
    }

    #[test]
    fn signatures_of_made_filesystems() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("img");
        let mut ran = 0;
        for (tool, args, want) in [
            ("mkfs.ext4", &["-q", "-F"][..], "an ext4 filesystem"),
            ("mkfs.ext2", &["-q", "-F"][..], "an ext2 filesystem"),
            ("mkswap", &["-q"][..], "a swap area"),
        ] {
            std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
            let ok = std::process::Command::new(tool)
                .args(args)
                .arg(&img)
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                eprintln!("{tool} is not installed: its signature is not checked");
                continue;
            }
            ran += 1;
            let head = read_head(&img).unwrap();
            assert_eq!(signature(&head), Some(want), "{tool}");
        }
        // e2fsprogs and util-linux are on every machine the tests run on.
        assert!(ran > 0, "no mkfs tool ran");
    }

    #[test]
    fn a_dos_partition_table_is_a_signature() {
        let mut head = vec![0u8; HEAD];
        head[446 + 4] = 0x83;
        head[510] = 0x55;
        head[511] = 0xaa;
        assert_eq!(signature(&head), Some("a partition table (dos)"));
        head[446] = 0x12; // not a status byte: boot code, not a table
        assert_eq!(signature(&head), None);
    }

    #[test]
    fn mounts_are_found_by_number_and_through_partitions() {
        let info = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 7:1 / /tmp/a\\040b rw,relatime shared:2 - ext4 /dev/loop1p1 rw
41 22 0:33 / /mnt/btr rw - btrfs /dev/nonexistent-for-test rw
";
        let devs = vec![
            ((7, 0), "loop1".to_string()),
            ((7, 1), "loop1p1".to_string()),
        ];
        assert_eq!(
            mounted(info, &devs),
            Some(("loop1p1".into(), "/tmp/a b".into(), "ext4".into()))
        );
        assert_eq!(mounted(info, &[((8, 0), "sda".to_string())]), None);
    }

    #[test]
    fn mount_escapes_are_undone() {
        assert_eq!(unescape_mount("/a\\040b\\011c\\\\"), "/a b\tc\\\\");
        assert_eq!(unescape_mount("/é\\04"), "/é\\04");
    }

    /// The machine's own mounted disks (read only: nothing is written to them).
    #[test]
    fn mounted_disks_of_this_machine_are_hazards() {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mut seen = 0;
        for l in info.lines() {
            let f: Vec<&str> = l.split(' ').collect();
            let Some(dash) = f.iter().position(|x| *x == "-") else {
                continue;
            };
            let Some(src) = f.get(dash + 2).filter(|s| s.starts_with("/dev/")) else {
                continue;
            };
            if rdev_of(Path::new(src)).is_none() {
                continue;
            }
            seen += 1;
            let why = write_hazard(Path::new(src)).unwrap_or_default();
            assert!(why.contains("mounted at"), "{src}: {why}");
        }
        if seen == 0 {
            eprintln!("no block device is mounted here: nothing to check");
        }
    }

    #[test]
    fn a_plain_file_is_no_hazard() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, vec![0u8; 4096]).unwrap();
        assert_eq!(write_hazard(&f), None);
        assert_eq!(write_hazard(&d.path().join("missing")), None);
    }
}
