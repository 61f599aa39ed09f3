//! fio's per-job logs: `--write_lat_log`, `--write_bw_log`, `--write_iops_log`,
//! `--log_avg_msec`, `--log_offset`, in fio 3.33's format and file names, so fio's own tools
//! (`fio2gnuplot`, `fio_generate_plots`) read them.
//!
//! Files, per job thread (fio's thread number, 1-based across the run): `NAME_lat.N.log`,
//! `NAME_clat.N.log`, `NAME_slat.N.log` (all three from `write_lat_log`), `NAME_bw.N.log`,
//! `NAME_iops.N.log`. Each line is `time, value, ddir, bs, prio` (fio 3.33; `log_offset=1` puts
//! the offset before `prio`):
//!
//! - `time`: milliseconds since the measured period began (after `ramp_time`), truncated; a
//!   slat line is stamped when the submission returned, every other line when the completion
//!   was handled (as fio stamps them);
//! - `value`: nanoseconds for lat, clat, slat; KiB/s for bw (per I/O, as fio: bytes x 10^6 /
//!   clat in ns, so bytes per millisecond); I/Os for iops (1 per I/O, or per second averaged);
//! - `ddir`: 0 read, 1 write; `bs`: bytes of the I/O (0 in averaged lines); `prio`: 1 for a
//!   real-time request, else 0; with `log_prio=1` the request's `ioprio` as `0x%04x` (0 in
//!   averaged lines), as fio 3.33.
//!
//! With `log_avg_msec=0` every I/O is one line; otherwise one line per direction per window of
//! `log_avg_msec`, stamped at the window's end, with the mean latency over the I/Os that
//! completed in it, or the window's KiB/s and I/Os per second (0 for a window without I/O, as
//! fio's timer-driven samples). As in fio 3.33, a window runs from just after one stamp to its
//! own, in whole milliseconds (an I/O done at 1000 ms is in the window stamped 1000), and the
//! end of the run, short of a whole window, gets latency lines stamped at the run's end if I/Os
//! completed in it, and no bw or iops line: every stamp is later than the one before it.
//! pollwise attributes an I/O to the window in which it completed, slat included (fio puts a
//! slat in the window of its submission).

use crate::outfile::Stream;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use pollwise::request::Dir;
use pollwise_bench::engine::Done;

use crate::spec::{LogKind as Kind, LogSpec};
use crate::{Error, Result};

/// Records kept before they are written out (a few MiB per thread).
const CHUNK: usize = 1 << 16;

/// One I/O, as the completion hook saw it.
#[derive(Debug, Clone, Copy)]
struct Rec {
    /// fio's ddir: 0 read, 1 write, 2 trim.
    ddir: u8,
    len: u32,
    offset: u64,
    submit_ns: u64,
    issued_ns: Option<u64>,
    done_ns: u64,
    ioprio: u16,
}

/// Sums over one window for one direction.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    ios: u64,
    bytes: u64,
    lat: u64,
    split: u64,
    clat: u64,
    slat: u64,
}

/// One job thread's logs: opened before the run, fed by the engine's completion hook, written
/// out in chunks and at [`ThreadLog::finish`].
pub struct ThreadLog {
    files: [Option<(PathBuf, BufWriter<Stream>)>; 5],
    avg_ns: u64,
    offset: bool,
    /// `log_prio`.
    log_prio: bool,
    /// Which directions the job does (read, write, trim): averaged bw and iops lines for each.
    dirs: [bool; 3],
    t0: u64,
    recs: Vec<Rec>,
    /// Averaged mode: the current window's index (from `t0`) and its sums per direction.
    window: u64,
    sums: [Window; 3],
    error: Option<Error>,
}

