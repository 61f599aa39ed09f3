//! What a [`Chooser`] shows of itself: its counters and its beliefs, for reports.

use super::judge::JudgeReport;
use super::{Chooser, Reason, ADAPTIVE, CANDIDATES, HYBRID, INTERRUPT, POLL};
use crate::policy::AutoCounters;

impl Chooser {
    /// The switches, epochs, time and completions per mode up to `now`.
    pub fn counters(&self, now: u64) -> AutoCounters {
        let t = self.mode_times(now);
        AutoCounters {
            switches: self.switches,
            epochs: self.epochs,
            poll_ns: t[POLL],
            hybrid_ns: t[HYBRID],
            interrupt_ns: t[INTERRUPT],
            adaptive_ns: t[ADAPTIVE],
            poll_completions: self.mode_ios[POLL],
            hybrid_completions: self.mode_ios[HYBRID],
            interrupt_completions: self.mode_ios[INTERRUPT],
            adaptive_completions: self.mode_ios[ADAPTIVE],
            reason_start: self.reason_count(Reason::Start),
            reason_explore: self.reason_count(Reason::Explore),
            reason_best: self.reason_count(Reason::Best),
            reason_clat_shift: self.reason_count(Reason::ClatShift),
            reason_periodic: self.reason_count(Reason::Periodic),
            reason_contention: self.reason_count(Reason::Contention),
            reason_contention_gone: self.reason_count(Reason::ContentionGone),
            reason_long_wait: self.reason_count(Reason::LongWait),
            reason_judged: self.reason_count(Reason::Judged),
        }
    }

    /// What the chooser believes at `now`, its keys starting with `auto.` (the contention
    /// sampler's included).
    pub fn beliefs(&self, now: u64) -> Vec<(String, f64)> {
        let mut b = vec![
            ("auto.latency_slack".to_string(), self.slack),
            (format!("auto.current.{}", self.current()), 1.0),
            ("auto.switches".to_string(), self.switches as f64),
            ("auto.epochs".to_string(), self.epochs as f64),
            (format!("auto.last_reason.{}", self.last_reason.name()), 1.0),
            ("auto.hold_ns".to_string(), self.hold_ns as f64),
            ("auto.calm_ns".to_string(), self.calm_ns as f64),
        ];
        if self.with_hybrid {
            b.push((
                "auto.hybrid.sleep_share".to_string(),
                self.hybrid_sleep_share,
            ));
            b.push((
                "auto.hybrid.skipped_for_slow_wakeups".to_string(),
                self.hybrid_skipped as f64,
            ));
        }
        b.push(("auto.close_calls".to_string(), self.close_calls as f64));
        b.push(("auto.noise".to_string(), self.noise));
        // The decision's terms: the fastest candidate and the line the others are held to.
        if let (Some(f), Some(line)) = (self.fastest(), self.line()) {
            b.push((format!("auto.fastest.{}", CANDIDATES[f]), 1.0));
            b.push(("auto.line_ns".to_string(), line));
        }
        b.push((
            "auto.judged_on_throughput".to_string(),
            f64::from(u8::from(self.on_throughput())),
        ));
        for r in Reason::ALL {
            b.push((
                format!("auto.reason.{}", r.name()),
                self.reasons[r as usize] as f64,
            ));
        }
        let times = self.mode_times(now);
        for (i, name) in CANDIDATES.iter().enumerate() {
            if i == HYBRID && !self.with_hybrid {
                continue;
            }
            b.push((format!("auto.{name}.time_ns"), times[i] as f64));
            b.push((format!("auto.{name}.completions"), self.mode_ios[i] as f64));
            if let Some(e) = self.est[i] {
                b.push((format!("auto.{name}.p50_ns"), e.p50_ns));
                b.push((format!("auto.{name}.p90_ns"), e.p90_ns));
                b.push((format!("auto.{name}.mean_ns"), e.mean_ns));
                b.push((format!("auto.{name}.cpu_per_io_ns"), e.cpu_per_io_ns));
                b.push((format!("auto.{name}.ios_per_s"), e.ios_per_s));
            }
        }
        if let Some(r) = self.judge.and_then(|j| j.report()) {
            judge_beliefs(&mut b, &r);
        }
        b.extend(self.sampler.beliefs());
        b
    }
}

/// The process's judge's terms, keys starting with `auto.judge.`: its trials, what each picked,
/// the mode it holds, and each candidate's last stretch.
fn judge_beliefs(b: &mut Vec<(String, f64)>, r: &JudgeReport) {
    b.push(("auto.judge.trials".to_string(), r.trials as f64));
    if let Some(m) = r.holding {
        b.push((format!("auto.judge.holding.{}", CANDIDATES[m]), 1.0));
    }
    for (i, name) in CANDIDATES.iter().enumerate() {
        if r.picks[i] > 0 {
            b.push((format!("auto.judge.{name}.picks"), r.picks[i] as f64));
        }
        if let Some(s) = r.last[i] {
            b.push((format!("auto.judge.{name}.ios_per_s"), s.ios_per_s));
            b.push((format!("auto.judge.{name}.cpu_per_io_ns"), s.cpu_per_io_ns));
            if let Some(x) = s.x_interrupt {
                b.push((format!("auto.judge.{name}.x_interrupt"), x));
            }
            b.push((format!("auto.judge.{name}.trial"), s.trial as f64));
        }
    }
}
