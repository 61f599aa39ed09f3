//! An `LD_PRELOAD` library that gives an unmodified, dynamically linked liburing application
//! pollwise's waits.
//!
//! liburing.so.2 exports the functions an application's waits go through: `__io_uring_get_cqe`
//! (which the inline `io_uring_wait_cqe`, `io_uring_wait_cqe_nr` and `io_uring_peek_cqe` call
//! when the CQ is short), `io_uring_wait_cqes`, `io_uring_wait_cqe_timeout`,
//! `io_uring_submit_and_wait`, `io_uring_submit_and_wait_timeout` and `io_uring_get_events`.
//! This library defines them first: each waits through a [`Waiter`] (one per ring) in the mode
//! `POLLWISE_MODE` names (`auto` when unset:
//! `auto|poll|hybrid|adaptive|interrupt|khybrid|dpas`), and returns what liburing 2.3 would:
//! the same return values (`-ETIME` only when no CQE came in time, `-EINTR`, the count of SQEs
//! submitted), the same `*cqe_ptr` (the first CQE, left on the ring).
//!
//! It falls back to liburing's own function (`dlsym(RTLD_NEXT)`) for anything it cannot do
//! exactly: a signal mask given (the wait would have to swap it atomically), a ring with setup
//! flags it does not know or without `IORING_FEAT_EXT_ARG`, a peek (nothing to decide), a ring
//! another thread is waiting on, an unknown mode. `io_uring_get_events` is only counted, and
//! `io_uring_queue_exit` forgets the ring's waiter before liburing tears the ring down.
//!
//! At exit it appends one JSON line to the file `POLLWISE_SUMMARY` names (if set): the mode,
//! calls per function, waits taken over, spins, sleeps, blocks, time in each mode, the
//! fallbacks by reason, and the process's CPU time. It never prints.

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use pollwise::policy::{Mode, PolicyConfig};
use pollwise::ring::{RawRing, RingParts, FEAT_EXT_ARG};
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
/// `IORING_SETUP_CQE32`.
const SETUP_CQE32: u32 = 1 << 11;

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
    /// The mode, `None` when `POLLWISE_MODE` names no mode.
    mode: Option<Mode>,
    mode_text: String,
    rings: RwLock<HashMap<usize, Arc<Mutex<Slot>>>>,
    /// Stats of waiters whose rings went away.
    retired: Mutex<WaiterStats>,
}

fn state() -> &'static State {
    static S: OnceLock<State> = OnceLock::new();
    S.get_or_init(|| {
        let text = std::env::var("POLLWISE_MODE").unwrap_or_else(|_| "auto".into());
        State {
            mode: text.trim().parse().ok(),
            mode_text: text,
            rings: RwLock::new(HashMap::new()),
            retired: Mutex::new(WaiterStats::default()),
        }
    })
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

