//! fio's I/O logs (`write_iolog`, `read_iolog`): the requests a job issued, one a line, and
//! their replay.
//!
//! The format is fio's iolog.c. Version 2 (`fio version 2 iolog`) has lines `FILE ACTION` for
//! a file's `add`, `open` and `close`, and `FILE DIR OFFSET LENGTH` for a request (`read`,
//! `write`, `trim`, `sync`, `datasync`, and `wait` whose OFFSET is microseconds); version 3
//! (`fio version 3 iolog`, what fio 3.33 writes) puts the microseconds since the job started
//! before each line, and a replay keeps those times unless `replay_no_stall`. pollwise writes
//! version 3 as fio 3.33 does, in the order it issues the requests.
//!
//! A replay runs the log's requests on one file (the log's, or `replay_redirect`'s): a log of
//! several files, syncs or waits is refused with the line that has them. Trims are replayed as
//! trims (fio 3.33 drops them with "bad ddir: 2"; fio 3.34 replays them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pollwise::request::Dir;
use pollwise_bench::engine::Replayed;

use crate::error::{Error, Result};

const V2: &str = "fio version 2 iolog";
const V3: &str = "fio version 3 iolog";

/// A log read for replay.
#[derive(Debug, Clone, PartialEq)]
pub struct IoLog {
    /// The file its requests go to (the log's, or the redirect's).
    pub file: PathBuf,
    /// The requests, in the log's order.
    pub items: Arc<[Replayed]>,
}

impl IoLog {
    /// Whether any request reads, writes, trims.
    pub fn dirs(&self) -> [bool; 3] {
        let has = |d: Dir| self.items.iter().any(|i| i.dir == d);
        [has(Dir::Read), has(Dir::Write), has(Dir::Trim)]
    }

    /// The largest read or write (the buffers must hold it; a trim needs none), at least 512.
    pub fn max_len(&self) -> u32 {
        self.items
            .iter()
            .filter(|i| i.dir != Dir::Trim)
            .map(|i| i.len)
            .max()
            .unwrap_or(0)
            .max(512)
    }

    /// The end of the furthest read or write: the size the file must have.
    pub fn extent(&self) -> u64 {
        self.items
            .iter()
            .filter(|i| i.dir != Dir::Trim)
            .map(|i| i.offset + i.len as u64)
            .max()
            .unwrap_or(0)
    }
}

/// How a log is replayed (fio's `replay_*` options).
#[derive(Debug, Clone, Default)]
pub struct ReplayOpts {
    /// `replay_no_stall`: every request at once, the log's times ignored.
    pub no_stall: bool,
    /// `replay_redirect`: the file every request goes to instead of the log's.
    pub redirect: Option<PathBuf>,
    /// `replay_time_scale`: the log's times as this percentage (100: as logged).
    pub time_scale: u32,
}

/// The largest I/O log read: some ten million requests, which replay holds in memory.
pub const MAX_LOG: u64 = 256 << 20;

/// Reads the log at `path` (`what` names the option and where it was given, for messages).
pub fn read(path: &Path, o: &ReplayOpts, what: &str) -> Result<IoLog> {
    let shown = path.display();
    let text = crate::infile::read_text("the --read_iolog file", path, MAX_LOG)
        .map_err(|e| {
            Error::Usage(format!(
                "{what}: {}; give fio's I/O log (a regular file written with write_iolog)",
                e.about(&format!("the I/O log {shown}"))
            ))
        })?
        .ok_or_else(|| {
            Error::Usage(format!(
                "{what}: the I/O log {shown} is not text: give fio's I/O log (written with write_iolog)"
            ))
        })?;
    parse(&text, o)
        .map_err(|(line, why)| Error::Usage(format!("{what}: the I/O log {shown}:{line} {why}")))
}

/// Parses a log's text: the log, or (line number, why not).
pub fn parse(text: &str, o: &ReplayOpts) -> std::result::Result<IoLog, (usize, String)> {
    let mut lines = text.lines().enumerate();
    let v3 = match lines.next().map(|(_, l)| l.trim()) {
        Some(V3) => true,
        Some(V2) => false,
        _ => {
            return Err((
                1,
                format!("is not fio's I/O log: its first line is not '{V2}' or '{V3}'"),
            ))
        }
    };
    let mut file: Option<String> = None;
    let mut items = Vec::new();
    let mut first_t: Option<u64> = None;
    for (i, line) in lines {
        let n = i + 1;
        let mut w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() {
            continue;
        }
        let t = if v3 {
            let t: u64 = w[0]
                .parse()
                .map_err(|_| (n, format!("has no time (microseconds) first: '{line}'")))?;
            w.remove(0);
            Some(t)
        } else {
            None
        };
        let (name, act) = match w.as_slice() {
            [name, act, ..] => (*name, *act),
            _ => return Err((n, format!("is not a file action or a request: '{line}'"))),
        };
        match file.as_deref() {
            None => file = Some(name.to_string()),
            Some(f) if f != name && o.redirect.is_none() => {
                return Err((
                    n,
                    format!("names a second file ({name} after {f}): pollwise replays a log of one file; give replay_redirect to send every request to one"),
                ))
            }
            _ => {}
        }
        let dir = match act {
            "add" | "open" | "close" if w.len() == 2 => continue,
            "read" => Dir::Read,
            "write" => Dir::Write,
            "trim" => Dir::Trim,
            "sync" | "datasync" | "wait" => {
                return Err((
                    n,
                    format!("has a '{act}': pollwise replays reads, writes and trims only"),
                ))
            }
            _ => return Err((n, format!("has an action fio does not know: '{act}'"))),
        };
        let (offset, len) = match w.as_slice() {
            [_, _, off, len] => (off.parse::<u64>().ok(), len.parse::<u32>().ok()),
            _ => (None, None),
        };
        let (Some(offset), Some(len)) = (offset, len) else {
            return Err((n, format!("is not 'FILE {act} OFFSET LENGTH': '{line}'")));
        };
        if len == 0 {
            return Err((n, "has a request of length 0".to_string()));
        }
        let at_ns = match t {
            Some(t) if !o.no_stall => {
                let first = *first_t.get_or_insert(t);
                let us = t.saturating_sub(first) as u128 * o.time_scale.max(1) as u128 / 100;
                Some((us * 1000).min(u64::MAX as u128) as u64)
            }
            _ => None,
        };
        items.push(Replayed {
            at_ns,
            dir,
            offset,
            len,
        });
    }
    let file = match (&o.redirect, file) {
        (Some(r), _) => r.clone(),
        (None, Some(f)) => PathBuf::from(f),
        (None, None) => return Err((1, "names no file".to_string())),
    };
    if items.is_empty() {
        return Err((1, "holds no request to replay".to_string()));
    }
    Ok(IoLog {
        file,
        items: items.into(),
    })
}

