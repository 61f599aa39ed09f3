//! An `LD_PRELOAD` library that gives an unmodified, dynamically linked liburing application
//! pollwise's waits.
//!
//! liburing.so.2 exports the functions an application's waits go through: `__io_uring_get_cqe`
//! (which the inline `io_uring_wait_cqe`, `io_uring_wait_cqe_nr` and `io_uring_peek_cqe` call
//! when the CQ is short), `io_uring_wait_cqes`, `io_uring_wait_cqe_timeout`,
//! `io_uring_submit_and_wait`, `io_uring_submit_and_wait_timeout` and `io_uring_get_events`.
//! This library defines them first: each waits through a [`Waiter`] (one per ring) in the mode
//! `POLLWISE_MODE` names (`auto` when unset:
//! `auto|poll|hybrid|adaptive|interrupt|khybrid|dpas`; auto's slack from `POLLWISE_AUTO_SLACK`,
//! a fraction as `--auto_slack` takes), and returns what liburing 2.3 would:
//! the same return values (`-ETIME` only when no CQE came in time, `-EINTR`, the count of SQEs
//! submitted), the same `*cqe_ptr` (the first CQE, left on the ring).
//!
//! Each call replays liburing's own loop with the waiter's wait as each `io_uring_enter`, so the
//! counts, errors and SQ state are liburing's (a short submit stops where the kernel stopped).
//! It interposes `sigaction` and `signal` too, wrapping each handler the program installs so
//! that a delivery ends a spinning wait with `-EINTR`, as it ends liburing's blocking enter. A
//! forked child starts with fresh state: no lock is held across `fork`.
//!
//! It falls back to liburing's own function (`dlsym(RTLD_NEXT)`) for anything it cannot do
//! exactly: a signal mask given (the wait would have to swap it atomically), a ring with setup
//! flags it does not know or without `IORING_FEAT_EXT_ARG`, a peek (nothing to decide), a ring
//! another thread is waiting on, an unknown mode. `io_uring_get_events` is only counted, and
//! `io_uring_queue_exit` forgets the ring's waiter before liburing tears the ring down.
//! docs/library.md has a table: each function, what liburing does, what each mode does.
//!
//! At exit it appends one JSON line to the file `POLLWISE_SUMMARY` names (if set): the mode,
//! calls per function, waits taken over, spins, sleeps, blocks, time in each mode, the
//! fallbacks by reason, what auto's process-wide judge measured and chose (`judge`), and the
//! process's CPU time. It never prints.

mod signals;
mod summary;

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pollwise::policy::{parse_auto_slack, Mode, PolicyConfig, DEFAULT_AUTO_LATENCY_SLACK};
use pollwise::ring::{
    RawRing, RingParts, FEAT_EXT_ARG, IORING_SETUP_CQE32, IORING_SETUP_SQPOLL, SQ_NEED_WAKEUP,
};
use pollwise::waiter::{Waiter, WaiterStats};

/// liburing's `struct io_uring_sq` (liburing 2.x: the layout of liburing.so.2).
#[repr(C)]
struct Sq {
    khead: *mut u32,
    ktail: *mut u32,
    kring_mask: *mut u32,
    kring_entries: *mut u32,
    kflags: *mut u32,
    kdropped: *mut u32,
    array: *mut u32,
    sqes: *mut c_void,
    sqe_head: u32,
    sqe_tail: u32,
    ring_sz: usize,
    ring_ptr: *mut c_void,
    ring_mask: u32,
    ring_entries: u32,
    pad: [u32; 2],
}

/// liburing's `struct io_uring_cq`.
#[repr(C)]
struct Cq {
    khead: *mut u32,
    ktail: *mut u32,
    kring_mask: *mut u32,
    kring_entries: *mut u32,
    kflags: *mut u32,
    koverflow: *mut u32,
    cqes: *mut Cqe,
    ring_sz: usize,
    ring_ptr: *mut c_void,
    ring_mask: u32,
    ring_entries: u32,
    pad: [u32; 2],
}

/// liburing's `struct io_uring`.
#[repr(C)]
pub struct IoUring {
    sq: Sq,
    cq: Cq,
    flags: u32,
    ring_fd: c_int,
    features: u32,
    enter_ring_fd: c_int,
    int_flags: u8,
    pad: [u8; 3],
    pad2: u32,
}

