//! [`SharedPoller`]: the handle that starts the poller thread, makes its clients and stops it.
//!
//! **Rule.** The thread is started with its ring already set up: `new` returns only once the
//! thread said its ring is ready (or with the setup's error), so a poller that exists serves.
//! Dropping the handle stops the thread and waits for it; [`SharedPoller::shutdown`] does the
//! same and returns what was handed back ([`ShutdownReport`]). The round loop itself is the
//! worker's (`worker.rs`).

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use super::worker::Worker;
use super::{PollerConfig, PollerCounters, ShutdownReport};
use crate::clock::{self, Clock};
use crate::policy::choice::{ChoiceStatus, Chooser, LoopWait};
use crate::policy::contention::CpuSignals;
use crate::queue::poller_client::{Client, ClientOptions, PollerShared};
use crate::sys::eventfd::EventFd;
use crate::{Error, Result};

/// One polling thread serving many [`Client`]s. See the module docs.
pub struct SharedPoller {
    pub(super) shared: Arc<PollerShared>,
    thread: Option<JoinHandle<Result<ShutdownReport>>>,
    /// Under `auto`: the chooser's state, as the poller thread last published it.
    auto: Option<Arc<Mutex<ChoiceStatus>>>,
}

impl SharedPoller {
    /// Starts the poller thread (pinned if `cfg.cpu` is set) with the real clock.
    pub fn new(cfg: PollerConfig) -> Result<SharedPoller> {
        SharedPoller::with_clock(cfg, clock::monotonic())
    }

    /// Starts the poller thread, reading idle time from `clock`.
    pub fn with_clock(cfg: PollerConfig, clock: Arc<dyn Clock>) -> Result<SharedPoller> {
        SharedPoller::start(cfg, clock, None)
    }

    /// As [`SharedPoller::new`]; under `auto` (`cfg.wait`), the CPU signals come from
    /// `signals` instead of `/proc` (tests script them).
    pub fn with_auto_signals(cfg: PollerConfig, signals: Box<dyn CpuSignals>) -> Result<Self> {
        Self::start(cfg, clock::monotonic(), Some(signals))
    }

    /// Under `auto`: the chooser's state as the poller thread last published it (every 64
    /// rounds, every round with work, and before it sleeps).
    pub fn auto_status(&self) -> Option<ChoiceStatus> {
        self.auto
            .as_ref()
            .map(|m| *m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn start(
        cfg: PollerConfig,
        clock: Arc<dyn Clock>,
        signals: Option<Box<dyn CpuSignals>>,
    ) -> Result<SharedPoller> {
        cfg.check()?;
        let auto = (cfg.wait == LoopWait::Auto).then(|| {
            let slack = crate::policy::DEFAULT_AUTO_LATENCY_SLACK;
            let ch = match signals {
                Some(s) => Chooser::new(slack, s, false),
                None => LoopWait::chooser(slack),
            };
            let status = Arc::new(Mutex::new(ch.status(0)));
            (ch, status)
        });
        let status = auto.as_ref().map(|(_, s)| s.clone());
        let bell = EventFd::new().map_err(|e| Error::os("creating the poller's eventfd", e))?;
        let shared = Arc::new(PollerShared::new(bell, clock.clone()));
        let (tx, rx) = mpsc::channel::<Result<()>>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pollwise-poller".into())
            .spawn(move || {
                let mut w = match Worker::new(&cfg, sh, clock, auto) {
                    Ok(w) => {
                        let _ = tx.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return Ok(ShutdownReport::default());
                    }
                };
                w.run()
            })
            .map_err(|e| Error::os("starting the poller thread", e))?;
        match rx.recv() {
            Ok(Ok(())) => Ok(SharedPoller {
                shared,
                thread: Some(thread),
                auto: status,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::ThreadLost {
                    what: "the poller thread",
                    panicked: true,
                })
            }
        }
    }

    /// A new client with its own rings and file table.
    pub fn client(&self, opts: ClientOptions) -> Result<Client> {
        if opts.depth == 0 || opts.depth > 1 << 20 {
            return Err(Error::OutOfRange {
                what: "a shared-poller client's depth",
                value: opts.depth as u64,
                min: 1,
                max: 1 << 20,
            });
        }
        let (client, cs, ends) = Client::new(&opts, self.shared.clone());
        {
            let mut p = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if self.shared.dead.load(Ordering::SeqCst) {
                return Err(Error::ThreadLost {
                    what: "the shared poller",
                    panicked: false,
                });
            }
            p.push((cs, ends));
            self.shared.clients.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.pending_flag.store(true, Ordering::SeqCst);
        self.shared.bell.ring();
        Ok(client)
    }

    /// What the poller did so far (updated every round that did work, and before it sleeps).
    pub fn counters(&self) -> PollerCounters {
        let mut c = PollerCounters::from_array(self.shared.snapshot());
        c.abandoned = self.shared.abandoned.load(Ordering::Relaxed);
        c
    }

    /// Clients the poller serves now (a dropped client counts until it is retired).
    pub fn clients(&self) -> usize {
        self.shared.clients.load(Ordering::Relaxed)
    }

    /// Requests the poller has taken from its clients and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Stops the poller: requests in the kernel complete, queued ones come back cancelled.
    pub fn shutdown(mut self) -> Result<ShutdownReport> {
        self.stop()
    }

    fn stop(&mut self) -> Result<ShutdownReport> {
        let Some(t) = self.thread.take() else {
            return Ok(ShutdownReport::default());
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.bell.ring();
        let abandoned = self.shared.abandoned.load(Ordering::Relaxed);
        match t.join() {
            Ok(r) => r.map(|mut r| {
                r.counters.abandoned = abandoned;
                r
            }),
            Err(_) => Err(Error::ThreadLost {
                what: "the poller thread",
                panicked: true,
            }),
        }
    }
}

impl Drop for SharedPoller {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