impl ThreadLog {
    /// Creates (truncating, as fio) thread `thread`'s log files for `spec`; `dirs` says whether
    /// the job reads, writes and trims.
    pub fn open(spec: &LogSpec, thread: u32, dirs: [bool; 3]) -> Result<ThreadLog> {
        let mut files: [Option<(PathBuf, BufWriter<Stream>)>; 5] = Default::default();
        for (k, path) in spec.paths(thread) {
            let f = crate::outfile::create_stream(k.what(), &path)?;
            files[k.index()] = Some((path, BufWriter::with_capacity(1 << 16, f)));
        }
        Ok(ThreadLog {
            files,
            avg_ns: spec.avg_msec.saturating_mul(1_000_000),
            offset: spec.offset,
            log_prio: spec.prio,
            dirs,
            t0: 0,
            recs: Vec::new(),
            window: 0,
            sums: [Window::default(); 3],
            error: None,
        })
    }

    /// Starts the measured period at clock time `t0_ns`: times in the logs count from it.
    pub fn start(&mut self, t0_ns: u64) {
        self.t0 = t0_ns;
        self.window = 0;
        self.sums = [Window::default(); 3];
        if self.avg_ns == 0 {
            self.recs.reserve(CHUNK);
        }
    }

    /// Records one handled I/O (the engine's completion hook calls this).
    pub fn record(&mut self, d: &Done) {
        let r = Rec {
            ddir: match d.dir {
                Dir::Read => 0,
                Dir::Write => 1,
                Dir::Trim => 2,
            },
            len: d.len,
            offset: d.offset,
            submit_ns: d.submit_ns,
            issued_ns: d.issued_ns,
            done_ns: d.done_ns,
            ioprio: d.ioprio,
        };
        if self.avg_ns == 0 {
            self.recs.push(r);
            if self.recs.len() >= CHUNK {
                self.flush_recs();
            }
            return;
        }
        // Whole milliseconds, as fio stamps: window k holds k x avg < ms <= (k + 1) x avg.
        let ms = d.done_ns.saturating_sub(self.t0) / 1_000_000;
        let w = ms.saturating_sub(1).saturating_mul(1_000_000) / self.avg_ns;
        while self.window < w {
            let end = (self.window + 1) * self.avg_ns;
            self.close_window(end, self.avg_ns, true);
            self.window += 1;
        }
        let s = &mut self.sums[r.ddir as usize];
        s.ios += 1;
        s.bytes += r.len as u64;
        s.lat += r.done_ns.saturating_sub(r.submit_ns);
        if let Some(i) = r.issued_ns {
            s.split += 1;
            s.slat += i.saturating_sub(r.submit_ns);
            s.clat += r.done_ns.saturating_sub(i);
        }
    }

