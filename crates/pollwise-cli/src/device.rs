//! The block device under a target, and its queue settings from sysfs.
//!
//! Found as fio's `disk_util` finds it: the file's `st_dev` names a device in
//! `/sys/dev/block`; a partition leads to its disk, a loop device to the device under its
//! backing file; a filesystem without a device of its own (btrfs, overlay) is looked up in
//! `/proc/self/mountinfo`. The reports state it; job checks ask it whether polled I/O can work.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
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
