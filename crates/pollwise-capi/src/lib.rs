//! pollwise's C ABI: a waiter that decides how a C program waits on its own liburing ring.
//!
//! The header (`include/pollwise.h`, generated from this file by cbindgen) declares these
//! functions and, for programs that include `<liburing.h>`, static inline wrappers that take a
//! `struct io_uring *`: liburing's struct layout stays on the C side, and the wrappers hand this
//! library the ring's fd, flags and the pointers into its mapped SQ and CQ ([`pollwise_ring`]).
//!
//! Ownership: a `pollwise_waiter` belongs to its caller from `pollwise_waiter_new*` until
//! `pollwise_waiter_free`; the ring stays the caller's, and a waiter never consumes a CQE,
//! changes a `user_data` or touches a buffer. Threads: a waiter is used by one thread at a
//! time (it may move between threads between calls; a second thread gets `-EBUSY`); the ring
//! must not have its CQ consumed by another thread during a wait on it. Errors are negated
//! errnos, as liburing's: `-ETIME` when a timeout passed, `-EINTR` when a signal ended the wait
//! (spins learn of it from `pollwise_note_signal`), `-EINVAL` for bad arguments.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pollwise::policy::{Mode, PolicyConfig};
use pollwise::request::{Dir, ReqClass};
use pollwise::ring::{RawRing, RingParts};
use pollwise::waiter::{Waiter, WaiterStats};

/// Block in the kernel until the completions arrive.
pub const POLLWISE_MODE_INTERRUPT: u32 = 0;
/// Spin on the completion queue.
pub const POLLWISE_MODE_POLL: u32 = 1;
/// Sleep part of each request's predicted latency, then spin.
pub const POLLWISE_MODE_HYBRID: u32 = 2;
/// Spin for an adaptive window, then block.
pub const POLLWISE_MODE_ADAPTIVE: u32 = 3;
/// Choose among the others at run time from what is measured.
pub const POLLWISE_MODE_AUTO: u32 = 4;
/// The kernel's HYBRID_IOPOLL rule, in user space: each request sleeps half the least run time
/// seen, then spins (kept for comparison).
pub const POLLWISE_MODE_KHYBRID: u32 = 5;
/// DPAS's rule (FAST '26), in user space: a sleep before the spin tuned by whether each sleep
/// was too long or too short, switching between spinning, that sleep and blocking with the
/// load (kept for comparison).
pub const POLLWISE_MODE_DPAS: u32 = 6;

/// Every mode by its `POLLWISE_MODE_*` value and its name.
const MODES: [(u32, Mode, &CStr); 7] = [
    (POLLWISE_MODE_INTERRUPT, Mode::Interrupt, c"interrupt"),
    (POLLWISE_MODE_POLL, Mode::Poll, c"poll"),
    (POLLWISE_MODE_HYBRID, Mode::Hybrid, c"hybrid"),
    (POLLWISE_MODE_ADAPTIVE, Mode::Adaptive, c"adaptive"),
    (POLLWISE_MODE_AUTO, Mode::Auto, c"auto"),
    (POLLWISE_MODE_KHYBRID, Mode::KHybrid, c"khybrid"),
    (POLLWISE_MODE_DPAS, Mode::Dpas, c"dpas"),
];

/// A waiter: policy state only. Opaque; made by `pollwise_waiter_new*`, freed by
/// `pollwise_waiter_free`.
pub struct pollwise_waiter {
    w: Waiter,
    name: &'static CStr,
    /// A thread is inside a call that uses the waiter: another gets `-EBUSY`.
    busy: AtomicBool,
}

/// What a waiter needs of a ring, filled by `pollwise_ring_of` from a liburing
/// `struct io_uring`. The pointers point into the ring's mapping and must stay valid during
/// each call that takes this struct.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pollwise_ring {
    /// The fd to enter by: the ring's fd, or its registered index when `registered`.
    pub enter_fd: c_int,
    /// Nonzero when `enter_fd` is a registered ring index (`io_uring_register_ring_fd`).
    pub registered: u32,
    /// The ring's setup flags (`IORING_SETUP_*`).
    pub setup_flags: u32,
    /// The kernel's features (`IORING_FEAT_*`).
    pub features: u32,
    /// `sq.khead`.
    pub sq_head: *const u32,
    /// `sq.ktail`.
    pub sq_tail: *const u32,
    /// `sq.kflags`.
    pub sq_flags: *const u32,
    /// `cq.khead`.
    pub cq_head: *const u32,
    /// `cq.ktail`.
    pub cq_tail: *const u32,
    /// `*cq.kring_mask`.
    pub cq_mask: u32,
    /// `cq.cqes`.
    pub cqes: *const u8,
}

