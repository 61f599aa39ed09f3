//! A job thread's engine hooks by phase. An engine's hooks are fixed when it is built, but a job
//! thread's phases want different ones: the ramp feeds the latency-target search, the measured
//! period its logs, counters and checks, and verification nothing (its reads are not the
//! period's). The engine is built with hooks that call whatever the current phase put here.

use std::sync::{Arc, Mutex, PoisonError};

use pollwise::engine::{Done, OnDone, OnIssue};
use pollwise::request::Dir;

/// The completion and issue hooks of the current phase (none at first).
#[derive(Clone, Default)]
pub struct PhaseHooks {
    done: Arc<Mutex<Option<OnDone>>>,
    issue: Arc<Mutex<Option<OnIssue>>>,
}

impl PhaseHooks {
    /// The engine's completion hook: calls the phase's, if any.
    pub fn on_done(&self) -> OnDone {
        let slot = Arc::clone(&self.done);
        Box::new(move |d: &Done| {
            if let Some(f) = slot.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                f(d);
            }
        })
    }

    /// The engine's issue hook: calls the phase's, if any.
    pub fn on_issue(&self) -> OnIssue {
        let slot = Arc::clone(&self.issue);
        Box::new(move |dir: Dir, offset: u64, len: u32, now: u64| {
            if let Some(f) = slot.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                f(dir, offset, len, now);
            }
        })
    }

    /// From now on, completions go to `f` (`None`: nowhere).
    pub fn set_done(&self, f: Option<OnDone>) {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner) = f;
    }

    /// From now on, issued requests go to `f` (`None`: nowhere).
    pub fn set_issue(&self, f: Option<OnIssue>) {
        *self.issue.lock().unwrap_or_else(PoisonError::into_inner) = f;
    }
}
