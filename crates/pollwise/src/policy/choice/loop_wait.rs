//! How a loop that serves many sources waits when it finds nothing to do, and the chooser it
//! uses for `auto`.

use super::{Chooser, INTERRUPT, POLL};

/// How a loop that serves many sources (the [reactor](crate::reactor), the
/// [shared poller](crate::poller)) waits when it finds nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoopWait {
    /// Its own adaptive rule (the reactor's per-source windows, the poller's idle time): the
    /// default, as before `auto` existed.
    #[default]
    Adaptive,
    /// Spin: the reactor polls each iteration for its whole window cap; the poller never sleeps.
    Poll,
    /// Block at once: the reactor goes straight to its fd monitor; the poller sleeps at its
    /// first idle round.
    Interrupt,
    /// Choose among the three at run time with `auto`'s [`Chooser`].
    Auto,
}

impl LoopWait {
    /// Every way, in report order.
    pub const ALL: [LoopWait; 4] = [
        LoopWait::Adaptive,
        LoopWait::Poll,
        LoopWait::Interrupt,
        LoopWait::Auto,
    ];

    /// The name [`FromStr`](std::str::FromStr) takes.
    pub fn name(self) -> &'static str {
        match self {
            LoopWait::Adaptive => "adaptive",
            LoopWait::Poll => "poll",
            LoopWait::Interrupt => "interrupt",
            LoopWait::Auto => "auto",
        }
    }

    /// The way a chooser's candidate ([`CANDIDATES`](super::CANDIDATES) index) stands for (hybrid has no loop
    /// equivalent and stands for adaptive).
    pub fn of_candidate(i: usize) -> LoopWait {
        match i {
            POLL => LoopWait::Poll,
            INTERRUPT => LoopWait::Interrupt,
            _ => LoopWait::Adaptive,
        }
    }

    /// A chooser for a loop: no hybrid candidate, contention read from `/proc`.
    pub fn chooser(slack: f64) -> Chooser {
        Chooser::new(
            slack,
            Box::new(crate::policy::contention::ProcSignals::new()),
            false,
        )
    }
}

impl std::str::FromStr for LoopWait {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        LoopWait::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                crate::Error::config(
                    "wait",
                    crate::error::Reason::NotOneOf {
                        given: s.to_string(),
                        what: "a way to wait",
                        choices: "adaptive, poll, interrupt or auto",
                    },
                )
            })
    }
}