/// Options for `pollwise_waiter_new_with`; start from `pollwise_options_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pollwise_options {
    /// One of the `POLLWISE_MODE_*` values.
    pub mode: u32,
    /// hybrid: the fraction of the predicted latency to sleep, in (0, 1].
    pub hybrid_fraction: f64,
    /// adaptive: the largest polling window, in nanoseconds.
    pub adaptive_max_ns: u64,
    /// auto: how much higher than polling's its median latency may be (0.10: 10%), in return
    /// for less CPU.
    pub auto_latency_slack: f64,
}

/// What a waiter did (`pollwise_get_stats`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pollwise_stats {
    /// Calls that asked for at least one CQE.
    pub waits: u64,
    /// Calls that asked for none (they never block).
    pub peeks: u64,
    /// Waits that found enough CQEs ready at once.
    pub ready_at_once: u64,
    /// Waits that ended on their timeout.
    pub timeouts: u64,
    /// Waits a signal ended.
    pub interrupted: u64,
    /// Waits with no request believed in flight (they blocked in the kernel).
    pub untracked: u64,
    /// Nanoseconds spent inside waits.
    pub wait_ns: u64,
    /// SQEs the kernel consumed while the waiter followed the ring.
    pub submitted: u64,
    /// CQEs seen.
    pub cqes: u64,
    /// `io_uring_enter` calls the waiter made.
    pub enters: u64,
    /// Looks at the CQ (spins).
    pub polls: u64,
    /// Looks that found nothing.
    pub empty_polls: u64,
    /// Blocking waits in the kernel.
    pub blocks: u64,
    /// Timed sleeps (hybrid).
    pub sleeps: u64,
    /// Nanoseconds asked to sleep, in all.
    pub slept_ns: u64,
    /// auto: times it changed mode.
    pub auto_switches: u64,
    /// auto: nanoseconds spent in poll.
    pub auto_poll_ns: u64,
    /// auto: nanoseconds spent in hybrid.
    pub auto_hybrid_ns: u64,
    /// auto: nanoseconds spent in interrupt.
    pub auto_interrupt_ns: u64,
    /// auto: nanoseconds spent in adaptive.
    pub auto_adaptive_ns: u64,
}

impl From<&WaiterStats> for pollwise_stats {
    fn from(s: &WaiterStats) -> Self {
        let p = &s.policy;
        pollwise_stats {
            waits: s.waits,
            peeks: s.peeks,
            ready_at_once: s.ready_at_once,
            timeouts: s.timeouts,
            interrupted: s.interrupted,
            untracked: s.untracked,
            wait_ns: s.wait_ns,
            submitted: s.submitted,
            cqes: s.cqes,
            enters: s.enters,
            polls: p.wait.polls,
            empty_polls: p.wait.empty_polls,
            blocks: p.wait.blocks,
            sleeps: p.wait.sleeps,
            slept_ns: p.wait.slept_ns,
            auto_switches: p.auto.switches,
            auto_poll_ns: p.auto.poll_ns,
            auto_hybrid_ns: p.auto.hybrid_ns,
            auto_interrupt_ns: p.auto.interrupt_ns,
            auto_adaptive_ns: p.auto.adaptive_ns,
        }
    }
}

fn mode_of(m: u32) -> Option<Mode> {
    MODES.iter().find(|e| e.0 == m).map(|e| e.1)
}

fn name_of(m: Mode) -> &'static CStr {
    MODES.iter().find(|e| e.1 == m).map_or(c"", |e| e.2)
}

/// The defaults for `mode` (the kernel's and QEMU's defaults).
#[no_mangle]
pub extern "C" fn pollwise_options_default(mode: u32) -> pollwise_options {
    let c = PolicyConfig::new(mode_of(mode).unwrap_or(Mode::Auto));
    pollwise_options {
        mode,
        hybrid_fraction: c.hybrid_fraction,
        adaptive_max_ns: c.poll_max_ns,
        auto_latency_slack: c.auto_latency_slack,
    }
}

