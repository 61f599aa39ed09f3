//! SIGINT and SIGTERM, as fio handles them.
//!
//! The first signal asks the jobs to stop: every engine loop checks [`interrupted`] before each
//! submission and while thinking, drains what is in flight, and the command prints the results
//! so far, marked as interrupted, removes its files and exits with 128 + the signal (130 for
//! SIGINT, 143 for SIGTERM). A second signal exits at once, still removing the files pollwise
//! made ([`crate::cleanup`]). A command that cannot stop early (the scenarios) is not
//! *graceful*: there the first signal already exits at once, files removed.
//!
//! The handler itself only writes to a pipe (signal-hook's iterator); a watcher thread does the
//! rest, so nothing async-signal-unsafe runs in the handler.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

static FIRST: AtomicI32 = AtomicI32::new(0);
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Starts watching for SIGINT and SIGTERM.
pub fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("pollwise-signals".into())
        .stack_size(64 << 10)
        .spawn(move || {
            for sig in signals.forever() {
                on_signal(sig);
            }
        })?;
    Ok(())
}

/// Whether the running command stops its jobs on the first signal (and prints what it has)
/// rather than exiting at once.
pub fn set_graceful(on: bool) {
    GRACEFUL.store(on, Ordering::SeqCst);
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
        _ => "a signal",
    }
}

/// The exit status after `sig`: 128 + its number, as shells report it.
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

fn on_signal(sig: i32) {
    let first = FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first && GRACEFUL.load(Ordering::SeqCst) {
        let _ = writeln!(
            std::io::stderr(),
            "pollwise: {}: stopping the jobs and printing the results so far (again to exit at once)",
            name(sig)
        );
        return;
    }
    crate::cleanup::remove_all();
    let _ = writeln!(
        std::io::stderr(),
        "pollwise: {}: exiting at once; files pollwise made are removed",
        name(sig)
    );
    std::process::exit(exit_code(sig));
}