// The layout liburing.so.2 has on x86_64 and aarch64 (the C test checks offsetof and sizeof).
const _: () = assert!(std::mem::size_of::<Sq>() == 104);
const _: () = assert!(std::mem::size_of::<Cq>() == 88);
const _: () = assert!(std::mem::size_of::<IoUring>() == 216);

/// `struct io_uring_cqe` (its first 16 bytes).
#[repr(C)]
pub struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

/// `struct __kernel_timespec`.
#[repr(C)]
pub struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// liburing's `INT_FLAG_REG_RING`: the ring is entered by its registered index.
const INT_FLAG_REG_RING: u8 = 1;

/// The interposed functions, in summary order.
const FUNCS: [&str; 6] = [
    "__io_uring_get_cqe",
    "io_uring_wait_cqes",
    "io_uring_wait_cqe_timeout",
    "io_uring_submit_and_wait",
    "io_uring_submit_and_wait_timeout",
    "io_uring_get_events",
];
const GET_CQE: usize = 0;
const WAIT_CQES: usize = 1;
const WAIT_CQE_TIMEOUT: usize = 2;
const SUBMIT_AND_WAIT: usize = 3;
const SUBMIT_AND_WAIT_TIMEOUT: usize = 4;
const GET_EVENTS: usize = 5;

/// Why a call went to liburing's own function, in summary order.
const REASONS: [&str; 7] = [
    "peek",
    "sigmask",
    "ring_flags",
    "no_ext_arg",
    "busy",
    "mode_unknown",
    "panic",
];
const R_PEEK: usize = 0;
const R_SIGMASK: usize = 1;
const R_FLAGS: usize = 2;
const R_NO_EXT_ARG: usize = 3;
const R_BUSY: usize = 4;
const R_MODE: usize = 5;
const R_PANIC: usize = 6;

/// Counters shared by every thread.
struct Counts {
    calls: [AtomicU64; 6],
    taken: [AtomicU64; 6],
    fallbacks: [AtomicU64; 7],
    rings: AtomicU64,
}

static COUNTS: Counts = Counts {
    calls: [const { AtomicU64::new(0) }; 6],
    taken: [const { AtomicU64::new(0) }; 6],
    fallbacks: [const { AtomicU64::new(0) }; 7],
    rings: AtomicU64::new(0),
};

/// One ring's waiter, and what identifies the ring.
struct Slot {
    ring_fd: c_int,
    cq_head: usize,
    waiter: Waiter,
}

struct State {
    /// The mode, `None` when `POLLWISE_MODE` names no mode or `POLLWISE_AUTO_SLACK` is no
    /// slack: a setting not understood hands every wait to liburing, counted as an unknown mode.
    mode: Option<Mode>,
    /// auto's slack, `POLLWISE_AUTO_SLACK` (the default when unset).
    slack: f64,
    mode_text: String,
    slack_text: Option<String>,
    rings: RwLock<HashMap<usize, Arc<Mutex<Slot>>>>,
    /// Stats of waiters whose rings went away.
    retired: Mutex<WaiterStats>,
}

impl State {
    fn new(mode_text: String, slack_text: Option<String>) -> State {
        let slack = slack_text
            .as_deref()
            .map_or(Some(DEFAULT_AUTO_LATENCY_SLACK), parse_auto_slack);
        State {
            mode: mode_text.trim().parse().ok().filter(|_| slack.is_some()),
            slack: slack.unwrap_or(DEFAULT_AUTO_LATENCY_SLACK),
            mode_text,
            slack_text,
            rings: RwLock::new(HashMap::new()),
            retired: Mutex::new(WaiterStats::default()),
        }
    }
}

/// The state, made on first use. A forked child gets a fresh one ([`after_fork_in_child`]): a
/// lock some other thread of the parent held at the fork would never be released in the child.
static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());

