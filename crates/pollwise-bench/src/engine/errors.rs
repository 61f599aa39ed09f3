//! Failures: fio's `continue_on_error` ([`ContinueOn`], given when the engine is built), short
//! transfers resubmitted for the rest, submissions refused with `EAGAIN` retried, and what the
//! engine saw of all of them ([`ErrorCounts`]).

use std::path::PathBuf;

use super::{op_kind, Engine, EngineConfig};
use crate::fault::FaultCounts;
use crate::verify;
use pollwise::queue::{Completion, RequestOp};
use pollwise::request::{Dir, Handle, ReqMeta};
use pollwise::{Error, Op, Result};

/// Which failed requests a job goes on past (fio's `continue_on_error`). As in fio, only the
/// errors fio calls non-fatal are ever continued: `EIO` and `EILSEQ` from the device, and
/// verification failures; anything else (`ECANCELED`, `ENOSPC`, ...) stops the job whatever
/// this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContinueOn {
    /// Stop at the first error (fio's default).
    #[default]
    None,
    /// Go on past read errors.
    Read,
    /// Go on past write errors.
    Write,
    /// Go on past read and write errors.
    Io,
    /// Go on past verification failures.
    Verify,
    /// Go on past all of them.
    All,
}

impl ContinueOn {
    /// fio's names, in fio's order.
    pub const NAMES: &'static [&'static str] = &["none", "read", "write", "io", "verify", "all"];

    /// The value fio calls `s` (`0` is `none` and `1` is `all`, as in fio).
    pub fn from_name(s: &str) -> Option<ContinueOn> {
        Some(match s {
            "none" | "0" => ContinueOn::None,
            "read" => ContinueOn::Read,
            "write" => ContinueOn::Write,
            "io" => ContinueOn::Io,
            "verify" => ContinueOn::Verify,
            "all" | "1" => ContinueOn::All,
            _ => return None,
        })
    }

    pub(super) fn io(self, dir: Dir) -> bool {
        match self {
            ContinueOn::All | ContinueOn::Io => true,
            ContinueOn::Read => dir == Dir::Read,
            ContinueOn::Write => dir == Dir::Write,
            ContinueOn::None | ContinueOn::Verify => false,
        }
    }

    pub(super) fn verify(self) -> bool {
        matches!(self, ContinueOn::Verify | ContinueOn::All)
    }
}

/// What the engine saw of errors, short transfers and refused submissions, and what it did.
#[derive(Debug, Clone, Default)]
pub(super) struct ErrorHandling {
    pub(super) continue_on: ContinueOn,
    pub(super) seen: FaultCounts,
    pub(super) resubmitted: u64,
    pub(super) continued: u64,
    pub(super) failed: u64,
    pub(super) first_error: Option<i32>,
    /// Blocks that failed verification.
    pub(super) bad_blocks: verify::BadBlocks,
}

impl ErrorHandling {
    /// Counts a failed request (result `result`, direction `dir`, error `e`) and says whether
    /// the job goes on past it.
    pub(super) fn go_on(&mut self, result: i32, dir: Option<Dir>, e: &Error) -> bool {
        self.failed += 1;
        let errno = if result < 0 {
            -result
        } else if matches!(e, Error::Verify(_)) {
            libc::EILSEQ
        } else {
            libc::EIO
        };
        self.first_error.get_or_insert(errno);
        let go = match e {
            Error::Verify(_) => self.continue_on.verify(),
            _ if result < 0 && (errno == libc::EIO || errno == libc::EILSEQ) => {
                dir.is_some_and(|d| self.continue_on.io(d))
            }
            _ => false,
        };
        if go {
            self.continued += 1;
        }
        go
    }
}

/// What an engine saw of failures (see [`Engine::errors`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Completions seen per kind: `EIO` and `ECANCELED` results, short transfers, submissions
    /// refused with `EAGAIN` (spikes are latency, never seen as such).
    pub seen: FaultCounts,
    /// Operations pushed for the rest of a short transfer.
    pub resubmitted: u64,
    /// Failed requests the job went on past.
    pub continued: u64,
    /// Failed requests, continued or not.
    pub failed: u64,
    /// The errno of the first failed request.
    pub first_error: Option<i32>,
}

/// Consecutive refused submissions after which a submit gives up.
pub(super) const EAGAIN_TRIES: u32 = 1000;

