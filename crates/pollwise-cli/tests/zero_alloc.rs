//! The steady state allocates nothing per I/O, under every policy (bio recycling: recycle request
//! objects instead of freeing and allocating them).
//!
//! A counting global allocator counts allocations made by the thread under test while a
//! thread-local switch is on; the engine warms up first (so one-time growth is done), then runs
//! thousands of real O_DIRECT reads with the switch on.

#[path = "jobs_common.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise_bench::engine::{Engine, Stop};
use pollwise_cli::job::{engine_config, prepare_target, JobSpec, Rw};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_state_allocates_nothing_per_io() {
    let (_dir, path) = common::temp_file();
    for &mode in Mode::ALL {
        for (depth, batch, defer) in [(1, 1, false), (16, 4, false), (8, 8, true)] {
            let spec = JobSpec {
                iodepth: depth,
                iodepth_batch_submit: batch,
                iodepth_batch_complete_min: batch,
                ..common::job(&path, Rw::RandRw, mode, 1)
            };
            let target = prepare_target(&spec).unwrap();
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .unwrap();
            let q = UringQueue::new(
                &UringOptions {
                    entries: depth,
                    defer_taskrun: defer,
                    ..Default::default()
                },
                &[f.as_raw_fd()],
                false,
            )
            .unwrap();
            let clock = clock::monotonic();
            let mut e = Engine::new(
                Box::new(q),
                PolicyConfig::new(mode).build(clock.clone()),
                clock,
                engine_config(&spec, target.size),
            )
            .unwrap();
            e.run(Stop::Ios(2_000)).unwrap();
            ALLOCS.store(0, Ordering::Relaxed);
            COUNTING.with(|c| c.set(true));
            let r = e.run(Stop::Ios(7_000));
            COUNTING.with(|c| c.set(false));
            r.unwrap();
            let pollwise_bench::engine::EngineStats { read, write, .. } = e.stats();
            assert_eq!(read.ios + write.ios, 7_000);
            assert_eq!(
                ALLOCS.load(Ordering::Relaxed),
                0,
                "{mode:?} qd{depth} defer_taskrun={defer}: allocations in 5000 steady-state I/Os"
            );
            drop(e);
            drop(f);
        }
    }
}