fn state() -> &'static State {
    let p = STATE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: STATE only ever holds pointers from Box::into_raw that are never freed.
        return unsafe { &*p };
    }
    let text = std::env::var("POLLWISE_MODE").unwrap_or_else(|_| "auto".into());
    let slack = std::env::var("POLLWISE_AUTO_SLACK").ok();
    let fresh = Box::into_raw(Box::new(State::new(text, slack)));
    match STATE.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: fresh was just made by Box::into_raw and is never freed.
        Ok(_) => unsafe { &*fresh },
        Err(won) => {
            // SAFETY: fresh lost the race and was never shared: freed once, here.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as above: a pointer from Box::into_raw, never freed.
            unsafe { &*won }
        }
    }
}

/// In a forked child (pthread_atfork): a fresh state and fresh counts. The parent's state is
/// left as it was (never freed): its locks may be held by threads the child does not have. The
/// child's rings get new waiters on first use, and its summary counts the child's calls.
extern "C" fn after_fork_in_child() {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        return;
    }
    // SAFETY: as in state(): a pointer from Box::into_raw, never freed.
    let old = unsafe { &*p };
    let fresh = State::new(old.mode_text.clone(), old.slack_text.clone());
    STATE.store(Box::into_raw(Box::new(fresh)), Ordering::Release);
    for c in COUNTS
        .calls
        .iter()
        .chain(&COUNTS.taken)
        .chain(&COUNTS.fallbacks)
    {
        c.store(0, Ordering::Relaxed);
    }
    COUNTS.rings.store(0, Ordering::Relaxed);
}

fn fallback(reason: usize) {
    COUNTS.fallbacks[reason].fetch_add(1, Ordering::Relaxed);
}

/// liburing's own `name`, looked up once.
fn real(cache: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = cache.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks the symbol up in the
    // objects loaded after this one.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    cache.store(p, Ordering::Release);
    p
}

/// Calls liburing's own function `$name` of type `$ty` with `$args`, or returns `-ENOSYS` if
/// there is none.
macro_rules! call_real {
    ($name:literal, $ty:ty, $($arg:expr),*) => {{
        static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
        let p = real(&CACHE, $name);
        if p.is_null() {
            -libc::ENOSYS
        } else {
            // SAFETY: `p` is liburing's exported function of this name, whose C type `$ty`
            // states (liburing.h, liburing 2.x).
            let f: $ty = unsafe { std::mem::transmute::<*mut c_void, $ty>(p) };
            // SAFETY: the arguments are the caller's own, passed through unchanged.
            unsafe { f($($arg),*) }
        }
    }};
}

/// What a wait needs of liburing's `struct io_uring`: the fields set at setup, read one by one
/// through the pointer. Never a reference to the whole struct during a wait: another thread may
/// be preparing SQEs in it (liburing lets one thread submit while another waits).
#[derive(Clone, Copy)]
struct Fixed {
    flags: u32,
    ring_fd: c_int,
    features: u32,
    enter_ring_fd: c_int,
    int_flags: u8,
    sq_khead: *mut u32,
    sq_ktail: *mut u32,
    sq_kflags: *mut u32,
    cq_khead: *mut u32,
    cq_ktail: *mut u32,
    cq_mask: u32,
    cqes: *mut Cqe,
}

/// The fields of `ring` a wait needs.
///
/// # Safety
///
/// `ring` points to a live ring set up by liburing.
unsafe fn fixed(ring: *const IoUring) -> Fixed {
    use std::ptr::addr_of;
    // SAFETY: the caller's: a live ring; each read is of a field set at setup and not written
    // after, through the pointer (no reference to fields other threads may write).
    unsafe {
        let kring_mask = addr_of!((*ring).cq.kring_mask).read();
        Fixed {
            flags: addr_of!((*ring).flags).read(),
            ring_fd: addr_of!((*ring).ring_fd).read(),
            features: addr_of!((*ring).features).read(),
            enter_ring_fd: addr_of!((*ring).enter_ring_fd).read(),
            int_flags: addr_of!((*ring).int_flags).read(),
            sq_khead: addr_of!((*ring).sq.khead).read(),
            sq_ktail: addr_of!((*ring).sq.ktail).read(),
            sq_kflags: addr_of!((*ring).sq.kflags).read(),
            cq_khead: addr_of!((*ring).cq.khead).read(),
            cq_ktail: addr_of!((*ring).cq.ktail).read(),
            // kring_mask points at the CQ ring mask in the ring's mapping, set up by
            // io_uring_queue_init and valid while the ring is.
            cq_mask: *kring_mask,
            cqes: addr_of!((*ring).cq.cqes).read(),
        }
    }
}

