//! The loop's core: sources, the polling set, timers and one iteration (poll, block, dispatch),
//! behind [`Reactor`](super::Reactor) and the handlers' [`Ctx`](super::Ctx).
//!
//! **Rule.** One iteration polls the polling set up to the largest window, blocks in the fd
//! monitor only when nothing turned up, then dispatches: fd events, ready poll sources (each
//! window adjusted by the time to its event, its run time kept out), due timers; a source idle
//! for `poll_idle_ns` leaves the polling set and is checked once more as its notifications come
//! back on, so no event is lost. The module docs of [`reactor`](super) give the reasons.

use super::*;

/// `min` of two timeouts where `None` is infinite.
pub(super) fn soonest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Core {
    pub(super) fn entry(&self, id: SourceId) -> Option<&Entry> {
        self.slots.get(id.0).ok()
    }

    pub(super) fn entry_mut(&mut self, id: SourceId) -> Option<&mut Entry> {
        self.slots.get_mut(id.0).ok()
    }

    /// The entry of `id`, which the caller knows is live (polling set members are).
    pub(super) fn at(&mut self, id: SourceId) -> &mut Entry {
        self.slots
            .get_mut(id.0)
            .expect("polling set holds live sources only")
    }

    pub(super) fn add(&mut self, source: Box<dyn Source>, internal: bool) -> io::Result<SourceId> {
        let fd = source.fd();
        let poll = source.is_poll();
        let entry = Entry {
            fd,
            poll,
            handler: Some(source),
            internal,
            poll_pos: None,
            window: AdaptiveWindow::new(
                self.cfg.poll_max_ns,
                self.cfg.poll_grow,
                self.cfg.poll_shrink,
            ),
            idle_deadline: 0,
            revents: 0,
            poll_ready: false,
            queued: false,
        };
        let id = SourceId(self.slots.insert(entry).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "the reactor holds {} sources already (its max_sources)",
                    self.cfg.max_sources
                ),
            )
        })?);
        // A poll source is checked in user space after each of its events (it joins the polling
        // set, or the loop blocks or flushes: see `run_once`), which lets the monitor defer the
        // re-arm of its ended polls; an fd-only source's must reach the kernel at once.
        let added = if poll {
            self.fdmon.add_polled(fd, id.token())
        } else {
            self.fdmon.add(fd, id.token())
        };
        if let Err(e) = added {
            let _ = self.slots.remove(id.0);
            return Err(e);
        }
        Ok(id)
    }

    pub(super) fn remove(&mut self, id: SourceId) -> io::Result<bool> {
        // Events still queued for the old generation are dropped at dispatch: the slot's
        // generation moves on.
        let Ok(entry) = self.slots.remove(id.0) else {
            return Ok(false);
        };
        if let Some(pos) = entry.poll_pos {
            self.poll_set_remove(pos);
        }
        let r = self.fdmon.remove(entry.fd, id.token());
        // A handler being called right now (entry.handler is None) is dropped by the dispatcher.
        drop(entry);
        r.map(|_| true)
    }

    pub(super) fn poll_set_insert(&mut self, id: SourceId) {
        let pos = self.poll_set.len();
        self.poll_set.push(id);
        let started = self.poll_started;
        let e = self.at(id);
        e.poll_pos = Some(pos);
        e.idle_deadline = 0;
        if started {
            if let Some(h) = e.handler.as_mut() {
                h.poll_begin();
            }
        }
    }

    pub(super) fn poll_set_remove(&mut self, pos: usize) {
        self.poll_set.swap_remove(pos);
        if let Some(&moved) = self.poll_set.get(pos) {
            self.at(moved).poll_pos = Some(pos);
        }
    }

    pub(super) fn queue(&mut self, id: SourceId, revents: u32, poll_ready: bool) {
        let e = self.at(id);
        e.revents |= revents;
        e.poll_ready |= poll_ready;
        if !e.queued {
            e.queued = true;
            self.ready.push(id);
        }
    }

    /// Turns poll mode on or off for the whole polling set; leaving it, checks every source once
    /// more. Returns whether that final check found work.
    pub(super) fn set_poll_started(&mut self, started: bool) -> bool {
        if started == self.poll_started {
            return false;
        }
        self.poll_started = started;
        let mut progress = false;
        for k in 0..self.poll_set.len() {
            let id = self.poll_set[k];
            let Some(h) = self.at(id).handler.as_mut() else {
                continue;
            };
            if started {
                h.poll_begin();
            } else {
                h.poll_end();
                // A client may have added work just before it saw notifications back on.
                if h.ready() {
                    self.queue(id, 0, true);
                    progress = true;
                }
            }
        }
        progress
    }

    /// Polls the polling set until something is ready, `max_ns` passes, or the fd monitor has
    /// events. Then prunes idle sources.
    pub(super) fn run_poll_handlers(
        &mut self,
        start: u64,
        max_ns: u64,
        timeout: &mut Option<u64>,
    ) -> bool {
        let idle_ns = self.cfg.poll_idle_ns.unwrap_or(u64::MAX);
        let mut progress = false;
        let mut now;
        loop {
            let round_start = self.clock.now_ns();
            for k in 0..self.poll_set.len() {
                let id = self.poll_set[k];
                let e = self.at(id);
                let Some(h) = e.handler.as_mut() else {
                    continue;
                };
                if h.ready() {
                    e.idle_deadline = round_start.saturating_add(idle_ns);
                    self.c.poll_hits += 1;
                    self.queue(id, 0, true);
                    progress = true;
                }
            }
            self.c.poll_rounds += 1;
            now = self.clock.now_ns();
            if progress || now.saturating_sub(start) >= max_ns || self.fdmon.need_wait() {
                break;
            }
        }
        if self.prune_idle(now) {
            progress = true;
        }
        if progress {
            *timeout = Some(0);
        } else if let Some(t) = timeout {
            *t -= (*t).min(now.saturating_sub(start));
        }
        progress
    }

    /// Drops sources idle past their deadline from the polling set (QEMU's
    /// `remove_idle_poll_handlers`). Returns whether a final check of a pruned source found work.
    pub(super) fn prune_idle(&mut self, now: u64) -> bool {
        if !self.prune {
            return false;
        }
        let idle_ns = self.cfg.poll_idle_ns.unwrap_or(u64::MAX);
        let started = self.poll_started;
        let mut progress = false;
        let mut pruned = false;
        let mut k = 0;
        while k < self.poll_set.len() {
            let id = self.poll_set[k];
            let e = self.at(id);
            if e.idle_deadline == 0 {
                e.idle_deadline = now.saturating_add(idle_ns);
                k += 1;
                continue;
            }
            if now < e.idle_deadline {
                k += 1;
                continue;
            }
            e.idle_deadline = 0;
            e.poll_pos = None;
            let mut found = false;
            if started {
                if let Some(h) = e.handler.as_mut() {
                    h.poll_end();
                    // Work added just before notifications came back on is served now.
                    found = h.ready();
                }
            }
            self.poll_set_remove(k);
            self.c.pruned += 1;
            pruned = true;
            if found {
                self.queue(id, 0, true);
                progress = true;
            }
            // The source moved into position k (if any) is looked at next.
        }
        if pruned {
            // A pruned source is only heard of through its fd: make sure the kernel watches it.
            // On failure the source is still served when the loop next blocks (a blocking wait
            // submits everything), so a failed flush delays, it does not lose.
            let _ = self.fdmon.flush();
        }
        progress
    }

    pub(super) fn wait_now(&self) -> LoopWait {
        match &self.auto {
            Some(a) => LoopWait::of_candidate(a.current_index()),
            None => self.cfg.wait,
        }
    }

    /// The polling window of this iteration: the largest of the polling set's windows, the
    /// cap, or none, as the way of waiting says.
    pub(super) fn poll_window(&self) -> u64 {
        match self.wait_now() {
            LoopWait::Poll => self.cfg.poll_max_ns,
            LoopWait::Interrupt => 0,
            LoopWait::Adaptive | LoopWait::Auto => self
                .poll_set
                .iter()
                .map(|&id| self.entry(id).map_or(0, |e| e.window.window_ns()))
                .max()
                .unwrap_or(0),
        }
    }

    pub(super) fn run_once(&mut self, blocking: bool) -> io::Result<bool> {
        self.c.iterations += 1;
        let start = self.clock.now_ns();
        if let Some(a) = self.auto.as_mut() {
            a.start(start, &NoHybrid);
        }
        let dispatched_before = self.c.fd_dispatches + self.c.poll_dispatches;
        let mut timeout = if blocking {
            self.timers_timeout(start)
        } else {
            Some(0)
        };
        let mut progress = false;
        // Re-arms the monitor left for later (`FdMonitor::add_polled`) are owed a look in user
        // space every iteration until a kernel entry submits them.
        let had_deferred = self.fdmon.has_deferred();
        let mut polled = false;

        if !self.poll_set.is_empty() && self.cfg.poll_max_ns > 0 {
            let max_window = self.poll_window();
            let max_ns = soonest(timeout, Some(max_window)).unwrap_or(0);
            if max_ns > 0 && !self.fdmon.need_wait() {
                self.set_poll_started(true);
                progress = self.run_poll_handlers(start, max_ns, &mut timeout);
                polled = true;
            } else if !blocking && self.poll_started {
                // Already in poll mode (notifications off): one round, so a non-blocking
                // iteration still sees what clients pushed without ringing.
                progress = self.run_poll_handlers(start, 0, &mut timeout);
                polled = true;
            }
        }

        // Events (or registrations) waiting in the fd monitor: collect them without blocking,
        // and without leaving poll mode.
        let need_wait = self.fdmon.need_wait();
        if need_wait {
            timeout = Some(0);
        }
        // Consult the fd monitor when about to block, when it has something for us, or when a
        // non-blocking iteration found nothing by polling.
        if timeout != Some(0) || need_wait || (!blocking && !progress) {
            // Notifications must be on before blocking; the final check may find work.
            if timeout != Some(0) && self.set_poll_started(false) {
                timeout = Some(0);
                progress = true;
            }
            self.c.fdmon_waits += 1;
            if timeout != Some(0) {
                self.c.fdmon_blocking_waits += 1;
            }
            let mut events = std::mem::take(&mut self.events);
            let r = self
                .fdmon
                .wait(timeout.map(Duration::from_nanos), &mut events);
            for ev in events.drain(..) {
                let id = SourceId(Handle::from_user_data(ev.token));
                if self.entry(id).is_some() {
                    self.queue(id, ev.revents, false);
                }
            }
            self.events = events;
            r?;
        }

        let block_ns = self.clock.now_ns().saturating_sub(start);
        progress |= self.dispatch(block_ns);
        if let Some(a) = self.auto.as_mut() {
            // Each dispatch is an I/O to `auto`; the iteration's block time (start to event
            // found, handlers left out) is its latency: spinning finds the event at once,
            // blocking adds the wake-up.
            let n = self.c.fd_dispatches + self.c.poll_dispatches - dispatched_before;
            if n > 0 {
                a.record(block_ns);
            }
            a.after_wait(n as usize, self.clock.now_ns(), &NoHybrid);
        }
        progress |= self.run_timers();
        if had_deferred && !polled && self.fdmon.has_deferred() {
            // This iteration looked at no source in user space, and its wait (if any) did not
            // enter the kernel: the deferred re-arms go in now, or their sources could go
            // unheard for as long as the loop keeps finding work elsewhere.
            self.fdmon.flush()?;
        }
        Ok(progress)
    }

    pub(super) fn dispatch(&mut self, block_ns: u64) -> bool {
        let mut ready = std::mem::take(&mut self.ready);
        let mut adjust = std::mem::take(&mut self.adjust);
        let mut progress = false;
        let mut run_ns = 0u64;
        for id in ready.drain(..) {
            let Some(e) = self.entry_mut(id) else {
                continue; // removed by an earlier handler
            };
            let revents = std::mem::take(&mut e.revents);
            let poll_ready = std::mem::take(&mut e.poll_ready);
            e.queued = false;
            let internal = e.internal;
            // Activity is likely to continue: start polling a source when it becomes ready.
            if e.poll && e.poll_pos.is_none() {
                self.poll_set_insert(id);
                self.c.poll_added += 1;
            }
            let e = self.entry_mut(id).expect("still live");
            let Some(mut h) = e.handler.take() else {
                continue;
            };
            let t0 = self.clock.now_ns();
            {
                let mut cx = Ctx { core: self };
                if poll_ready && revents == 0 {
                    cx.core.c.poll_dispatches += 1;
                    h.run(&mut cx);
                } else if revents != 0 {
                    cx.core.c.fd_dispatches += u64::from(!internal);
                    h.on_fd(&mut cx, revents);
                }
            }
            run_ns += self.clock.now_ns().saturating_sub(t0);
            progress |= !internal;
            if let Some(e) = self.entry_mut(id) {
                e.handler = Some(h);
                if e.poll_pos.is_some() {
                    adjust.push(id);
                }
            }
            // Else the handler removed itself: `h` is dropped here.
        }
        self.ready = ready;
        // Every source that became ready is judged by the iteration's block time: without the
        // handlers' run time (QEMU since 2021), or with all of it, as when the handlers ran
        // inside the timed poll check.
        if self.cfg.poll_max_ns > 0 {
            let b = if self.cfg.exclude_run_time {
                block_ns
            } else {
                block_ns + run_ns
            };
            for &id in &adjust {
                if let Some(e) = self.entry_mut(id) {
                    if e.poll_pos.is_some() {
                        e.window.update(b);
                    }
                }
            }
        }
        adjust.clear();
        self.adjust = adjust;
        progress
    }

    pub(super) fn timers_timeout(&mut self, now: u64) -> Option<u64> {
        while let Some(Reverse((at, id))) = self.timers.peek().copied() {
            if self.timer_fns.contains_key(&id) {
                return Some(at.saturating_sub(now));
            }
            self.timers.pop(); // cancelled
        }
        None
    }

    pub(super) fn run_timers(&mut self) -> bool {
        let now = self.clock.now_ns();
        let mut fired = false;
        while let Some(Reverse((at, id))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            if let Some(f) = self.timer_fns.remove(&id) {
                self.c.timers += 1;
                f(&mut Ctx { core: self });
                fired = true;
            }
        }
        fired
    }
}