    /// Ends the measured period at clock time `t1_ns`: writes what is left and closes the
    /// files. In averaged mode: every whole window up to `t1_ns`, then the latencies of the
    /// rest, if any I/O completed in it, stamped at `t1_ns` (as fio 3.33: no bw or iops line
    /// for a part of a window). Returns the first write error.
    pub fn finish(&mut self, t1_ns: u64) -> Result<()> {
        if self.avg_ns == 0 {
            self.flush_recs();
        } else {
            // In whole milliseconds, as the stamps.
            let end = t1_ns.saturating_sub(self.t0) / 1_000_000 * 1_000_000;
            while (self.window + 1) * self.avg_ns <= end {
                let e = (self.window + 1) * self.avg_ns;
                self.close_window(e, self.avg_ns, true);
                self.window += 1;
            }
            let start = self.window * self.avg_ns;
            if end > start {
                self.close_window(end, end - start, false);
            }
            self.window += 1;
        }
        for (path, f) in self.files.iter_mut().flatten() {
            if let Err(e) = f.flush() {
                let msg = write_error(path, &e);
                self.error.get_or_insert(msg);
            }
        }
        if let Some(e) = self.error.take() {
            // Not committed: the new logs are removed, old ones are left as they were.
            return Err(e);
        }
        for (_, f) in self.files.iter_mut().flatten() {
            f.get_mut().commit()?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn line(&mut self, k: Kind, ms: u64, value: u64, ddir: u8, bs: u32, offset: u64, prio: u16) {
        let with_offset = self.offset;
        let log_prio = self.log_prio;
        let Some((path, f)) = self.files[k.index()].as_mut() else {
            return;
        };
        // fio 3.33: the priority itself with log_prio, else whether it was real-time.
        let prio = if log_prio {
            format!("0x{prio:04x}")
        } else {
            u8::from(pollwise_bench::prio::class_of(prio) == pollwise_bench::prio::CLASS_RT)
                .to_string()
        };
        let r = if with_offset {
            writeln!(f, "{ms}, {value}, {ddir}, {bs}, {offset}, {prio}")
        } else {
            writeln!(f, "{ms}, {value}, {ddir}, {bs}, {prio}")
        };
        if let Err(e) = r {
            let msg = write_error(path, &e);
            self.error.get_or_insert(msg);
        }
    }

    /// Writes the window that ends `end_ns` after `t0` and lasted `len_ns`, and clears it;
    /// its bw and iops lines only if `rates` (a whole window).
    fn close_window(&mut self, end_ns: u64, len_ns: u64, rates: bool) {
        let ms = end_ns / 1_000_000;
        for dir in 0..3 {
            let s = std::mem::take(&mut self.sums[dir]);
            let ddir = dir as u8;
            if let Some(lat) = s.lat.checked_div(s.ios) {
                self.line(Kind::Lat, ms, lat, ddir, 0, 0, 0);
            }
            if let (Some(clat), Some(slat)) =
                (s.clat.checked_div(s.split), s.slat.checked_div(s.split))
            {
                self.line(Kind::Clat, ms, clat, ddir, 0, 0, 0);
                self.line(Kind::Slat, ms, slat, ddir, 0, 0, 0);
            }
            if rates && self.dirs[dir] && len_ns > 0 {
                let bw = (s.bytes as u128 * 1_000_000_000 / len_ns as u128 / 1024) as u64;
                let iops = (s.ios as u128 * 1_000_000_000 / len_ns as u128) as u64;
                self.line(Kind::Bw, ms, bw, ddir, 0, 0, 0);
                self.line(Kind::Iops, ms, iops, ddir, 0, 0, 0);
            }
        }
    }

    /// Writes the per-I/O records kept so far. Slat lines go out in submission order, the
    /// others in completion order, as fio writes them.
    fn flush_recs(&mut self) {
        let mut recs = std::mem::take(&mut self.recs);
        let t0 = self.t0;
        let ms = |t: u64| t.saturating_sub(t0) / 1_000_000;
        for r in &recs {
            let ddir = r.ddir;
            let done = ms(r.done_ns);
            let lat = r.done_ns.saturating_sub(r.submit_ns);
            let clat = r.issued_ns.map(|i| r.done_ns.saturating_sub(i));
            self.line(Kind::Lat, done, lat, ddir, r.len, r.offset, r.ioprio);
            if let Some(c) = clat {
                self.line(Kind::Clat, done, c, ddir, r.len, r.offset, r.ioprio);
            }
            // fio: bytes x 10^6 / clat in ns (bytes per ms, about KiB/s); total latency where
            // the queue did not say when it submitted.
            let spent = clat.unwrap_or(lat);
            let bw = (r.len as u64)
                .saturating_mul(1_000_000)
                .checked_div(spent)
                .unwrap_or(0);
            self.line(Kind::Bw, done, bw, ddir, r.len, r.offset, r.ioprio);
            self.line(Kind::Iops, done, 1, ddir, r.len, r.offset, r.ioprio);
        }
        if self.files[Kind::Slat.index()].is_some() {
            recs.sort_by_key(|r| r.issued_ns.unwrap_or(u64::MAX));
            for r in &recs {
                if let Some(i) = r.issued_ns {
                    let slat = i.saturating_sub(r.submit_ns);
                    self.line(Kind::Slat, ms(i), slat, r.ddir, r.len, r.offset, r.ioprio);
                }
            }
        }
        recs.clear();
        self.recs = recs;
    }
}

/// The error of a failed write to a log.
pub(crate) fn write_error(path: &std::path::Path, e: &std::io::Error) -> Error {
    Error::Io(format!(
        "cannot write the log {}: {}",
        path.display(),
        crate::errno::explain(e, crate::errno::Op::Write)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::request::Handle;

    fn done(dir: Dir, offset: u64, submit: u64, issued: u64, done: u64) -> Done {
        Done {
            handle: Handle::from_user_data(0),
            dir,
            offset,
            len: 4096,
            submit_ns: submit,
            issued_ns: Some(issued),
            done_ns: done,
            ioprio: 0,
        }
    }

    /// Lat, bw and iops logs named `base` in `dir`, the rest as default.
    fn every_log(dir: &std::path::Path, base: &str) -> LogSpec {
        let name = dir.join(base).display().to_string();
        LogSpec {
            lat: Some(name.clone()),
            bw: Some(name.clone()),
            iops: Some(name),
            ..LogSpec::default()
        }
    }

    fn lines(p: &std::path::Path) -> Vec<Vec<u64>> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
            .collect()
    }

    #[test]
    fn per_io_lines_as_fio_writes_them() {
        let d = tempfile::tempdir().unwrap();
        let spec = LogSpec {
            first_index: 3,
            ..every_log(d.path(), "j")
        };
        let mut l = ThreadLog::open(&spec, 1, [true, true, false]).unwrap();
        let t0 = 1_000_000_000;
        l.start(t0);
        // Completes second but was submitted first: slat lines are in submission order.
        l.record(&done(
            Dir::Write,
            8192,
            t0 + 5_000_000,
            t0 + 5_010_000,
            t0 + 9_000_000,
        ));
        l.record(&done(
            Dir::Read,
            4096,
            t0 + 1_000,
            t0 + 3_000,
            t0 + 2_003_000,
        ));
        l.finish(t0 + 10_000_000).unwrap();
        let p = |k: &str| d.path().join(format!("j_{k}.4.log"));
        // time (ms), value, ddir, bs, prio.
        assert_eq!(
            lines(&p("lat")),
            [[9, 4_000_000, 1, 4096, 0], [2, 2_002_000, 0, 4096, 0]]
        );
        assert_eq!(
            lines(&p("clat")),
            [[9, 3_990_000, 1, 4096, 0], [2, 2_000_000, 0, 4096, 0]]
        );
        assert_eq!(
            lines(&p("slat")),
            [[0, 2_000, 0, 4096, 0], [5, 10_000, 1, 4096, 0]]
        );
        // 4096 bytes in 2 ms of clat: 4096 x 10^6 / 2_000_000 = 2048 (fio's per-I/O bw).
        assert_eq!(lines(&p("bw"))[1], [2, 2048, 0, 4096, 0]);
        assert_eq!(lines(&p("iops")), [[9, 1, 1, 4096, 0], [2, 1, 0, 4096, 0]]);
    }

    #[test]
    fn averaged_windows_and_offsets() {
        let d = tempfile::tempdir().unwrap();
        let spec = LogSpec {
            avg_msec: 100,
            offset: true,
            first_index: 1,
            ..every_log(d.path(), "a")
        };
        let mut l = ThreadLog::open(&spec, 0, [true, false, false]).unwrap();
        let ms = 1_000_000;
        l.start(0);
        // Window 0: two reads of 10 and 30 us; window 1 empty; window 2: one read; the run
        // ends 50 ms into window 3 with nothing in it.
        l.record(&done(
            Dir::Read,
            0,
            10 * ms,
            10 * ms + 1_000,
            10 * ms + 10_000,
        ));
        l.record(&done(
            Dir::Read,
            0,
            20 * ms,
            20 * ms + 1_000,
            20 * ms + 30_000,
        ));
        l.record(&done(
            Dir::Read,
            0,
            250 * ms,
            250 * ms + 2_000,
            250 * ms + 40_000,
        ));
        l.finish(350 * ms).unwrap();
        let p = |k: &str| d.path().join(format!("a_{k}.1.log"));
        assert_eq!(
            lines(&p("lat")),
            [[100, 20_000, 0, 0, 0, 0], [300, 40_000, 0, 0, 0, 0]]
        );
        assert_eq!(lines(&p("slat"))[0], [100, 1_000, 0, 0, 0, 0]);
        assert_eq!(lines(&p("clat"))[1], [300, 38_000, 0, 0, 0, 0]);
        // Two 4 KiB reads in 100 ms: 80 KiB/s and 20 I/O per second; the empty windows say 0;
        // the last 50 ms are no whole window: no line (fio 3.33).
        let iops: Vec<u64> = lines(&p("iops")).iter().map(|l| l[1]).collect();
        assert_eq!(iops, [20, 0, 10]);
        let bw = lines(&p("bw"));
        assert_eq!(bw[0], [100, 80, 0, 0, 0, 0]);
        assert_eq!(bw.last().unwrap()[0], 300);
    }

    /// Stamps of the log `k` of `a_{k}.1.log` in `d`.
    fn stamps(d: &std::path::Path, k: &str) -> Vec<u64> {
        lines(&d.join(format!("a_{k}.1.log")))
            .iter()
            .map(|l| l[0])
            .collect()
    }

    #[test]
    fn averaged_logs_end_as_fio_without_a_repeated_stamp() {
        let ms = 1_000_000;
        // Ends `past` ns after 2000 ms, with reads done every 10 ms from 5 ms on, the last
        // at `last_ms` (+ 200 us).
        let run = |past: u64, last_ms: u64| {
            let d = tempfile::tempdir().unwrap();
            let spec = LogSpec {
                avg_msec: 500,
                first_index: 1,
                ..every_log(d.path(), "a")
            };
            let mut l = ThreadLog::open(&spec, 0, [true, false, false]).unwrap();
            l.start(0);
            let mut t = 5 * ms;
            while t <= last_ms * ms {
                l.record(&done(Dir::Read, 0, t, t + 1_000, t + 200_000));
                t += 10 * ms;
            }
            l.finish(2000 * ms + past).unwrap();
            d
        };
        // A run that ends 0.4 ms after a window, with an I/O done in that 0.4 ms: fio's
        // windows end at 2000 (the I/O is in it, as fio's sample at 2000 ms), once.
        let d = run(400_000, 2000);
        for k in ["lat", "clat", "slat", "bw", "iops"] {
            assert_eq!(stamps(d.path(), k), [500, 1000, 1500, 2000], "{k}");
        }
        // 150 ms past the last whole window, with I/O in it: latencies at the end, no rates.
        let d = run(150 * ms, 2140);
        assert_eq!(stamps(d.path(), "lat"), [500, 1000, 1500, 2000, 2150]);
        assert_eq!(stamps(d.path(), "bw"), [500, 1000, 1500, 2000]);
        assert_eq!(stamps(d.path(), "iops"), [500, 1000, 1500, 2000]);
        // Whole windows of 50 reads in 500 ms: 100 per second each.
        let iops: Vec<u64> = lines(&d.path().join("a_iops.1.log"))
            .iter()
            .map(|l| l[1])
            .collect();
        assert_eq!(iops, [100, 100, 100, 100]);
    }

    #[test]
    fn a_log_in_a_missing_directory_is_a_usage_error() {
        let spec = LogSpec {
            bw: Some("/nonexistent-pollwise-dir/x".into()),
            ..LogSpec::default()
        };
        let e = ThreadLog::open(&spec, 0, [true, false, false])
            .err()
            .unwrap();
        assert!(e.to_string().contains("--write_bw_log"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
}