/// A waiter's policy: `mode`'s defaults, with auto's slack.
fn policy_config(mode: Mode, slack: f64) -> PolicyConfig {
    let mut cfg = PolicyConfig::new(mode);
    cfg.auto_latency_slack = slack;
    cfg
}

/// The ring's waiter, made on first use; `None` (counted) when another thread holds it.
fn slot_of(fx: &Fixed, key: usize, mode: Mode) -> Option<Arc<Mutex<Slot>>> {
    let st = state();
    let found = st.rings.read().ok().and_then(|m| m.get(&key).cloned());
    let make = || {
        COUNTS.rings.fetch_add(1, Ordering::Relaxed);
        Arc::new(Mutex::new(Slot {
            ring_fd: fx.ring_fd,
            cq_head: fx.cq_khead as usize,
            waiter: Waiter::new(&policy_config(mode, st.slack)),
        }))
    };
    let slot = match found {
        Some(s) => s,
        None => {
            let mut m = st.rings.write().ok()?;
            m.entry(key).or_insert_with(make).clone()
        }
    };
    {
        let mut g = slot.try_lock().ok()?;
        if g.ring_fd != fx.ring_fd || g.cq_head != fx.cq_khead as usize {
            // A new ring at the address of one that went away: start afresh.
            if let Ok(mut r) = st.retired.lock() {
                add_stats(&mut r, &g.waiter.stats());
            }
            g.ring_fd = fx.ring_fd;
            g.cq_head = fx.cq_khead as usize;
            g.waiter = Waiter::new(&policy_config(mode, st.slack));
            COUNTS.rings.fetch_add(1, Ordering::Relaxed);
        }
    }
    Some(slot)
}

fn add_stats(a: &mut WaiterStats, b: &WaiterStats) {
    a.waits += b.waits;
    a.peeks += b.peeks;
    a.ready_at_once += b.ready_at_once;
    a.timeouts += b.timeouts;
    a.interrupted += b.interrupted;
    a.untracked += b.untracked;
    a.wait_ns += b.wait_ns;
    a.submitted += b.submitted;
    a.cqes += b.cqes;
    a.more_cqes += b.more_cqes;
    a.foreign_cqes += b.foreign_cqes;
    a.unread_cqes += b.unread_cqes;
    a.enters += b.enters;
    a.policy.add(&b.policy);
}

/// The ring by pointers.
fn raw_of(fx: &Fixed) -> Option<RawRing> {
    let registered = fx.int_flags & INT_FLAG_REG_RING != 0;
    let parts = RingParts {
        enter_fd: if registered {
            fx.enter_ring_fd
        } else {
            fx.ring_fd
        },
        registered,
        setup_flags: fx.flags,
        features: fx.features,
        sq_head: fx.sq_khead,
        sq_tail: fx.sq_ktail,
        sq_flags: fx.sq_kflags,
        cq_head: fx.cq_khead,
        cq_tail: fx.cq_ktail,
        cq_mask: fx.cq_mask,
        cqes: fx.cqes.cast(),
    };
    // SAFETY: the pointers are liburing's own into the ring's mapping, valid while the ring is;
    // the view is used only inside the call the application made on this ring, during which
    // (liburing's rule) no other thread consumes its CQ.
    unsafe { RawRing::from_parts(parts) }.ok()
}

/// liburing's `__io_uring_flush_sq`: publishes the SQEs taken with `io_uring_get_sqe`.
///
/// # Safety
///
/// `ring` is a live ring whose SQ side the calling thread owns (it is submitting).
unsafe fn flush_sq(ring: *mut IoUring, fx: &Fixed) {
    use std::ptr::{addr_of, addr_of_mut};
    // SAFETY: the caller owns the SQ side: sqe_head and sqe_tail are this thread's to read and
    // write (liburing does the same in the same place).
    unsafe {
        let tail = addr_of!((*ring).sq.sqe_tail).read();
        if addr_of!((*ring).sq.sqe_head).read() != tail {
            addr_of_mut!((*ring).sq.sqe_head).write(tail);
            // ktail points at the SQ tail in the ring's mapping; liburing stores it the same
            // way (a release store, so the kernel sees the SQEs before the tail).
            (*fx.sq_ktail.cast::<AtomicU32>()).store(tail, Ordering::Release);
        }
    }
}

