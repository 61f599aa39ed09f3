//! Per-request I/O priorities, as fio's `cmdprio_percentage`, `cmdprio_class`, `cmdprio` and
//! `cmdprio_bssplit` give them (fio's engines/cmdprio.c): each request of a direction gets a
//! priority of its own with some probability (for its block size, with `cmdprio_bssplit`),
//! else the job's default (fio's `prio`/`prioclass`, 0 when none). The value is the kernel's
//! `ioprio` (class << 13 | level), carried in the request ([`Op::ioprio`](pollwise::queue::Op))
//! to devices that take one per request.
//!
//! Completion latencies are also kept per priority ([`DirStats::prios`](crate::stats::DirStats)),
//! in fio's order: the default first, then each request priority as the options name it.

use pollwise::request::Dir;
use pollwise::rng::Rng;

/// The kernel's shift of the class in an `ioprio`.
pub const CLASS_SHIFT: u16 = 13;
/// The real-time class.
pub const CLASS_RT: u8 = 1;
/// The best-effort class.
pub const CLASS_BE: u8 = 2;
/// The idle class.
pub const CLASS_IDLE: u8 = 3;

/// The `ioprio` of `class` and `level`; class 0 is best-effort, as fio's `ioprio_value`.
pub fn ioprio_value(class: u8, level: u8) -> u16 {
    let class = if class == 0 { CLASS_BE } else { class };
    (u16::from(class) << CLASS_SHIFT) | u16::from(level & 7)
}

/// The class of an `ioprio`.
pub fn class_of(ioprio: u16) -> u8 {
    (ioprio >> CLASS_SHIFT) as u8
}

/// The level of an `ioprio`.
pub fn level_of(ioprio: u16) -> u8 {
    (ioprio & 7) as u8
}

/// How one direction's requests get a priority of their own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DirPrio {
    /// None: every request has the default.
    #[default]
    None,
    /// `cmdprio_percentage`: this percentage of the requests gets `ioprio`.
    Percent {
        /// Percentage, 1..=100.
        perc: u32,
        /// The priority they get.
        ioprio: u16,
    },
    /// `cmdprio_bssplit`: per block size, percentages of its requests and their priorities
    /// (a size's percentages add up to at most 100; a size not named keeps the default).
    BsSplit(Vec<(u32, Vec<(u32, u16)>)>),
}

/// A job's request priorities: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CmdPrio {
    /// The job's own priority (fio's `prio`/`prioclass`), 0 for none.
    pub default: u16,
    /// Per direction (read, write).
    pub dirs: [DirPrio; 2],
}

impl CmdPrio {
    /// The priority of a request of `dir` and `len` bytes, drawing from `rng` as fio draws
    /// (one number in 0..100 per request that may get one).
    pub fn pick(&self, dir: Dir, len: u32, rng: &mut Rng) -> u16 {
        // Trims keep the default, as fio's cmdprio has reads and writes only.
        let Some(k) = dir_index(dir) else {
            return self.default;
        };
        match &self.dirs[k] {
            DirPrio::None => self.default,
            DirPrio::Percent { perc, ioprio } => {
                if (rng.below(100) as u32) < *perc {
                    *ioprio
                } else {
                    self.default
                }
            }
            DirPrio::BsSplit(sizes) => {
                let Some((_, prios)) = sizes.iter().find(|(bs, _)| *bs == len) else {
                    return self.default;
                };
                let total: u32 = prios.iter().map(|p| p.0).sum();
                if total == 0 {
                    return self.default;
                }
                let r = rng.below(100) as u32;
                let mut acc = 0;
                for &(perc, ioprio) in prios {
                    acc += perc;
                    if r < acc {
                        return ioprio;
                    }
                }
                self.default
            }
        }
    }

    /// Whether `dir` has request priorities of its own (fio keeps per-priority latencies only
    /// then).
    pub fn splits(&self, dir: Dir) -> bool {
        let Some(k) = dir_index(dir) else {
            return false;
        };
        match &self.dirs[k] {
            DirPrio::None => false,
            DirPrio::Percent { perc, .. } => *perc > 0,
            DirPrio::BsSplit(s) => s.iter().any(|(_, p)| p.iter().any(|x| x.0 > 0)),
        }
    }