fn new_waiter(c: &PolicyConfig) -> *mut pollwise_waiter {
    catch_unwind(|| {
        Box::into_raw(Box::new(pollwise_waiter {
            w: Waiter::new(c),
            name: name_of(c.mode),
            busy: AtomicBool::new(false),
        }))
    })
    .unwrap_or(std::ptr::null_mut())
}

/// A waiter for `mode` (a `POLLWISE_MODE_*` value) with the defaults; NULL for an unknown
/// mode. Free it with `pollwise_waiter_free`.
#[no_mangle]
pub extern "C" fn pollwise_waiter_new(mode: u32) -> *mut pollwise_waiter {
    match mode_of(mode) {
        Some(m) => new_waiter(&PolicyConfig::new(m)),
        None => std::ptr::null_mut(),
    }
}

/// A waiter for the mode named `name` ("interrupt", "poll", "hybrid", "adaptive", "auto",
/// "khybrid", "dpas"); NULL for a null or unknown name.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pollwise_waiter_new_named(name: *const c_char) -> *mut pollwise_waiter {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-null above).
    let name = unsafe { CStr::from_ptr(name) };
    match name.to_str().ok().and_then(|s| s.parse::<Mode>().ok()) {
        Some(m) => new_waiter(&PolicyConfig::new(m)),
        None => std::ptr::null_mut(),
    }
}

/// The least hybrid fraction: a sleep of less than a thousandth of the prediction is no sleep.
pub const POLLWISE_HYBRID_FRACTION_MIN: f64 = 0.001;
/// The largest auto latency slack: 10 (a median eleven times polling's).
pub const POLLWISE_AUTO_LATENCY_SLACK_MAX: f64 = 10.0;
/// The least adaptive window: 1 µs.
pub const POLLWISE_ADAPTIVE_MAX_NS_MIN: u64 = 1_000;
/// The largest adaptive window: 1 s.
pub const POLLWISE_ADAPTIVE_MAX_NS_MAX: u64 = 1_000_000_000;

/// What is wrong with `o`, in one line, or `None`.
fn options_error(o: &pollwise_options) -> Option<&'static CStr> {
    if mode_of(o.mode).is_none() {
        return Some(c"mode: not a POLLWISE_MODE_* value");
    }
    if !(o.hybrid_fraction >= POLLWISE_HYBRID_FRACTION_MIN && o.hybrid_fraction <= 1.0) {
        return Some(c"hybrid_fraction: out of range, give a fraction in [0.001, 1]");
    }
    if !(o.auto_latency_slack >= 0.0 && o.auto_latency_slack <= POLLWISE_AUTO_LATENCY_SLACK_MAX) {
        return Some(c"auto_latency_slack: out of range, give a fraction in [0, 10]");
    }
    if !(POLLWISE_ADAPTIVE_MAX_NS_MIN..=POLLWISE_ADAPTIVE_MAX_NS_MAX).contains(&o.adaptive_max_ns) {
        return Some(c"adaptive_max_ns: out of range, give nanoseconds in [1000, 1000000000]");
    }
    None
}

/// Why `pollwise_waiter_new_with` would refuse `options`: one line naming the option and its
/// range (a static string), or NULL when every option is in range. A null `options` is refused.
///
/// # Safety
///
/// `options` is null or points to a `pollwise_options`.
#[no_mangle]
pub unsafe extern "C" fn pollwise_options_error(options: *const pollwise_options) -> *const c_char {
    // SAFETY: the caller passes null or a valid pollwise_options.
    match unsafe { options.as_ref() } {
        None => c"options: a null pointer".as_ptr(),
        Some(o) => options_error(o).map_or(std::ptr::null(), CStr::as_ptr),
    }
}

/// A waiter with `options`; NULL for a null pointer, an unknown mode or an option out of
/// range (`pollwise_options_error` says which): a hybrid fraction outside [0.001, 1], an auto
/// latency slack outside [0, 10], an adaptive window outside [1 µs, 1 s].
///
/// # Safety
///
/// `options` is null or points to a `pollwise_options`.
#[no_mangle]
pub unsafe extern "C" fn pollwise_waiter_new_with(
    options: *const pollwise_options,
) -> *mut pollwise_waiter {
    // SAFETY: the caller passes null or a valid pollwise_options.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return std::ptr::null_mut();
    };
    if options_error(o).is_some() {
        return std::ptr::null_mut();
    }
    let Some(mode) = mode_of(o.mode) else {
        return std::ptr::null_mut();
    };
    let mut c = PolicyConfig::new(mode);
    c.hybrid_fraction = o.hybrid_fraction;
    c.poll_max_ns = o.adaptive_max_ns;
    c.auto_latency_slack = o.auto_latency_slack;
    new_waiter(&c)
}