/// The first CQE on the ring (null when none) and how many are ready, from one reading of the
/// CQ head and tail, as liburing's `__io_uring_peek_cqe` on a ring with `EXT_ARG` (which posts
/// no internal timeout CQEs) gives both. Two readings of the tail would race with the kernel: a
/// CQE posted between them made "none" and "one ready", and the call returned 0 with a null CQE.
fn peek(fx: &Fixed) -> (*mut Cqe, u32) {
    // SAFETY: the CQ head and tail are in the ring's mapping; the tail is loaded with Acquire,
    // so the entry it covers is published.
    let (head, tail) = unsafe {
        (
            (*fx.cq_khead.cast::<AtomicU32>()).load(Ordering::Relaxed),
            (*fx.cq_ktail.cast::<AtomicU32>()).load(Ordering::Acquire),
        )
    };
    let ready = tail.wrapping_sub(head);
    if ready == 0 {
        return (std::ptr::null_mut(), 0);
    }
    let shift = u32::from(fx.flags & IORING_SETUP_CQE32 != 0);
    // In bounds of the CQE array (mask + 1 entries, twice as many halves with CQE32);
    // wrapping_add keeps it a pointer computation without unsafe.
    let cqe = fx
        .cqes
        .wrapping_add(((head & fx.cq_mask) << shift) as usize);
    (cqe, ready)
}

fn sq_head(fx: &Fixed) -> u32 {
    // SAFETY: the SQ head is in the ring's mapping.
    unsafe { (*fx.sq_khead.cast::<AtomicU32>()).load(Ordering::Acquire) }
}

fn sq_tail(fx: &Fixed) -> u32 {
    // SAFETY: the SQ tail is in the ring's mapping.
    unsafe { (*fx.sq_ktail.cast::<AtomicU32>()).load(Ordering::Acquire) }
}

fn sq_flags(fx: &Fixed) -> u32 {
    // SAFETY: the SQ flags are in the ring's mapping.
    unsafe { (*fx.sq_kflags.cast::<AtomicU32>()).load(Ordering::Acquire) }
}

/// A `__kernel_timespec` as the kernel reads it: `tv_sec` seconds plus `tv_nsec` nanoseconds,
/// neither clamped (a `tv_nsec` of 2e9 is 2 s more); a negative sum has passed already.
fn timeout_of(ts: &KernelTimespec) -> Duration {
    let ns = i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec);
    Duration::from_nanos(u64::try_from(ns.max(0)).unwrap_or(u64::MAX))
}

/// How a call waits, in liburing's words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `io_uring_submit_and_wait`: one enter, whose result is the call's.
    OneEnter,
    /// `_io_uring_get_cqe`'s loop (every other function).
    GetCqe,
}

/// What a call asks.
struct Ask {
    func: usize,
    shape: Shape,
    /// Publish the SQEs taken (the `submit_and_wait*` functions).
    flush: bool,
    /// How many SQEs to submit (`__io_uring_get_cqe`'s `submit`); `None`: every one published
    /// and not consumed when `flush`, else none.
    count: Option<u32>,
    wait_nr: u32,
    ts: *const KernelTimespec,
    sigmask: *const libc::sigset_t,
}

/// One `io_uring_enter(submit, wait_nr, GETEVENTS)` done by the waiter, returning what the
/// kernel's would: the count of SQEs consumed when it submitted any (the wait's error hidden, as
/// the kernel hides it), else 0 or the negated errno. `Err` when the waiter could not follow the
/// ring (nothing was done).
fn enter(
    w: &mut Waiter,
    raw: &RawRing,
    fx: &Fixed,
    submit: u32,
    wait_nr: u32,
    timeout: Option<Duration>,
) -> Result<c_int, ()> {
    let head0 = sq_head(fx);
    let r = if submit > 0 {
        w.submit_and_wait_timeout(raw, wait_nr, timeout)
    } else {
        w.wait_timeout(raw, wait_nr, timeout)
    };
    if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory) {
        return Err(());
    }
    let consumed = if submit == 0 {
        0
    } else if fx.flags & IORING_SETUP_SQPOLL != 0 {
        // The kernel says it took what it was asked: its thread submits.
        submit
    } else {
        sq_head(fx).wrapping_sub(head0).min(submit)
    };
    Ok(match r {
        _ if consumed > 0 => consumed.min(i32::MAX as u32) as c_int,
        Ok(_) => 0,
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    })
}