impl Engine {
    /// What the engine saw of failures since it was made.
    pub fn errors(&self) -> ErrorCounts {
        let e = &self.errs;
        ErrorCounts {
            seen: e.seen,
            resubmitted: e.resubmitted,
            continued: e.continued,
            failed: e.failed,
            first_error: e.first_error,
        }
    }
    /// Submits, retrying a refusal (`EAGAIN`) up to [`EAGAIN_TRIES`] times in a row.
    pub(super) fn submit_retrying(&mut self) -> std::io::Result<usize> {
        let mut tries = 0;
        loop {
            match self.q.submit() {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && tries < EAGAIN_TRIES => {
                    self.errs.seen.eagain += 1;
                    tries += 1;
                }
                r => return r,
            }
        }
    }
    /// The result of a policy's wait: a refused submission (`EAGAIN`) inside it is counted and
    /// retried by the caller's next wait; other errors are the job's.
    pub(super) fn waited(&mut self, r: std::io::Result<usize>) -> Result<usize> {
        match r {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.errs.seen.eagain += 1;
                Ok(self.done.len())
            }
            Err(e) => Err(Error::os("waiting for completions", e)),
        }
    }
    /// Counts what `c` shows, and resubmits the rest of a short transfer as fio does: `None`
    /// when the request is in flight again. The last part's completion comes back as the whole
    /// request's (its result the bytes of every part), so a request completes once.
    pub(super) fn short_transfer(&mut self, c: Completion) -> Option<Completion> {
        match -c.result {
            libc::EIO => self.errs.seen.eio += 1,
            libc::ECANCELED => self.errs.seen.canceled += 1,
            _ => {}
        }
        let h = Handle::from_user_data(c.user_data);
        let requests = self.q.requests()?;
        let (meta, before) = requests.meta_progress(h).ok()?;
        let (meta, before) = (*meta, *before);
        // A request whose earlier part came back short: its first part's times are its own.
        let resumed = before.done > 0;
        if c.result < 0 {
            return Some(c);
        }
        if meta.dir == Dir::Trim {
            // A trim moves no bytes: any result but an error is its whole range done.
            return Some(c);
        }
        let done = before.done + c.result as u32;
        if c.result > 0 && done < meta.len {
            self.errs.seen.short += 1;
            let first_issued_ns = if resumed {
                before.first_issued_ns
            } else {
                meta.issued_ns
            };
            if self.push_rest(h, &meta, done) {
                self.errs.resubmitted += 1;
                if let Ok(p) = self.slab_mut().progress_mut(h) {
                    p.done = done;
                    p.first_issued_ns = first_issued_ns;
                }
                return None;
            }
        }
        if resumed {
            if let Ok(m) = self.slab_mut().meta_mut(h) {
                m.issued_ns = before.first_issued_ns;
            }
        }
        Some(Completion {
            result: done as i32,
            ..c
        })
    }
    /// Pushes the rest of request `h` after `done` bytes: true if it is in flight again.
    pub(super) fn push_rest(&mut self, h: Handle, meta: &ReqMeta, done: u32) -> bool {
        if self.slab_mut().restart(h).is_err() {
            return false;
        }
        let (file, at) = self.place(meta.offset + done as u64);
        let spec = RequestOp {
            kind: op_kind(meta.dir),
            file,
            offset: at,
            len: meta.len - done,
            fixed: self.cfg.fixedbufs,
        };
        for _ in 0..EAGAIN_TRIES {
            match self.q.push_request_at(h, spec, done) {
                Ok(()) => return true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if self.submit_retrying().is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        false
    }
}

pub(super) fn op_name(cfg: &EngineConfig, meta: &ReqMeta) -> Op {
    let target = PathBuf::from(&cfg.target);
    match meta.dir {
        Dir::Read => Op::Read {
            offset: meta.offset,
            target,
        },
        Dir::Write => Op::Write {
            offset: meta.offset,
            target,
        },
        Dir::Trim => Op::Trim {
            offset: meta.offset,
            target,
        },
    }
}

pub(super) fn io_error(cfg: &EngineConfig, meta: &ReqMeta, errno: i32) -> Error {
    let source = std::io::Error::from_raw_os_error(errno);
    if cfg.hipri && (errno == libc::EOPNOTSUPP || errno == libc::EINVAL) {
        return Error::Unsupported {
            feature: "IOPOLL",
            target: Some(PathBuf::from(&cfg.target)),
            source,
        };
    }
    Error::os(op_name(cfg, meta), source)
}
