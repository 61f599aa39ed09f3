//! What the policies count: a common part every policy keeps ([`WaitCounters`]: its polls,
//! blocks and sleeps, which reports compare across modes), and one struct per policy for what
//! only that policy does ([`HybridCounters`], [`KHybridCounters`], [`DpasCounters`],
//! [`AdaptiveCounters`], [`AutoCounters`]). [`PolicyCounters`] is what a policy reports: the
//! common part and the parts of the policies it ran (one, or `auto`'s candidates and its own
//! choice), the others zero, so runs of different modes add up and subtract field by field.
//!
//! A report names each figure by a stable key ([`PolicyCounters::fields`]): the key is the
//! field's name (`auto_` before `auto`'s), and the same figure of different policies
//! (`oversleeps` of hybrid, khybrid and dpas) shares one key, since one run has one mode.

/// Declares a counters struct of `u64` fields, with field-by-field `add` and `sub`, and its
/// fields by report key (the key prefix, then the field's name). A gauge (a level, not a count)
/// adds as the larger and subtracts as the later value.
macro_rules! counters {
    (
        $(#[$m:meta])* $name:ident, $prefix:literal {
            $($(#[$fm:meta])* $f:ident,)*
        }
        $(gauges { $($(#[$gm:meta])* $g:ident,)* })?
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct $name {
            $($(#[$fm])* pub $f: u64,)*
            $($($(#[$gm])* pub $g: u64,)*)?
        }

        impl $name {
            /// Adds `o` to `self`, field by field (a gauge keeps the larger).
            pub fn add(&mut self, o: &Self) {
                $(self.$f += o.$f;)*
                $($(self.$g = self.$g.max(o.$g);)*)?
            }

            /// `self - earlier`, field by field (a gauge is `self`'s).
            pub fn sub(&self, earlier: &Self) -> Self {
                Self {
                    $($f: self.$f - earlier.$f,)*
                    $($($g: self.$g,)*)?
                }
            }

            /// The fields as (report key, value) pairs, in declaration order.
            pub fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> {
                [
                    $((concat!($prefix, stringify!($f)), self.$f),)*
                    $($((concat!($prefix, stringify!($g)), self.$g),)*)?
                ]
                .into_iter()
            }

            /// The fields, to set each (tests).
            #[cfg(test)]
            fn fields_mut(&mut self) -> impl Iterator<Item = &mut u64> {
                [$(&mut self.$f,)* $($(&mut self.$g,)*)?].into_iter()
            }
        }
    };
}

counters! {
    /// What every policy counts: how it waited.
    WaitCounters, "" {
        /// Looks at the completion queue (spins).
        polls,
        /// Polls that found nothing.
        empty_polls,
        /// Blocking waits (in the kernel or on a doorbell).
        blocks,
        /// Blocks a spin took because the kernel had not taken its submissions (an SQPOLL
        /// thread waiting for the spinner's CPU); counted in `blocks` too.
        stall_blocks,
        /// Timed sleeps taken.
        sleeps,
        /// Nanoseconds asked to sleep, in all.
        slept_ns,
    }
}

counters! {
    /// hybrid's own: how its sleeps went, and why each request slept or did not.
    HybridCounters, "" {
        /// Sleeps during which the completion arrived (the sleep was too long).
        oversleeps,
        /// Nanoseconds spun after waking before the completion came.
        spin_after_wake_ns,
        /// Requests reaped that had slept.
        slept_requests,
        /// Requests reaped that did not sleep because the sleep would not have paid for itself
        /// (its expected saving below the margin times the learnt cost of a sleep).
        unslept_cost,
        /// Requests reaped that did not sleep because their sleep would have been too short
        /// (under the least sleep, or their completion was due before a sleep could start).
        unslept_short,
        /// Requests reaped that did not sleep because their class had no prediction yet.
        unslept_unpredicted,
        /// Sleeps taken although the cost rule said no, to keep measuring what a sleep costs
        /// (counted in `sleeps` too).
        sleep_probes,
        /// Requests reaped that slept in a sleep taken to measure what a sleep costs (the first
        /// sleeps, before the rule decides, and the probes), not because the rule said it pays
        /// (counted in `slept_requests` too).
        probed_requests,
    }
}

counters! {
    /// khybrid's own: how its sleeps went.
    KHybridCounters, "" {
        /// Sleeps during which the completion arrived.
        oversleeps,
        /// Nanoseconds spun after waking before the completion came.
        spin_after_wake_ns,
        /// Requests reaped that had slept.
        slept_requests,
        /// Requests reaped that did not sleep because the sleep was not open to them (one
        /// sleep per request, at its first poll).
        unslept_short,
        /// Requests reaped that did not sleep because no run time was seen yet.
        unslept_unpredicted,
    }
}

counters! {
    /// dpas's own: how its sleeps went.
    DpasCounters, "" {
        /// Sleeps during which the completion arrived.
        oversleeps,
        /// Nanoseconds spun after waking before the completion came.
        spin_after_wake_ns,
        /// Requests reaped that had slept.
        slept_requests,
        /// Requests reaped that did not sleep (a mode without sleeps, or not the request
        /// that sleeps).
        unslept_short,
    }
}

counters! {
    /// adaptive's own: how its polling window moved.
    AdaptiveCounters, "" {
        /// Times the window grew.
        grows,
        /// Times the window shrank.
        shrinks,
    }
    gauges {
        /// The window at the end, in nanoseconds.
        window_ns,
    }
}

counters! {
    /// auto's own: its choice (its candidates count in their own structs).
    AutoCounters, "auto_" {
        /// Times it changed mode.
        switches,
        /// Measurement epochs completed.
        epochs,
        /// Nanoseconds spent in poll.
        poll_ns,
        /// Nanoseconds spent in hybrid.
        hybrid_ns,
        /// Nanoseconds spent in interrupt.
        interrupt_ns,
        /// Nanoseconds spent in adaptive.
        adaptive_ns,
        /// Completions reaped in poll.
        poll_completions,
        /// Completions reaped in hybrid.
        hybrid_completions,
        /// Completions reaped in interrupt.
        interrupt_completions,
        /// Completions reaped in adaptive.
        adaptive_completions,
        /// Decisions of each reason ([`Reason`](super::choice::Reason)): the first exploration.
        reason_start,
        /// The next candidate of an exploration.
        reason_explore,
        /// The end of an exploration: its best candidate held.
        reason_best,
        /// A new exploration because the held mode's latency moved.
        reason_clat_shift,
        /// A new exploration because the hold ran out.
        reason_periodic,
        /// Interrupt because the CPUs are contended.
        reason_contention,
        /// A new exploration because contention ended.
        reason_contention_gone,
        /// Interrupt (or a new exploration) because waits were long.
        reason_long_wait,
        /// Contended: the mode the process's judge holds or tries.
        reason_judged,
    }
}

impl AutoCounters {
    /// Completions reaped in every mode.
    pub fn completions(&self) -> u64 {
        self.poll_completions
            + self.hybrid_completions
            + self.interrupt_completions
            + self.adaptive_completions
    }
}

/// What a policy did: the common part and the parts of the policies it ran; the parts of the
/// others stay zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyCounters {
    /// What every policy counts.
    pub wait: WaitCounters,
    /// hybrid's (also `auto`'s hybrid candidate's).
    pub hybrid: HybridCounters,
    /// khybrid's.
    pub khybrid: KHybridCounters,
    /// dpas's.
    pub dpas: DpasCounters,
    /// adaptive's (also `auto`'s adaptive candidate's).
    pub adaptive: AdaptiveCounters,
    /// auto's choice.
    pub auto: AutoCounters,
}

/// The report keys, in report order ([`PolicyCounters::fields`]).
const KEYS: [&str; 36] = [
    "polls",
    "empty_polls",
    "blocks",
    "stall_blocks",
    "sleeps",
    "slept_ns",
    "oversleeps",
    "spin_after_wake_ns",
    "grows",
    "shrinks",
    "window_ns",
    "slept_requests",
    "unslept_cost",
    "unslept_short",
    "unslept_unpredicted",
    "sleep_probes",
    "probed_requests",
    "auto_switches",
    "auto_epochs",
    "auto_poll_ns",
    "auto_hybrid_ns",
    "auto_interrupt_ns",
    "auto_adaptive_ns",
    "auto_poll_completions",
    "auto_hybrid_completions",
    "auto_interrupt_completions",
    "auto_adaptive_completions",
    "auto_reason_start",
    "auto_reason_explore",
    "auto_reason_best",
    "auto_reason_clat_shift",
    "auto_reason_periodic",
    "auto_reason_contention",
    "auto_reason_contention_gone",
    "auto_reason_long_wait",
    "auto_reason_judged",
];

impl PolicyCounters {
    /// Adds `o` to `self`, part by part (the window is kept as the maximum).
    pub fn add(&mut self, o: &PolicyCounters) {
        self.wait.add(&o.wait);
        self.hybrid.add(&o.hybrid);
        self.khybrid.add(&o.khybrid);
        self.dpas.add(&o.dpas);
        self.adaptive.add(&o.adaptive);
        self.auto.add(&o.auto);
    }

    /// `self - earlier`, part by part (the window is `self`'s).
    pub fn sub(&self, earlier: &PolicyCounters) -> PolicyCounters {
        PolicyCounters {
            wait: self.wait.sub(&earlier.wait),
            hybrid: self.hybrid.sub(&earlier.hybrid),
            khybrid: self.khybrid.sub(&earlier.khybrid),
            dpas: self.dpas.sub(&earlier.dpas),
            adaptive: self.adaptive.sub(&earlier.adaptive),
            auto: self.auto.sub(&earlier.auto),
        }
    }

    /// Every part's fields, part by part.
    fn parts(&self) -> impl Iterator<Item = (&'static str, u64)> {
        self.wait
            .fields()
            .chain(self.hybrid.fields())
            .chain(self.khybrid.fields())
            .chain(self.dpas.fields())
            .chain(self.adaptive.fields())
            .chain(self.auto.fields())
    }

    /// The counters as (report key, value) pairs, in a fixed order, for reports: every key
    /// whatever the mode, a figure several policies count (`oversleeps`) summed over them.
    pub fn fields(&self) -> [(&'static str, u64); 36] {
        let mut out = KEYS.map(|k| (k, 0));
        for (k, v) in self.parts() {
            if let Some(slot) = out.iter_mut().find(|(key, _)| *key == k) {
                slot.1 += v;
            } else {
                debug_assert!(false, "{k} is not a report key");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters whose every field holds a distinct value.
    fn numbered() -> PolicyCounters {
        let mut c = PolicyCounters::default();
        let fields = c
            .wait
            .fields_mut()
            .chain(c.hybrid.fields_mut())
            .chain(c.khybrid.fields_mut())
            .chain(c.dpas.fields_mut())
            .chain(c.adaptive.fields_mut())
            .chain(c.auto.fields_mut());
        for (n, f) in fields.enumerate() {
            *f = n as u64 + 1;
        }
        c
    }

    #[test]
    fn every_part_reports_under_a_key_and_no_figure_is_lost() {
        let c = numbered();
        let f = c.fields();
        let total: u64 = f.iter().map(|(_, v)| v).sum();
        let parts: u64 = c.parts().map(|(_, v)| v).sum();
        assert_eq!(total, parts, "{f:?}");
        let get = |k: &str| f.iter().find(|(key, _)| *key == k).unwrap().1;
        assert_eq!(get("polls"), c.wait.polls);
        assert_eq!(
            get("oversleeps"),
            c.hybrid.oversleeps + c.khybrid.oversleeps + c.dpas.oversleeps
        );
        assert_eq!(get("unslept_cost"), c.hybrid.unslept_cost);
        assert_eq!(get("window_ns"), c.adaptive.window_ns);
        assert_eq!(get("auto_switches"), c.auto.switches);
        assert_eq!(
            get("auto_adaptive_completions"),
            c.auto.adaptive_completions
        );
        // Every key is some part's.
        for (k, v) in f {
            assert!(v > 0, "{k} has no part");
        }
    }

    #[test]
    fn add_then_sub_gives_back_the_counts_and_the_window_is_a_level() {
        let a = numbered();
        let mut b = a;
        b.add(&a);
        assert_eq!(b.wait.polls, 2 * a.wait.polls);
        assert_eq!(b.auto.completions(), 2 * a.auto.completions());
        assert_eq!(
            b.adaptive.window_ns, a.adaptive.window_ns,
            "the larger, not the sum"
        );
        let d = b.sub(&a);
        assert_eq!(d.wait, a.wait);
        assert_eq!(d.hybrid, a.hybrid);
        assert_eq!(d.auto, a.auto);
        assert_eq!(d.adaptive.grows, a.adaptive.grows);
        assert_eq!(
            d.adaptive.window_ns, b.adaptive.window_ns,
            "the later window"
        );
    }
}