/// liburing 2.3's `sq_ring_needs_enter`: SQEs to submit, and on SQPOLL a sleeping thread.
fn sq_needs_enter(fx: &Fixed, submit: u32) -> bool {
    submit > 0 && (fx.flags & IORING_SETUP_SQPOLL == 0 || sq_flags(fx) & SQ_NEED_WAKEUP != 0)
}

/// liburing 2.3's `_io_uring_get_cqe` with the waiter's enters: peek; enter when fewer CQEs are
/// ready than asked or SQEs are to be submitted; return once a CQE was there before an enter;
/// with a timeout, enter once. The result and the CQE found, as liburing's.
fn get_cqe(
    w: &mut Waiter,
    raw: &RawRing,
    fx: &Fixed,
    mut submit: u32,
    wait_nr: u32,
    timeout: Option<Duration>,
) -> Result<(c_int, *mut Cqe), ()> {
    let mut err: c_int = 0;
    let mut looped = false;
    loop {
        let (cqe, ready) = peek(fx);
        let need = wait_nr > ready || sq_needs_enter(fx, submit);
        if !need {
            return Ok((err, cqe));
        }
        if looped && timeout.is_some() {
            if cqe.is_null() && err == 0 {
                err = -libc::ETIME;
            }
            return Ok((err, cqe));
        }
        let ret = enter(w, raw, fx, submit, wait_nr, timeout);
        let ret = match ret {
            Ok(r) => r,
            Err(()) if !looped => return Err(()),
            Err(()) => -libc::ENOMEM,
        };
        if ret < 0 {
            if err == 0 {
                err = ret;
            }
            return Ok((err, cqe));
        }
        submit = submit.saturating_sub(ret as u32);
        if !cqe.is_null() {
            return Ok((err, cqe));
        }
        if !looped {
            looped = true;
            err = ret;
        }
    }
}

/// Waits as `ask` says through the ring's waiter; `None` to fall back to liburing.
fn take_over(ring: *mut IoUring, cqe_ptr: *mut *mut Cqe, ask: Ask) -> Option<c_int> {
    COUNTS.calls[ask.func].fetch_add(1, Ordering::Relaxed);
    let st = state();
    let Some(mode) = st.mode else {
        fallback(R_MODE);
        return None;
    };
    if ring.is_null() {
        return None;
    }
    if ask.wait_nr == 0 {
        fallback(R_PEEK);
        return None;
    }
    if !ask.sigmask.is_null() {
        fallback(R_SIGMASK);
        return None;
    }
    // SAFETY: the application passes its own live ring, as liburing requires.
    let fx = unsafe { fixed(ring) };
    if fx.features & FEAT_EXT_ARG == 0 {
        fallback(R_NO_EXT_ARG);
        return None;
    }
    let Some(raw) = raw_of(&fx) else {
        fallback(R_FLAGS);
        return None;
    };
    // SAFETY: a non-null ts is the application's __kernel_timespec, as liburing reads it.
    let timeout = unsafe { ask.ts.as_ref() }.map(timeout_of);
    let Some(slot) = slot_of(&fx, ring as usize, mode) else {
        fallback(R_BUSY);
        return None;
    };
    let Ok(mut g) = slot.try_lock() else {
        fallback(R_BUSY);
        return None;
    };
    if ask.flush {
        // SAFETY: a submitting call: the calling thread owns the ring's SQ side.
        unsafe { flush_sq(ring, &fx) };
    }
    // What liburing's enter is asked to submit: the count given, or (flushing) every SQE
    // published and not consumed (liburing's __io_uring_flush_sq returns that).
    let submit = match ask.count {
        Some(n) => n,
        None if ask.flush => sq_tail(&fx).wrapping_sub(sq_head(&fx)),
        None => 0,
    };
    let r = catch_unwind(AssertUnwindSafe(|| match ask.shape {
        Shape::OneEnter => enter(&mut g.waiter, &raw, &fx, submit, ask.wait_nr, timeout)
            .map(|r| (r, std::ptr::null_mut())),
        Shape::GetCqe => get_cqe(&mut g.waiter, &raw, &fx, submit, ask.wait_nr, timeout),
    }));
    drop(g);
    let (ret, cqe) = match r {
        Ok(Ok(x)) => x,
        Ok(Err(())) => {
            // The waiter could not follow the ring (no record table left): nothing was done.
            fallback(R_BUSY);
            return None;
        }
        Err(_) => {
            fallback(R_PANIC);
            return None;
        }
    };
    COUNTS.taken[ask.func].fetch_add(1, Ordering::Relaxed);
    if !cqe_ptr.is_null() {
        // SAFETY: a non-null cqe_ptr is the application's out-pointer.
        unsafe { *cqe_ptr = cqe };
    }
    Some(ret)
}

