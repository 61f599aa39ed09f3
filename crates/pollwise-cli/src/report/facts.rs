//! Facts of the machine and the target, printed with every report.
//!
//! Which wait mode wins depends on the kernel, the CPU, the device's queue settings (is there a
//! poll queue? which scheduler?), io_uring's features and how late a timed wake-up comes. A
//! figure without them cannot be compared across machines, so every `run` and `compare` report
//! carries them: in the text's last lines and under the JSON's top-level `pollwise.facts`.
//!
//! The block device under a file is found as fio's `disk_util` finds it: the file's `st_dev`
//! names a device in `/sys/dev/block`; a partition leads to its disk, a loop device to the
//! device under its backing file; a filesystem without a device of its own (btrfs, overlay)
//! is looked up in `/proc/self/mountinfo`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub use crate::device::{device_of, Device};
use crate::device::{read_num, read_trim};

/// Everything a report states about where it ran.
#[derive(Debug, Clone)]
pub struct Facts {
    /// `uname -r`.
    pub kernel: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u64,
    /// The target's path, as given.
    pub target: PathBuf,
    /// The target's block device, or why there is none.
    pub device: Result<Device, String>,
    /// `/sys/module/nvme/parameters/poll_queues`, where the nvme driver is loaded.
    pub nvme_poll_queues: Option<u64>,
    /// io_uring's features on this kernel, or why they could not be probed.
    pub io_uring_features: Result<Vec<&'static str>, String>,
    /// The timer slack a job thread asks for (1 ns) and what the kernel then reports.
    pub timer_slack_ns: Option<u64>,
}

/// The kernel release (`uname -r`).
pub fn kernel_release() -> String {
    read_trim(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_else(|| "unknown".into())
}

/// The CPU model (first `model name` in /proc/cpuinfo) and the online CPU count.
pub fn cpu() -> (String, u64) {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    (model, pollwise::sys::sysconf::online_cpus() as u64)
}

/// io_uring's features, from a small ring set up for the purpose.
pub fn io_uring_features() -> Result<Vec<&'static str>, String> {
    let opts = pollwise::queue::uring::UringOptions {
        entries: 4,
        ..Default::default()
    };
    pollwise::queue::uring::UringQueue::new(&opts, &[], false)
        .map(|q| q.feature_names())
        .map_err(|e| e.to_string())
}

/// The timer slack a job thread ends up with after asking for 1 ns, probed on a thread of its
/// own (the slack is per thread).
pub fn timer_slack_ns() -> Option<u64> {
    std::thread::spawn(|| pollwise::sys::timerslack::set_timer_slack_1ns().ok())
        .join()
        .ok()
        .flatten()
}

impl Facts {
    /// Gathers the facts for a run on `target` (a file, a block device, or a directory the
    /// file will be created in).
    pub fn gather(target: &Path) -> Facts {
        let (cpu_model, cpus) = cpu();
        Facts {
            kernel: kernel_release(),
            cpu_model,
            cpus,
            target: target.to_path_buf(),
            device: device_of(target),
            nvme_poll_queues: read_num(Path::new("/sys/module/nvme/parameters/poll_queues")),
            io_uring_features: io_uring_features(),
            timer_slack_ns: timer_slack_ns(),
        }
    }

    /// The facts as JSON (`pollwise.facts`).
    pub fn json(&self) -> Value {
        let device = match &self.device {
            Ok(d) => json!({
                "name": d.name,
                "via": d.via,
                "scheduler": d.scheduler,
                "nr_requests": d.nr_requests,
                "io_poll": d.io_poll,
                "io_poll_delay": d.io_poll_delay,
                "rotational": d.rotational,
                "logical_block_size": d.logical_block_size,
            }),
            Err(why) => json!({"name": null, "why": why}),
        };
        let (features, features_error) = match &self.io_uring_features {
            Ok(f) => (json!(f), Value::Null),
            Err(e) => (Value::Null, json!(e)),
        };
        json!({
            "kernel": self.kernel,
            "cpu_model": self.cpu_model,
            "cpus": self.cpus,
            "target": self.target.display().to_string(),
            "device": device,
            "nvme_poll_queues": self.nvme_poll_queues,
            "io_uring_features": features,
            "io_uring_probe_error": features_error,
            "timer_slack_requested_ns": 1,
            "timer_slack_ns": self.timer_slack_ns,
            "timer_slack_set": self.timer_slack_ns == Some(1),
            // Measured by calibration (a later issue); null until then, never assumed.
            "timer_lateness_ns": null,
            "submit_cost_ns": null,
        })
    }

