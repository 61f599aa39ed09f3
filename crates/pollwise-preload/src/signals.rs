//! `sigaction` and `signal`, interposed: every handler the program installs is wrapped, so that a
//! delivery ends a spinning wait on that thread.
//!
//! **Rule.** A signal delivered to a thread waiting in liburing's blocking enter ends the wait
//! with `-EINTR`; a spin never enters the kernel, so it learns of the delivery from
//! [`note_signal`]'s per-thread count instead. The kernel calls `counting_handler`, which counts
//! the delivery and then runs the program's handler as it asked to be run (plain or
//! `SA_SIGINFO`); what the program reads back (`old`) is its own handler and flags, never the
//! wrapper. `SIG_DFL` and `SIG_IGN` are passed through unwrapped.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use pollwise::waiter::note_signal;

use crate::real;

/// The program's handler for each signal, and whether it takes `siginfo` (`SA_SIGINFO`): the
/// kernel calls [`counting_handler`] instead, which counts the delivery for the waits and calls
/// it. 0: none wrapped.
static HANDLERS: [AtomicUsize; 65] = [const { AtomicUsize::new(0) }; 65];
static TAKES_INFO: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];

/// The handler the kernel runs for a signal the program handles: counts the delivery on this
/// thread ([`note_signal`]: a spinning wait ends with `EINTR`, as a blocking enter would), then
/// runs the program's handler as it asked to be run.
extern "C" fn counting_handler(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    note_signal();
    let Some(i) = usize::try_from(sig).ok().filter(|&i| i < HANDLERS.len()) else {
        return;
    };
    let h = HANDLERS[i].load(Ordering::Acquire);
    if h == 0 || h == libc::SIG_DFL || h == libc::SIG_IGN {
        return;
    }
    if TAKES_INFO[i].load(Ordering::Acquire) {
        // SAFETY: h is the program's SA_SIGINFO handler for sig, installed through sigaction.
        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: h is the program's plain handler for sig, installed through sigaction or
        // signal.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// [`counting_handler`]'s address, as `sa_sigaction` holds it.
fn wrapper_addr() -> usize {
    counting_handler as *const () as usize
}

/// The C library's own `sigaction`.
fn real_sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int {
    static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    let p = real(&CACHE, c"sigaction");
    if p.is_null() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    type F = unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
    // SAFETY: p is the C library's sigaction, of type F.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(p) };
    // SAFETY: the caller's arguments, null or valid sigaction structs.
    unsafe { f(sig, act, old) }
}

/// `sigaction`, interposed: a handler the program installs is wrapped by `counting_handler`,
/// so that a signal ends a spinning wait as it ends liburing's blocking enter; what the program
/// reads back is its own handler and flags.
///
/// # Safety
///
/// As the C library's: `act` and `old` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let slot = usize::try_from(sig)
        .ok()
        .filter(|&i| i > 0 && i < HANDLERS.len());
    let Some(i) = slot else {
        return real_sigaction(sig, act, old);
    };
    let prev = (
        HANDLERS[i].load(Ordering::Acquire),
        TAKES_INFO[i].load(Ordering::Acquire),
    );
    // SAFETY: the caller passes null or a valid sigaction.
    let wrapped = unsafe { act.as_ref() }.and_then(|a| {
        let h = a.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN || h == wrapper_addr() {
            return None;
        }
        let mut w = *a;
        w.sa_sigaction = wrapper_addr();
        w.sa_flags |= libc::SA_SIGINFO;
        Some((w, h, a.sa_flags & libc::SA_SIGINFO != 0))
    });
    if let Some((_, h, info)) = &wrapped {
        // Before the kernel can call the wrapper with this signal.
        TAKES_INFO[i].store(*info, Ordering::Release);
        HANDLERS[i].store(*h, Ordering::Release);
    }
    let r = match &wrapped {
        Some((w, _, _)) => real_sigaction(sig, w, old),
        None => real_sigaction(sig, act, old),
    };
    if r != 0 && wrapped.is_some() {
        TAKES_INFO[i].store(prev.1, Ordering::Release);
        HANDLERS[i].store(prev.0, Ordering::Release);
    }
    // SAFETY: the caller passes null or a writable sigaction, which real_sigaction filled.
    if let Some(o) = unsafe { old.as_mut() } {
        if r == 0 && o.sa_sigaction == wrapper_addr() && prev.0 != 0 {
            o.sa_sigaction = prev.0;
            if !prev.1 {
                o.sa_flags &= !libc::SA_SIGINFO;
            }
        }
    }
    r
}

/// `signal`, interposed: glibc's BSD semantics (`SA_RESTART`, the signal blocked in its
/// handler) through the interposed [`sigaction`].
///
/// # Safety
///
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: a zeroed sigaction is a valid one (empty mask, no flags).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: act.sa_mask is a sigset_t of ours.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
    }
    // SAFETY: a zeroed sigaction, to be filled.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both point to sigactions of ours.
    if unsafe { sigaction(sig, &act, &mut old) } < 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}