/// liburing's `__io_uring_get_cqe`.
///
/// # Safety
///
/// As liburing's: `ring` is a live ring, `cqe_ptr` a writable pointer, `sigmask` null or a
/// signal set.
#[no_mangle]
pub unsafe extern "C" fn __io_uring_get_cqe(
    ring: *mut IoUring,
    cqe_ptr: *mut *mut Cqe,
    submit: c_uint,
    wait_nr: c_uint,
    sigmask: *mut libc::sigset_t,
) -> c_int {
    let ask = Ask {
        func: GET_CQE,
        shape: Shape::GetCqe,
        flush: false,
        count: Some(submit),
        wait_nr,
        ts: std::ptr::null(),
        sigmask,
    };
    if let Some(r) = take_over(ring, cqe_ptr, ask) {
        return r;
    }
    call_real!(
        c"__io_uring_get_cqe",
        unsafe extern "C" fn(
            *mut IoUring,
            *mut *mut Cqe,
            c_uint,
            c_uint,
            *mut libc::sigset_t,
        ) -> c_int,
        ring,
        cqe_ptr,
        submit,
        wait_nr,
        sigmask
    )
}

/// liburing's `io_uring_wait_cqes`.
///
/// # Safety
///
/// As liburing's: `ts` is null or a `__kernel_timespec`.
#[no_mangle]
pub unsafe extern "C" fn io_uring_wait_cqes(
    ring: *mut IoUring,
    cqe_ptr: *mut *mut Cqe,
    wait_nr: c_uint,
    ts: *mut KernelTimespec,
    sigmask: *mut libc::sigset_t,
) -> c_int {
    let ask = Ask {
        func: WAIT_CQES,
        shape: Shape::GetCqe,
        flush: false,
        count: None,
        wait_nr,
        ts,
        sigmask,
    };
    if let Some(r) = take_over(ring, cqe_ptr, ask) {
        return r;
    }
    call_real!(
        c"io_uring_wait_cqes",
        unsafe extern "C" fn(
            *mut IoUring,
            *mut *mut Cqe,
            c_uint,
            *mut KernelTimespec,
            *mut libc::sigset_t,
        ) -> c_int,
        ring,
        cqe_ptr,
        wait_nr,
        ts,
        sigmask
    )
}

/// liburing's `io_uring_wait_cqe_timeout`.
///
/// # Safety
///
/// As liburing's.
#[no_mangle]
pub unsafe extern "C" fn io_uring_wait_cqe_timeout(
    ring: *mut IoUring,
    cqe_ptr: *mut *mut Cqe,
    ts: *mut KernelTimespec,
) -> c_int {
    let ask = Ask {
        func: WAIT_CQE_TIMEOUT,
        shape: Shape::GetCqe,
        flush: false,
        count: None,
        wait_nr: 1,
        ts,
        sigmask: std::ptr::null(),
    };
    if let Some(r) = take_over(ring, cqe_ptr, ask) {
        return r;
    }
    call_real!(
        c"io_uring_wait_cqe_timeout",
        unsafe extern "C" fn(*mut IoUring, *mut *mut Cqe, *mut KernelTimespec) -> c_int,
        ring,
        cqe_ptr,
        ts
    )
}