    /// The facts as the text report's closing lines.
    pub fn text(&self) -> String {
        let dev = match &self.device {
            Ok(d) => {
                let o = |v: Option<String>| v.unwrap_or_else(|| "?".into());
                let n = |v: Option<u64>| o(v.map(|x| x.to_string()));
                format!(
                    "{}{} (scheduler={} nr_requests={} io_poll={} io_poll_delay={} rotational={} logical_block_size={})",
                    d.name,
                    if d.via.is_empty() {
                        String::new()
                    } else {
                        format!(" via {}", d.via.join(", "))
                    },
                    o(d.scheduler.clone()),
                    n(d.nr_requests),
                    n(d.io_poll),
                    o(d.io_poll_delay.map(|x| x.to_string())),
                    n(d.rotational),
                    n(d.logical_block_size),
                )
            }
            Err(why) => format!("no block device: {why}"),
        };
        let mut t = format!(
            "facts: kernel {}; CPU {} x {}\n  target {} on {}\n",
            self.kernel,
            self.cpu_model,
            self.cpus,
            self.target.display(),
            dev
        );
        if let Some(q) = self.nvme_poll_queues {
            t.push_str(&format!("  nvme poll_queues={q}\n"));
        }
        match &self.io_uring_features {
            Ok(f) => t.push_str(&format!("  io_uring features: {}\n", f.join(" "))),
            Err(e) => t.push_str(&format!("  io_uring: cannot probe ({e})\n")),
        }
        t.push_str(&format!(
            "  timer slack: job threads ask for 1 ns, get {}; timer lateness and submit cost: not measured (no calibration yet)\n",
            self.timer_slack_ns
                .map_or("unknown".to_string(), |s| format!("{s} ns"))
        ));
        t
    }
}

/// One line of /proc/diskstats for a disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStat {
    /// Reads completed.
    pub read_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// ms spent reading.
    pub read_ticks: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// ms spent writing.
    pub write_ticks: u64,
    /// ms the device had I/O in flight.
    pub io_ticks: u64,
    /// Weighted ms of I/O in flight (fio's `in_queue`).
    pub in_queue: u64,
}

/// The /proc/diskstats line of disk `name`.
pub fn diskstat(name: &str) -> Option<DiskStat> {
    let t = std::fs::read_to_string("/proc/diskstats").ok()?;
    t.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(2) != Some(&name) || f.len() < 14 {
            return None;
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        Some(DiskStat {
            read_ios: n(3),
            read_merges: n(4),
            read_ticks: n(6),
            write_ios: n(7),
            write_merges: n(8),
            write_ticks: n(10),
            io_ticks: n(12),
            in_queue: n(13),
        })
    })
}

/// fio's `disk_util` entry for disk `name` between two readings `wall_ms` apart.
pub fn disk_util_json(name: &str, a: &DiskStat, b: &DiskStat, wall_ms: u64) -> Value {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    let util = if wall_ms == 0 {
        0.0
    } else {
        (d(a.io_ticks, b.io_ticks) as f64 * 100.0 / wall_ms as f64).min(100.0)
    };
    json!({
        "name": name,
        "read_ios": d(a.read_ios, b.read_ios),
        "write_ios": d(a.write_ios, b.write_ios),
        "read_merges": d(a.read_merges, b.read_merges),
        "write_merges": d(a.write_merges, b.write_merges),
        "read_ticks": d(a.read_ticks, b.read_ticks),
        "write_ticks": d(a.write_ticks, b.write_ticks),
        "in_queue": d(a.in_queue, b.in_queue),
        "util": util,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_resolves_to_a_disk_with_queue_settings_or_says_why() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("not-yet");
        match device_of(&f) {
            Ok(dev) => {
                assert!(!dev.name.is_empty());
                assert!(
                    Path::new("/sys/block").join(&dev.name).exists(),
                    "{dev:?} is a whole disk"
                );
                assert!(dev.logical_block_size.unwrap_or(0) >= 512, "{dev:?}");
                assert!(diskstat(&dev.name).is_some(), "{dev:?} in /proc/diskstats");
            }
            Err(why) => assert!(why.contains("no block device"), "{why}"),
        }
        assert!(device_of(Path::new("/proc/self/status")).is_err());
    }

    #[test]
    fn facts_name_kernel_and_cpus() {
        let f = Facts::gather(Path::new("."));
        assert_eq!(f.kernel, kernel_release());
        assert!(f.cpus >= 1);
        let j = f.json();
        assert!(j["timer_lateness_ns"].is_null());
        assert!(j.get("submit_cost_ns").is_some());
        assert!(f.text().contains(&f.kernel));
    }

    #[test]
    fn disk_util_is_a_difference() {
        let a = DiskStat {
            read_ios: 10,
            io_ticks: 100,
            ..Default::default()
        };
        let b = DiskStat {
            read_ios: 25,
            io_ticks: 600,
            ..Default::default()
        };
        let j = disk_util_json("vda", &a, &b, 1000);
        assert_eq!(j["read_ios"], 15);
        assert_eq!(j["util"], 50.0);
    }
}
