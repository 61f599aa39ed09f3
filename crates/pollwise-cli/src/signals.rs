//! The signals fio handles, as fio handles them: SIGINT, SIGTERM, SIGHUP and SIGALRM stop the
//! run; SIGUSR1 prints the status so far and the run goes on.
//!
//! The first stop signal asks the jobs to stop: every engine loop checks [`interrupted`] before
//! each submission, while thinking and in its waits, drains what is in flight (for
//! [`pollwise_bench::engine::DRAIN_GRACE`] at most), and the command prints the results so far,
//! marked as interrupted, removes its files and exits with 128 + the signal (130 for SIGINT,
//! 143 for SIGTERM, 129 for SIGHUP, 142 for SIGALRM). A second signal exits at once, still
//! removing the files pollwise made ([`crate::cleanup`]); so does the first if the command has
//! not ended [`BACKSTOP`] after it. A command or phase that cannot stop early with results (the
//! scenarios, calibration) is not *graceful*: there the first signal already exits at once,
//! files removed.
//!
//! SIGUSR1 (fio's status dump) asks the running `run` for its interim report, the one
//! `--status-interval` prints ([`set_status_hook`]); where there is none, a line says so.
//!
//! While `pollwise exec` runs a program ([`forward`]), every one of these signals is passed on to
//! the program at once instead, and exec waits for it to end: pollwise never exits leaving it
//! running. A signal the kernel sent (a terminal's Ctrl-C or hangup) reached the program's
//! process group, the program included, already, and is not sent twice.
//!
//! The handler itself only writes to a pipe (signal-hook's iterator); a watcher thread does the
//! rest, so nothing async-signal-unsafe runs in the handler.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

static FIRST: AtomicI32 = AtomicI32::new(0);
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// The signals that stop a run.
pub const STOP_SIGNALS: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGALRM];

/// How long a graceful stop may take before the process exits anyway (files removed): the
/// jobs' drain is bounded by half a second, so this is only reached by a wait no bound covers.
pub const BACKSTOP: Duration = Duration::from_secs(5);

/// What SIGUSR1 calls: prints the run's interim status.
pub type StatusHook = Arc<dyn Fn() + Send + Sync>;

static STATUS: Mutex<Option<StatusHook>> = Mutex::new(None);

/// Starts watching for the stop signals and SIGUSR1.
pub fn install() -> std::io::Result<()> {
    let mut all = STOP_SIGNALS.to_vec();
    all.push(SIGUSR1);
    let mut signals = SignalsInfo::<WithOrigin>::new(all)?;
    std::thread::Builder::new()
        .name("pollwise-signals".into())
        .stack_size(256 << 10)
        .spawn(move || {
            for info in signals.forever() {
                if !forwarded(info.signal, info.cause == Cause::Kernel) {
                    on_signal(info.signal);
                }
            }
        })?;
    Ok(())
}

/// Where signals go instead (see [`forward`]): 0 nowhere, -1 a program being started (they
/// are kept until it has a pid), else the program's pid. Read and set with [`KEPT`] locked.
static FORWARD: AtomicI32 = AtomicI32::new(0);

/// Signals that came while the program was being started.
static KEPT: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn kept() -> std::sync::MutexGuard<'static, Vec<i32>> {
    // A panic while holding the lock leaves a list that is still valid.
    KEPT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Passes `sig` on to the program signals are forwarded to, if there is one: whether it was
/// taken (then this process does nothing more with it).
fn forwarded(sig: i32, by_kernel: bool) -> bool {
    let mut kept = kept();
    match FORWARD.load(Ordering::SeqCst) {
        0 => false,
        -1 => {
            if !by_kernel {
                kept.push(sig);
            }
            true
        }
        pid => {
            if !by_kernel {
                let _ = crate::procsignal::send(pid as u32, sig);
            }
            true
        }
    }
}

/// From now until the guard drops, every signal pollwise watches is passed on to a program
/// instead of acting here; until [`Forward::to`] names the program, they are kept for it.
pub fn forward() -> Forward {
    let mut k = kept();
    k.clear();
    FORWARD.store(-1, Ordering::SeqCst);
    Forward
}

/// See [`forward`].
pub struct Forward;

impl Forward {
    /// The program is `pid`: the signals kept so far are sent to it now, the later ones as
    /// they come.
    pub fn to(&self, pid: u32) {
        let mut k = kept();
        FORWARD.store(pid as i32, Ordering::SeqCst);
        for sig in k.drain(..) {
            let _ = crate::procsignal::send(pid, sig);
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        let mut k = kept();
        FORWARD.store(0, Ordering::SeqCst);
        k.clear();
    }
}

/// Whether the running command stops its jobs on the first signal (and prints what it has)
/// rather than exiting at once.
pub fn set_graceful(on: bool) {
    GRACEFUL.store(on, Ordering::SeqCst);
}

/// Makes the first stop signal exit at once (files removed) until the guard drops, when the
/// command is graceful again if it was: for a phase with nothing to report and no point where
/// it checks [`interrupted`] (calibration inside `advise`). A signal that came before is
/// honoured at once.
pub fn immediate() -> Immediate {
    let was = GRACEFUL.swap(false, Ordering::SeqCst);
    if let (true, Some(sig)) = (was, received()) {
        exit_now(sig, "exiting");
    }
    Immediate { was }
}

/// See [`immediate`].
pub struct Immediate {
    was: bool,
}

impl Drop for Immediate {
    fn drop(&mut self) {
        GRACEFUL.store(self.was, Ordering::SeqCst);
    }
}

/// Sets (or clears) what SIGUSR1 calls.
pub fn set_status_hook(hook: Option<StatusHook>) {
    *STATUS.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// Whether a stop was asked for by a signal.
pub fn interrupted() -> bool {
    FIRST.load(Ordering::Relaxed) != 0
}

/// The first signal received, if any.
pub fn received() -> Option<i32> {
    match FIRST.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal's name.
pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGALRM => "SIGALRM",
        SIGUSR1 => "SIGUSR1",
        _ => "a signal",
    }
}

/// The exit status after `sig`: 128 + its number, as shells report it.
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

fn on_signal(sig: i32) {
    if sig == SIGUSR1 {
        status();
        return;
    }
    let first = FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first && GRACEFUL.load(Ordering::SeqCst) {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: {}: stopping the jobs and printing the results so far (again to exit at once)",
            name(sig)
        );
        // The jobs' waits are bounded; should something not be, the process still ends.
        let _ = std::thread::Builder::new()
            .name("pollwise-backstop".into())
            .stack_size(64 << 10)
            .spawn(move || {
                std::thread::sleep(BACKSTOP);
                exit_now(
                    sig,
                    &format!(
                        "the run did not stop within {} s; exiting",
                        BACKSTOP.as_secs()
                    ),
                );
            });
        return;
    }
    exit_now(sig, "exiting at once");
}

/// Removes the files pollwise made and exits with 128 + `sig`.
fn exit_now(sig: i32, what: &str) -> ! {
    crate::cleanup::remove_all_before_exit();
    let _ = writeln!(
        std::io::stderr(),
        "pollwise: {}: {what}; files pollwise made are removed",
        name(sig)
    );
    std::process::exit(exit_code(sig));
}

/// SIGUSR1: the interim status, or a line saying there is none.
fn status() {
    let hook = STATUS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match hook {
        Some(h) => h(),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "pollwise: SIGUSR1: no status to print now (`pollwise run` prints its report so far while its jobs run); going on"
            );
        }
    }
}