/// liburing's `io_uring_submit_and_wait`.
///
/// # Safety
///
/// As liburing's.
#[no_mangle]
pub unsafe extern "C" fn io_uring_submit_and_wait(ring: *mut IoUring, wait_nr: c_uint) -> c_int {
    let ask = Ask {
        func: SUBMIT_AND_WAIT,
        shape: Shape::OneEnter,
        flush: true,
        count: None,
        wait_nr,
        ts: std::ptr::null(),
        sigmask: std::ptr::null(),
    };
    if let Some(r) = take_over(ring, std::ptr::null_mut(), ask) {
        return r;
    }
    call_real!(
        c"io_uring_submit_and_wait",
        unsafe extern "C" fn(*mut IoUring, c_uint) -> c_int,
        ring,
        wait_nr
    )
}

/// liburing's `io_uring_submit_and_wait_timeout`.
///
/// # Safety
///
/// As liburing's.
#[no_mangle]
pub unsafe extern "C" fn io_uring_submit_and_wait_timeout(
    ring: *mut IoUring,
    cqe_ptr: *mut *mut Cqe,
    wait_nr: c_uint,
    ts: *mut KernelTimespec,
    sigmask: *mut libc::sigset_t,
) -> c_int {
    let ask = Ask {
        func: SUBMIT_AND_WAIT_TIMEOUT,
        shape: Shape::GetCqe,
        flush: true,
        count: None,
        wait_nr,
        ts,
        sigmask,
    };
    if let Some(r) = take_over(ring, cqe_ptr, ask) {
        return r;
    }
    call_real!(
        c"io_uring_submit_and_wait_timeout",
        unsafe extern "C" fn(
            *mut IoUring,
            *mut *mut Cqe,
            c_uint,
            *mut KernelTimespec,
            *mut libc::sigset_t,
        ) -> c_int,
        ring,
        cqe_ptr,
        wait_nr,
        ts,
        sigmask
    )
}

/// liburing's `io_uring_queue_exit`: forgets the ring's waiter (its counts are kept for the
/// summary), then lets liburing tear the ring down. Takes no lock another thread may hold for
/// long: a waiter another thread is waiting through is forgotten uncounted.
///
/// # Safety
///
/// As liburing's.
#[no_mangle]
pub unsafe extern "C" fn io_uring_queue_exit(ring: *mut IoUring) {
    let key = ring as usize;
    let st = state();
    let gone = st.rings.write().ok().and_then(|mut m| m.remove(&key));
    if let Some(slot) = gone {
        if let Ok(g) = slot.try_lock() {
            if let Ok(mut r) = st.retired.lock() {
                add_stats(&mut r, &g.waiter.stats());
            }
        }
    }
    static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    let p = real(&CACHE, c"io_uring_queue_exit");
    if !p.is_null() {
        // SAFETY: liburing's io_uring_queue_exit, `void (struct io_uring *)`.
        let f: unsafe extern "C" fn(*mut IoUring) = unsafe { std::mem::transmute(p) };
        // SAFETY: the application's ring, passed through.
        unsafe { f(ring) };
    }
}

/// liburing's `io_uring_get_events`: a non-blocking flush, counted and passed on.
///
/// # Safety
///
/// As liburing's.
#[no_mangle]
pub unsafe extern "C" fn io_uring_get_events(ring: *mut IoUring) -> c_int {
    COUNTS.calls[GET_EVENTS].fetch_add(1, Ordering::Relaxed);
    fallback(R_PEEK);
    call_real!(
        c"io_uring_get_events",
        unsafe extern "C" fn(*mut IoUring) -> c_int,
        ring
    )
}

/// Runs when the library is loaded: registers the summary for exit, and a fresh state for
/// forked children.
extern "C" fn on_load() {
    // SAFETY: atexit takes a plain extern "C" function with no arguments, which write_summary
    // is; it may run on any thread at exit and only reads shared state with try-locks.
    unsafe { libc::atexit(summary::write_summary) };
    // SAFETY: the child handler is a plain extern "C" function with no arguments; it runs in the
    // child alone, right after the fork, and takes no lock.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