/// The ring's waiter, made on first use; `None` (counted) when another thread holds it.
fn slot_of(ring: &IoUring, key: usize, mode: Mode) -> Option<Arc<Mutex<Slot>>> {
    let st = state();
    let found = st.rings.read().ok().and_then(|m| m.get(&key).cloned());
    let make = || {
        COUNTS.rings.fetch_add(1, Ordering::Relaxed);
        Arc::new(Mutex::new(Slot {
            ring_fd: ring.ring_fd,
            cq_head: ring.cq.khead as usize,
            waiter: Waiter::new(&PolicyConfig::new(mode)),
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
        if g.ring_fd != ring.ring_fd || g.cq_head != ring.cq.khead as usize {
            // A new ring at the address of one that went away: start afresh.
            if let Ok(mut r) = st.retired.lock() {
                add_stats(&mut r, &g.waiter.stats());
            }
            g.ring_fd = ring.ring_fd;
            g.cq_head = ring.cq.khead as usize;
            g.waiter = Waiter::new(&PolicyConfig::new(mode));
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
fn raw_of(ring: &IoUring) -> Option<RawRing> {
    let registered = ring.int_flags & INT_FLAG_REG_RING != 0;
    // SAFETY: kring_mask points at the CQ ring mask in the ring's mapping, set up by
    // io_uring_queue_init and valid while the ring is (the caller is using it).
    let cq_mask = unsafe { *ring.cq.kring_mask };
    let parts = RingParts {
        enter_fd: if registered {
            ring.enter_ring_fd
        } else {
            ring.ring_fd
        },
        registered,
        setup_flags: ring.flags,
        features: ring.features,
        sq_head: ring.sq.khead,
        sq_tail: ring.sq.ktail,
        sq_flags: ring.sq.kflags,
        cq_head: ring.cq.khead,
        cq_tail: ring.cq.ktail,
        cq_mask,
        cqes: ring.cq.cqes.cast(),
    };
    // SAFETY: the pointers are liburing's own into the ring's mapping, valid while the ring is;
    // the view is used only inside the call the application made on this ring, during which
    // (liburing's rule) no other thread consumes its CQ.
    unsafe { RawRing::from_parts(parts) }.ok()
}

/// liburing's `__io_uring_flush_sq`: publishes the SQEs taken with `io_uring_get_sqe`.
fn flush_sq(ring: &mut IoUring) {
    let tail = ring.sq.sqe_tail;
    if ring.sq.sqe_head != tail {
        ring.sq.sqe_head = tail;
        // SAFETY: ktail points at the SQ tail in the ring's mapping; liburing stores it the
        // same way (a release store, so the kernel sees the SQEs before the tail).
        unsafe { (*ring.sq.ktail.cast::<AtomicU32>()).store(tail, Ordering::Release) };
    }
}

/// The first CQE on the ring, or null (liburing's `__io_uring_peek_cqe` on a ring with
/// `EXT_ARG`, which posts no internal timeout CQEs).
fn first_cqe(ring: &IoUring) -> *mut Cqe {
    // SAFETY: the CQ head and tail are in the ring's mapping; the tail is loaded with Acquire,
    // so the entry it covers is published.
    let (head, tail) = unsafe {
        (
            (*ring.cq.khead.cast::<AtomicU32>()).load(Ordering::Relaxed),
            (*ring.cq.ktail.cast::<AtomicU32>()).load(Ordering::Acquire),
        )
    };
    if head == tail {
        return std::ptr::null_mut();
    }
    let shift = u32::from(ring.flags & SETUP_CQE32 != 0);
    // SAFETY: as above: kring_mask is valid while the ring is.
    let mask = unsafe { *ring.cq.kring_mask };
    // In bounds of the CQE array (mask + 1 entries, twice as many halves with CQE32);
    // wrapping_add keeps it a pointer computation without unsafe.
    ring.cq.cqes.wrapping_add(((head & mask) << shift) as usize)
}

fn cq_ready(ring: &IoUring) -> u32 {
    // SAFETY: as in first_cqe.
    unsafe {
        (*ring.cq.ktail.cast::<AtomicU32>())
            .load(Ordering::Acquire)
            .wrapping_sub((*ring.cq.khead.cast::<AtomicU32>()).load(Ordering::Relaxed))
    }
}

fn sq_head(ring: &IoUring) -> u32 {
    // SAFETY: the SQ head is in the ring's mapping.
    unsafe { (*ring.sq.khead.cast::<AtomicU32>()).load(Ordering::Acquire) }
}

/// What a call asks.
struct Ask {
    func: usize,
    /// Publish the SQEs taken (the `submit_and_wait*` functions).
    flush: bool,
    /// Submit what is published.
    submit: bool,
    /// How many SQEs the caller said to submit (`__io_uring_get_cqe`'s `submit`); `None`: all
    /// that are published.
    count: Option<u32>,
    wait_nr: u32,
    ts: *const KernelTimespec,
    sigmask: *const libc::sigset_t,
    /// The call returns the count submitted (`io_uring_submit_and_wait`), not 0.
    returns_submitted: bool,
}

/// Waits as `ask` says through the ring's waiter; `None` to fall back to liburing.
fn take_over(ring: *mut IoUring, cqe_ptr: *mut *mut Cqe, ask: Ask) -> Option<c_int> {
    COUNTS.calls[ask.func].fetch_add(1, Ordering::Relaxed);
    let st = state();
    let Some(mode) = st.mode else {
        fallback(R_MODE);
        return None;
    };
    // SAFETY: the application passes its own live ring, as liburing requires.
    let ring = unsafe { ring.as_mut() }?;
    if ask.wait_nr == 0 {
        fallback(R_PEEK);
        return None;
    }
    if !ask.sigmask.is_null() {
        fallback(R_SIGMASK);
        return None;
    }
    if ring.features & FEAT_EXT_ARG == 0 {
        fallback(R_NO_EXT_ARG);
        return None;
    }
    let Some(raw) = raw_of(ring) else {
        fallback(R_FLAGS);
        return None;
    };
    let timeout = if ask.ts.is_null() {
        None
    } else {
        // SAFETY: a non-null ts is the application's __kernel_timespec, as liburing reads it.
        let ts = unsafe { &*ask.ts };
        Some(Duration::new(
            ts.tv_sec.max(0) as u64,
            ts.tv_nsec.clamp(0, 999_999_999) as u32,
        ))
    };
    let Some(slot) = slot_of(ring, ring as *const IoUring as usize, mode) else {
        fallback(R_BUSY);
        return None;
    };
    let Ok(mut g) = slot.try_lock() else {
        fallback(R_BUSY);
        return None;
    };
    if ask.flush {
        flush_sq(ring);
    }
    let had_cqe = cq_ready(ring) > 0;
    // What liburing's enter would say it submitted: the count asked, or every SQE published and
    // not consumed; nothing for a plain wait (what other threads submit meanwhile is theirs).
    let submitted = match (ask.submit, ask.count) {
        (false, _) => 0,
        (true, Some(n)) => n as c_int,
        (true, None) => {
            // SAFETY: ktail points at the SQ tail in the ring's mapping.
            let tail = unsafe { (*ring.sq.ktail.cast::<AtomicU32>()).load(Ordering::Acquire) };
            tail.wrapping_sub(sq_head(ring)).min(i32::MAX as u32) as c_int
        }
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        if ask.submit {
            g.waiter.submit_and_wait_timeout(&raw, ask.wait_nr, timeout)
        } else {
            g.waiter.wait_timeout(&raw, ask.wait_nr, timeout)
        }
    }));
    drop(g);
    let Ok(r) = r else {
        fallback(R_PANIC);
        return None;
    };
    if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory) {
        // The waiter could not follow the ring (no record table left): nothing was waited.
        fallback(R_BUSY);
        return None;
    }
    COUNTS.taken[ask.func].fetch_add(1, Ordering::Relaxed);
    // What liburing returns when the wait went well: the count the enter submitted, unless a
    // CQE was there before it entered (then 0); io_uring_submit_and_wait: the count.
    let ok = if ask.returns_submitted || !had_cqe {
        submitted
    } else {
        0
    };
    let ret = match r {
        Ok(_) => ok,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            if errno == libc::ETIME && cq_ready(ring) > 0 && !ask.returns_submitted {
                // A timeout with CQEs ready is no error in liburing.
                ok
            } else if submitted > 0 && (ask.returns_submitted || !had_cqe) {
                // The kernel returns the count submitted, hiding the wait's error.
                submitted
            } else {
                -errno
            }
        }
    };
    if !cqe_ptr.is_null() {
        // SAFETY: a non-null cqe_ptr is the application's out-pointer.
        unsafe { *cqe_ptr = first_cqe(ring) };
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
        flush: false,
        submit: submit > 0,
        count: Some(submit),
        wait_nr,
        ts: std::ptr::null(),
        sigmask,
        returns_submitted: false,
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
        flush: false,
        submit: false,
        count: None,
        wait_nr,
        ts,
        sigmask,
        returns_submitted: false,
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
        flush: false,
        submit: false,
        count: None,
        wait_nr: 1,
        ts,
        sigmask: std::ptr::null(),
        returns_submitted: false,
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
        flush: true,
        submit: true,
        count: None,
        wait_nr,
        ts: std::ptr::null(),
        sigmask: std::ptr::null(),
        returns_submitted: true,
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
        flush: true,
        submit: true,
        count: None,
        wait_nr,
        ts,
        sigmask,
        returns_submitted: false,
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
/// summary), then lets liburing tear the ring down.
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
        if let (Ok(g), Ok(mut r)) = (slot.lock(), st.retired.lock()) {
            add_stats(&mut r, &g.waiter.stats());
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

/// The summary line: see the module docs.
fn summary() -> String {
    let st = state();
    let mut s = st.retired.lock().map(|r| *r).unwrap_or_default();
    let mut busy = 0;
    if let Ok(m) = st.rings.try_read() {
        for slot in m.values() {
            match slot.try_lock() {
                Ok(g) => add_stats(&mut s, &g.waiter.stats()),
                Err(_) => busy += 1,
            }
        }
    }
    let ru = pollwise::clock::Rusage::process();
    let p = &s.policy;
    let mode_ns = match st.mode {
        Some(Mode::Auto) => format!(
            "{{\"poll\":{},\"hybrid\":{},\"interrupt\":{},\"adaptive\":{}}}",
            p.auto.poll_ns, p.auto.hybrid_ns, p.auto.interrupt_ns, p.auto.adaptive_ns
        ),
        Some(m) => format!("{{\"{}\":{}}}", m.name(), s.wait_ns),
        None => "{}".into(),
    };
    let pairs = |names: &[&str], v: &[AtomicU64]| {
        names
            .iter()
            .zip(v)
            .map(|(n, c)| format!("\"{n}\":{}", c.load(Ordering::Relaxed)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let mode_text: String = st
        .mode_text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let comm: String = comm
        .trim()
        .chars()
        .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\')
        .collect();
    format!(
        concat!(
            "{{\"pid\":{},\"comm\":\"{}\",\"mode\":\"{}\",\"mode_known\":{},\"rings\":{},",
            "\"waits\":{},\"peeks\":{},\"ready_at_once\":{},\"timeouts\":{},\"interrupted\":{},",
            "\"untracked\":{},\"wait_ns\":{},\"submitted\":{},\"cqes\":{},\"enters\":{},",
            "\"spins\":{},\"empty_spins\":{},\"blocks\":{},\"sleeps\":{},\"slept_ns\":{},",
            "\"auto_switches\":{},\"mode_ns\":{},\"calls\":{{{}}},\"taken\":{{{}}},",
            "\"fallbacks\":{{{}}},\"busy_at_exit\":{},\"cpu_user_ns\":{},\"cpu_sys_ns\":{}}}\n"
        ),
        std::process::id(),
        comm,
        mode_text,
        st.mode.is_some(),
        COUNTS.rings.load(Ordering::Relaxed),
        s.waits,
        s.peeks,
        s.ready_at_once,
        s.timeouts,
        s.interrupted,
        s.untracked,
        s.wait_ns,
        s.submitted,
        s.cqes,
        s.enters,
        p.wait.polls,
        p.wait.empty_polls,
        p.wait.blocks,
        p.wait.sleeps,
        p.wait.slept_ns,
        p.auto.switches,
        mode_ns,
        pairs(&FUNCS, &COUNTS.calls),
        pairs(&FUNCS, &COUNTS.taken),
        pairs(&REASONS, &COUNTS.fallbacks),
        busy,
        ru.usr_ns,
        ru.sys_ns,
    )
}

/// At exit: appends the summary to `POLLWISE_SUMMARY`, if set (created 0600, never truncated,
/// never through a symbolic link).
extern "C" fn write_summary() {
    let _ = catch_unwind(|| {
        let Some(path) = std::env::var_os("POLLWISE_SUMMARY") else {
            return;
        };
        let line = summary();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    });
}

/// Runs when the library is loaded: registers the summary for exit.
extern "C" fn on_load() {
    // SAFETY: atexit takes a plain extern "C" function with no arguments, which write_summary
    // is; it may run on any thread at exit and only reads shared state with try-locks.
    unsafe { libc::atexit(write_summary) };
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