    /// The priorities `dir`'s latencies are kept under, in fio's order: the default first, then
    /// each other one as the options name it.
    pub fn order(&self, dir: Dir) -> Vec<u16> {
        let mut v = vec![self.default];
        let mut add = |p: u16| {
            if !v.contains(&p) {
                v.push(p);
            }
        };
        let Some(k) = dir_index(dir) else {
            return v;
        };
        match &self.dirs[k] {
            DirPrio::None => {}
            DirPrio::Percent { ioprio, .. } => add(*ioprio),
            DirPrio::BsSplit(sizes) => {
                for (_, prios) in sizes {
                    for &(_, p) in prios {
                        add(p);
                    }
                }
            }
        }
        v
    }
}

/// Sets the calling thread's own I/O priority (`ioprio_set(IOPRIO_WHO_PROCESS, 0, ioprio)`,
/// as fio does for `prio`/`prioclass`): requests without a priority of their own take it.
pub fn set_thread_ioprio(ioprio: u16) -> std::io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_int = 1;
    // SAFETY: ioprio_set takes three integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            libc::c_int::from(ioprio),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn dir_index(dir: Dir) -> Option<usize> {
    match dir {
        Dir::Read => Some(0),
        Dir::Write => Some(1),
        Dir::Trim => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_kernels() {
        assert_eq!(ioprio_value(CLASS_RT, 0), 0x2000);
        assert_eq!(ioprio_value(CLASS_IDLE, 0), 0x6000);
        assert_eq!(ioprio_value(0, 7), 0x4007, "no class is best-effort");
        assert_eq!(class_of(0x4007), CLASS_BE);
        assert_eq!(level_of(0x4007), 7);
    }

    #[test]
    fn a_percentage_of_requests_get_the_priority() {
        let p = CmdPrio {
            default: ioprio_value(CLASS_IDLE, 0),
            dirs: [
                DirPrio::Percent {
                    perc: 20,
                    ioprio: ioprio_value(CLASS_RT, 0),
                },
                DirPrio::None,
            ],
        };
        let mut rng = Rng::new(7);
        let n = 10_000;
        let hi = (0..n)
            .filter(|_| p.pick(Dir::Read, 4096, &mut rng) == 0x2000)
            .count();
        assert!((1_700..2_300).contains(&hi), "{hi} of {n}");
        assert!((0..100).all(|_| p.pick(Dir::Write, 4096, &mut rng) == 0x6000));
        assert_eq!(p.order(Dir::Read), [0x6000, 0x2000]);
        assert_eq!(p.order(Dir::Write), [0x6000]);
        assert!(p.splits(Dir::Read) && !p.splits(Dir::Write));
    }

    #[test]
    fn bssplit_picks_by_block_size() {
        // fio's cmdprio-bssplit.fio, its second job: 64k reads 25% 1/1, 75% 3/2; 1M none.
        let p = CmdPrio {
            default: 0,
            dirs: [
                DirPrio::BsSplit(vec![
                    (
                        65536,
                        vec![(25, ioprio_value(1, 1)), (75, ioprio_value(3, 2))],
                    ),
                    (1 << 20, vec![(0, ioprio_value(1, 0))]),
                ]),
                DirPrio::None,
            ],
        };
        let mut rng = Rng::new(1);
        let mut seen = [0; 2];
        for _ in 0..4000 {
            match p.pick(Dir::Read, 65536, &mut rng) {
                0x2001 => seen[0] += 1,
                0x6002 => seen[1] += 1,
                other => panic!("64k read got {other:#x}"),
            }
        }
        assert!((800..1200).contains(&seen[0]), "{seen:?}");
        assert!((0..100).all(|_| p.pick(Dir::Read, 1 << 20, &mut rng) == 0));
        assert_eq!(p.order(Dir::Read), [0, 0x2001, 0x6002, 0x2000]);
    }
}
