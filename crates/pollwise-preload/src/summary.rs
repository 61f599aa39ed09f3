//! The exit summary: one JSON line appended to the file `POLLWISE_SUMMARY` names.
//!
//! **Rule.** It never blocks the exit and never prints: every lock is only tried (a lock another
//! thread holds at exit is counted as `busy_at_exit`, not waited for), the file is created 0600,
//! appended to, never truncated and never opened through a symbolic link, and a failure to write
//! is dropped. The fields are listed in the crate docs.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicU64, Ordering};

use pollwise::policy::choice::judge::{Judge, JudgeReport};
use pollwise::policy::choice::CANDIDATES;
use pollwise::policy::Mode;

use crate::{add_stats, state, COUNTS, FUNCS, REASONS};

/// The summary line: see the module docs.
pub(crate) fn summary() -> String {
    let st = state();
    let mut s = st.retired.try_lock().map(|r| *r).unwrap_or_default();
    let mut busy = 0;
    if let Ok(m) = st.rings.try_read() {
        for slot in m.values() {
            match slot.try_lock() {
                Ok(g) => add_stats(&mut s, &g.waiter.stats()),
                Err(_) => busy += 1,
            }
        }
    }
    let ru = pollwise::clock::Rusage::process();
    let p = &s.policy;
    let mode_ns = match st.mode {
        Some(Mode::Auto) => format!(
            "{{\"poll\":{},\"hybrid\":{},\"interrupt\":{},\"adaptive\":{}}}",
            p.auto.poll_ns, p.auto.hybrid_ns, p.auto.interrupt_ns, p.auto.adaptive_ns
        ),
        Some(m) => format!("{{\"{}\":{}}}", m.name(), s.wait_ns),
        None => "{}".into(),
    };
    // auto's decisions by reason (all zero in the other modes).
    let reasons = p
        .auto
        .fields()
        .filter_map(|(k, v)| Some(format!("\"{}\":{v}", k.strip_prefix("auto_reason_")?)))
        .collect::<Vec<_>>()
        .join(",");
    let judge = match st.mode {
        Some(Mode::Auto) => judge(),
        _ => "null".into(),
    };
    let pairs = |names: &[&str], v: &[AtomicU64]| {
        names
            .iter()
            .zip(v)
            .map(|(n, c)| format!("\"{n}\":{}", c.load(Ordering::Relaxed)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let mode_text: String = st
        .mode_text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let comm: String = comm
        .trim()
        .chars()
        .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\')
        .collect();
    format!(
        concat!(
            "{{\"pid\":{},\"comm\":\"{}\",\"mode\":\"{}\",\"mode_known\":{},\"auto_slack\":{},",
            "\"rings\":{},",
            "\"waits\":{},\"peeks\":{},\"ready_at_once\":{},\"timeouts\":{},\"interrupted\":{},",
            "\"untracked\":{},\"wait_ns\":{},\"submitted\":{},\"cqes\":{},\"enters\":{},",
            "\"spins\":{},\"empty_spins\":{},\"blocks\":{},\"stall_blocks\":{},\"sleeps\":{},\"slept_ns\":{},",
            "\"auto_switches\":{},\"auto_reasons\":{{{}}},\"mode_ns\":{},\"calls\":{{{}}},\"taken\":{{{}}},",
            "\"judge\":{},\"fallbacks\":{{{}}},\"busy_at_exit\":{},\"cpu_user_ns\":{},\"cpu_sys_ns\":{}}}\n"
        ),
        std::process::id(),
        comm,
        mode_text,
        st.mode.is_some(),
        st.slack,
        COUNTS.rings.load(Ordering::Relaxed),
        s.waits,
        s.peeks,
        s.ready_at_once,
        s.timeouts,
        s.interrupted,
        s.untracked,
        s.wait_ns,
        s.submitted,
        s.cqes,
        s.enters,
        p.wait.polls,
        p.wait.empty_polls,
        p.wait.blocks,
        p.wait.stall_blocks,
        p.wait.sleeps,
        p.wait.slept_ns,
        p.auto.switches,
        reasons,
        mode_ns,
        pairs(&FUNCS, &COUNTS.calls),
        pairs(&FUNCS, &COUNTS.taken),
        judge,
        pairs(&REASONS, &COUNTS.fallbacks),
        busy,
        ru.usr_ns,
        ru.sys_ns,
    )
}

/// The process's judge (auto's waits while its threads fill the cores or contend): its trials,
/// what each picked, the mode it holds, and each candidate's last stretch; `null` when no trial
/// ran or its lock is held.
fn judge() -> String {
    match Judge::process().report().filter(|r| r.trials > 0) {
        Some(r) => judge_json(&r),
        None => "null".into(),
    }
}

/// The judge's report as the summary's `judge` object.
fn judge_json(r: &JudgeReport) -> String {
    let holding = r
        .holding
        .map_or("null".into(), |m| format!("\"{}\"", CANDIDATES[m]));
    let mut picks = Vec::new();
    let mut last = Vec::new();
    for (i, name) in CANDIDATES.iter().enumerate() {
        picks.push(format!("\"{name}\":{}", r.picks[i]));
        if let Some(s) = r.last[i] {
            last.push(format!(
                "\"{name}\":{{\"ios_per_s\":{:.0},\"cpu_per_io_ns\":{:.0},\"x_interrupt\":{},\"trial\":{}}}",
                s.ios_per_s,
                s.cpu_per_io_ns,
                s.x_interrupt.map_or("null".into(), |x| format!("{x:.3}")),
                s.trial
            ));
        }
    }
    format!(
        "{{\"trials\":{},\"holding\":{holding},\"picks\":{{{}}},\"last\":{{{}}}}}",
        r.trials,
        picks.join(","),
        last.join(",")
    )
}

/// At exit: appends the summary to `POLLWISE_SUMMARY`, if set (created 0600, never truncated,
/// never through a symbolic link).
pub(crate) extern "C" fn write_summary() {
    let _ = catch_unwind(|| {
        let Some(path) = std::env::var_os("POLLWISE_SUMMARY") else {
            return;
        };
        let line = summary();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::policy::choice::judge::Stretch;

    #[test]
    fn the_judges_object_names_each_measured_candidate() {
        let s = |ios_per_s, cpu_per_io_ns, x_interrupt, trial| {
            Some(Stretch {
                ios_per_s,
                cpu_per_io_ns,
                x_interrupt,
                trial,
            })
        };
        let r = JudgeReport {
            trials: 3,
            holding: Some(3),
            picks: [0, 0, 2, 1],
            last: [
                None,
                None,
                s(62_619.0, 10_303.2, Some(1.0), 3),
                s(64_207.4, 9_935.0, Some(1.0254), 3),
            ],
        };
        assert_eq!(
            judge_json(&r),
            concat!(
                r#"{"trials":3,"holding":"adaptive","#,
                r#""picks":{"poll":0,"hybrid":0,"interrupt":2,"adaptive":1},"#,
                r#""last":{"interrupt":{"ios_per_s":62619,"cpu_per_io_ns":10303,"x_interrupt":1.000,"trial":3},"#,
                r#""adaptive":{"ios_per_s":64207,"cpu_per_io_ns":9935,"x_interrupt":1.025,"trial":3}}}"#
            )
        );
        // Mid-trial; and a trial whose interrupt stretches brought nothing has no ratio.
        let during = JudgeReport {
            holding: None,
            last: [None, None, None, s(64_207.4, 9_935.0, None, 4)],
            ..r
        };
        let j = judge_json(&during);
        assert!(j.contains(r#""holding":null,"#), "{j}");
        assert!(j.contains(r#""x_interrupt":null,"#), "{j}");
    }
}