/// A log being written (fio's `write_iolog`), shared by the engine's issue hook.
pub struct Writer {
    path: PathBuf,
    name: String,
    f: std::io::BufWriter<crate::outfile::Stream>,
    t0: u64,
    error: Option<std::io::Error>,
}

impl Writer {
    /// Creates the log at `path` (never through a link, never over a target: see
    /// [`crate::outfile`]) for requests on `file`, its times counted from clock time `t0_ns`;
    /// writes the header and the file's `add` and `open`.
    pub fn create(path: &Path, file: &Path, t0_ns: u64) -> Result<Arc<Mutex<Writer>>> {
        let f = crate::outfile::create_stream("the write_iolog file", path)?;
        let mut w = Writer {
            path: path.to_path_buf(),
            name: file.display().to_string(),
            f: std::io::BufWriter::with_capacity(1 << 16, f),
            t0: t0_ns,
            error: None,
        };
        let r = writeln!(w.f, "{V3}").and_then(|_| {
            writeln!(w.f, "0 {} add", w.name)?;
            writeln!(w.f, "0 {} open", w.name)
        });
        w.keep(r);
        Ok(Arc::new(Mutex::new(w)))
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    fn us(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.t0) / 1000
    }

    /// Logs a request issued at clock time `now_ns`.
    pub fn request(&mut self, dir: Dir, offset: u64, len: u32, now_ns: u64) {
        let act = match dir {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        };
        let t = self.us(now_ns);
        let r = writeln!(self.f, "{t} {} {act} {offset} {len}", self.name);
        self.keep(r);
    }

    /// Logs the file's `close` at clock time `now_ns` and flushes: the first write error, if
    /// any, as one line naming the log.
    pub fn finish(&mut self, now_ns: u64) -> Result<()> {
        let t = self.us(now_ns);
        let r = writeln!(self.f, "{t} {} close", self.name).and_then(|_| self.f.flush());
        self.keep(r);
        match self.error.take() {
            // Not committed: the new log is removed, an old one is left as it was.
            Some(e) => Err(Error::Io(format!(
                "cannot write the I/O log {}: {}",
                self.path.display(),
                crate::errno::explain(&e, crate::errno::Op::Write)
            ))),
            None => self.f.get_mut().commit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ReplayOpts {
        ReplayOpts {
            time_scale: 100,
            ..ReplayOpts::default()
        }
    }

    #[test]
    fn fios_version_3_log_is_read_with_its_times() {
        let text = "fio version 3 iolog\n22 f add\n121 f open\n125 f write 0 4096\n147 f trim 4096 8192\n192 f read 0 4096\n200 f close\n";
        let l = parse(text, &opts()).unwrap();
        assert_eq!(l.file, PathBuf::from("f"));
        let got: Vec<_> = l
            .items
            .iter()
            .map(|i| (i.at_ns, i.dir, i.offset, i.len))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), Dir::Write, 0, 4096),
                (Some(22_000), Dir::Trim, 4096, 8192),
                (Some(67_000), Dir::Read, 0, 4096)
            ]
        );
        assert_eq!(l.dirs(), [true, true, true]);
        assert_eq!(l.max_len(), 4096);
        assert_eq!(l.extent(), 4096);
        let fast = parse(
            text,
            &ReplayOpts {
                no_stall: true,
                ..opts()
            },
        )
        .unwrap();
        assert!(fast.items.iter().all(|i| i.at_ns.is_none()));
    }

    #[test]
    fn version_2_and_a_redirect() {
        let text = "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 512 1024\n/dev/sdb close\n";
        let o = ReplayOpts {
            redirect: Some("here".into()),
            ..opts()
        };
        let l = parse(text, &o).unwrap();
        assert_eq!(l.file, PathBuf::from("here"));
        assert_eq!(l.items[0].at_ns, None);
        assert_eq!((l.items[0].offset, l.items[0].len), (512, 1024));
    }

    #[test]
    fn what_cannot_be_replayed_names_its_line() {
        let bad = [
            ("not a log\n", 1),
            ("fio version 3 iolog\n1 a add\n2 a sync 0 0\n", 3),
            (
                "fio version 3 iolog\n1 a write 0 4096\n2 b write 0 4096\n",
                3,
            ),
            ("fio version 2 iolog\na write zero 4096\n", 2),
            ("fio version 2 iolog\na add\n", 1),
        ];
        for (text, line) in bad {
            let e = parse(text, &opts()).unwrap_err();
            assert_eq!(e.0, line, "{text:?}: {}", e.1);
        }
    }
}