/// Frees a waiter (NULL is ignored). The ring it waited on is untouched.
///
/// # Safety
///
/// `w` is null or a waiter from `pollwise_waiter_new*` not freed yet, used by no other thread.
#[no_mangle]
pub unsafe extern "C" fn pollwise_waiter_free(w: *mut pollwise_waiter) {
    if !w.is_null() {
        // SAFETY: the caller passes a waiter made by Box::into_raw above, freed once.
        drop(unsafe { Box::from_raw(w) });
    }
}

/// The waiter's mode, by name (a static string).
///
/// # Safety
///
/// `w` is a live waiter.
#[no_mangle]
pub unsafe extern "C" fn pollwise_mode_name(w: *const pollwise_waiter) -> *const c_char {
    // SAFETY: the caller passes a live waiter or null.
    match unsafe { w.as_ref() } {
        Some(w) => w.name.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Notes the next request the caller will publish on its ring: its `user_data` (matched
/// against CQEs, never changed), whether it writes, and its length in bytes, for hybrid's
/// per-class prediction. Optional: un-noted requests are followed anonymously.
///
/// # Safety
///
/// `w` is a live waiter (a note for a waiter another thread is using is dropped).
#[no_mangle]
pub unsafe extern "C" fn pollwise_note_submit(
    w: *mut pollwise_waiter,
    user_data: u64,
    is_write: c_int,
    len: u32,
) {
    let dir = if is_write != 0 { Dir::Write } else { Dir::Read };
    // SAFETY: the caller passes a live waiter or null. A waiter another thread is using is
    // left as it is (the note is dropped).
    let _ = unsafe { with_waiter(w, |w| w.w.note_submit(user_data, ReqClass { dir, len })) };
}

/// Counts a signal delivered to the calling thread, so that a spinning wait on it ends with
/// `-EINTR` as a blocking one does. Async-signal-safe: call it first thing in each signal
/// handler whose signal should end a wait (the preload library does this for every handler).
#[no_mangle]
pub extern "C" fn pollwise_note_signal() {
    pollwise::waiter::note_signal();
}

/// Waits until at least `wait_nr` CQEs are ready on `ring` (submitting first what the caller
/// published when `submit` is nonzero; the caller has already made its SQ tail visible), or
/// until `timeout_ns` nanoseconds pass (a negative `timeout_ns`: no limit). Returns how many
/// CQEs are ready, or a negated errno: `-ETIME`, `-EINTR`, `-EINVAL` (bad arguments, a ring
/// with setup flags this library does not know), `-EBUSY` (another thread is using the
/// waiter), or the kernel's. As the kernel's enter, a signal or the timeout ends the wait with
/// the count ready when the CQ holds CQEs (fewer than `wait_nr`), and a submission the kernel
/// stopped short (an SQE that failed at submission) returns at once. `wait_nr` 0 never blocks.
/// The CQEs stay on the ring for the caller to consume.
///
/// # Safety
///
/// `w` is a live waiter; `ring` points to a `pollwise_ring` whose pointers point into a mapped
/// ring that stays mapped during the call, and whose CQ no other thread consumes during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn pollwise_wait_ring(
    w: *mut pollwise_waiter,
    ring: *const pollwise_ring,
    wait_nr: c_uint,
    timeout_ns: i64,
    submit: c_int,
) -> c_int {
    // SAFETY: the caller passes a valid pollwise_ring or null.
    let Some(r) = (unsafe { ring.as_ref() }) else {
        return -libc::EINVAL;
    };
    // SAFETY: the caller passes a live waiter or null.
    with_waiter(w, |w| wait_ring(w, r, wait_nr, timeout_ns, submit)).unwrap_or_else(|e| e)
}

/// Runs `f` with the waiter `w` held by this thread: `Err(-EINVAL)` for null, `Err(-EBUSY)` when
/// another thread is inside a call on it.
///
/// # Safety
///
/// `w` is null or a live waiter.
unsafe fn with_waiter<T>(
    w: *mut pollwise_waiter,
    f: impl FnOnce(&mut pollwise_waiter) -> T,
) -> Result<T, c_int> {
    if w.is_null() {
        return Err(-libc::EINVAL);
    }
    // SAFETY: a live waiter (the caller's): the flag is only ever used atomically through a
    // shared reference, so two threads calling at once may both read it; one wins the swap.
    if unsafe { &(*w).busy }.swap(true, Ordering::Acquire) {
        return Err(-libc::EBUSY);
    }
    // SAFETY: this thread set the busy flag: no other call touches the waiter until it is
    // cleared below.
    let held = unsafe { &mut *w };
    let r = f(held);
    held.busy.store(false, Ordering::Release);
    Ok(r)
}

/// [`pollwise_wait_ring`] with the waiter held by this thread.
fn wait_ring(
    w: &mut pollwise_waiter,
    r: &pollwise_ring,
    wait_nr: c_uint,
    timeout_ns: i64,
    submit: c_int,
) -> c_int {
    let parts = RingParts {
        enter_fd: r.enter_fd,
        registered: r.registered != 0,
        setup_flags: r.setup_flags,
        features: r.features,
        sq_head: r.sq_head,
        sq_tail: r.sq_tail,
        sq_flags: r.sq_flags,
        cq_head: r.cq_head,
        cq_tail: r.cq_tail,
        cq_mask: r.cq_mask,
        cqes: r.cqes,
    };
    // SAFETY: the caller's contract: the pointers point into the ring's mapping, which stays
    // mapped during this call, and nobody else consumes its CQ meanwhile.
    let raw = match unsafe { RawRing::from_parts(parts) } {
        Ok(r) => r,
        Err(_) => return -libc::EINVAL,
    };
    let timeout = u64::try_from(timeout_ns).ok().map(Duration::from_nanos);
    let r = catch_unwind(AssertUnwindSafe(|| {
        if submit != 0 {
            w.w.submit_and_wait_timeout(&raw, wait_nr, timeout)
        } else {
            w.w.wait_timeout(&raw, wait_nr, timeout)
        }
    }));
    match r {
        Ok(Ok(n)) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Ok(Err(e)) => -e.raw_os_error().unwrap_or(libc::EIO),
        Err(_) => -libc::ENOTRECOVERABLE,
    }
}

/// Copies what the waiter did into `out`. Returns 0, `-EINVAL` for a null pointer, or `-EBUSY`
/// while another thread is inside a call on the waiter.
///
/// # Safety
///
/// `w` is a live waiter; `out` is null or points to a writable `pollwise_stats`.
#[no_mangle]
pub unsafe extern "C" fn pollwise_get_stats(
    w: *const pollwise_waiter,
    out: *mut pollwise_stats,
) -> c_int {
    if out.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: the caller passes a live waiter or null (made by Box::into_raw: mutable memory,
    // whose busy flag keeps a thread waiting through it from being read meanwhile).
    match unsafe { with_waiter(w.cast_mut(), |w| pollwise_stats::from(&w.w.stats())) } {
        Ok(s) => {
            // SAFETY: out is non-null and the caller says it points to a writable
            // pollwise_stats.
            unsafe { out.write(s) };
            0
        }
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_a_value_and_its_own_name() {
        for &m in Mode::ALL {
            let (v, _, name) = MODES
                .iter()
                .find(|e| e.1 == m)
                .unwrap_or_else(|| panic!("{m:?} has no POLLWISE_MODE_* value"));
            assert_eq!(mode_of(*v), Some(m));
            assert_eq!(name.to_str().unwrap().parse::<Mode>().ok(), Some(m));
            let w = pollwise_waiter_new(*v);
            assert!(!w.is_null(), "{m:?}");
            // SAFETY: w is a live waiter made above, freed once below.
            let got = unsafe { CStr::from_ptr(pollwise_mode_name(w)) };
            assert_eq!(got, *name);
            // SAFETY: w is a live waiter, used by this thread only, freed once.
            unsafe { pollwise_waiter_free(w) };
        }
        assert!(mode_of(MODES.len() as u32).is_none());
        assert!(pollwise_waiter_new(MODES.len() as u32).is_null());
    }
}
