//! fio's verify state (`verify_state_save`, `verify_state_load`): a writing job saves which
//! blocks it wrote with verify, and a later run's reading job of the same name loads it and
//! checks the blocks it names.
//!
//! The file has fio's name, `local-JOBNAME-N-verify.state` in the current directory (`N` the
//! thread's number among all the jobs' threads from 0, as fio counts them), and pollwise's own
//! text: a first line naming it, the job, then the byte ranges written. fio's state is another
//! binary format for fio's own headers, which pollwise's blocks do not carry, so neither reads
//! the other's. A file of that name that is not a pollwise verify state is never overwritten,
//! and is written whole or not at all ([`crate::outfile::write_whole`]).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The first line of every state file.
const MAGIC: &str = "pollwise verify state 1";

/// Whose state: a job's name and one of its threads' number among all the jobs' threads
/// (fio's, from 0).
#[derive(Debug, Clone, Copy)]
pub struct Whose<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The thread's number among all the jobs' threads.
    pub thread: usize,
}

/// Where the run's state files go: `--aux-path`, set once before the jobs start (fio keeps it
/// as a global too); unset, the current directory.
static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the run's state directory (`--aux-path`); the first call wins.
pub fn set_dir(dir: PathBuf) {
    let _ = DIR.set(dir);
}

/// The run's state directory: `--aux-path`, else the current directory (an empty path).
pub fn dir() -> &'static Path {
    DIR.get().map_or(Path::new(""), PathBuf::as_path)
}

/// The state file of `w`'s thread in `dir` (the current directory, as fio's:
/// fio's name; a `/` in the job's name becomes `.`).
pub fn path(dir: &Path, w: Whose<'_>) -> PathBuf {
    let name = w.job.replace('/', ".");
    let n = w.thread;
    dir.join(format!("local-{name}-{n}-verify.state"))
}

/// Checks, before any job runs, that the state of each of `threads` of job `job` can be saved
/// in `dir` (a job that saves its verify state): a name held by a file that is not a pollwise
/// verify state, or a directory this process cannot write, is refused now, not after the whole
/// job has run.
pub fn check_can_save(dir: &Path, job: &str, threads: std::ops::Range<usize>) -> Result<()> {
    for thread in threads {
        let w = Whose { job, thread };
        let p = path(dir, w);
        if let Ok(old) = std::fs::read(&p) {
            if !old.starts_with(MAGIC.as_bytes()) {
                return Err(not_ours(&p));
            }
        }
    }
    let here = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    // A file made and removed at once: the one test that holds for root, read-only mounts
    // and access control lists alike.
    let probe = here.join(format!(".pollwise-state-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            let dir = std::fs::canonicalize(here).unwrap_or_else(|_| here.to_path_buf());
            return Err(Error::Usage(format!(
                "--verify_state_save: cannot write the verify state in {} ({e}): give a directory you can write with --aux-path=DIR (fio's; default: the current directory), or drop verify_state_save",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// The refusal of a state file name held by another file.
fn not_ours(p: &Path) -> Error {
    Error::Usage(format!(
        "--verify_state_save: {} exists and is not a pollwise verify state: pollwise will not overwrite it; move it away, or give the job another name",
        p.display()
    ))
}

/// Saves `blocks` (offset, length: what the thread wrote with verify) as the state of `w`'s
/// thread. An existing file of that name is replaced only if it is a pollwise verify
/// state.
pub fn save(dir: &Path, w: Whose<'_>, blocks: &[(u64, u32)]) -> Result<()> {
    let p = path(dir, w);
    if let Ok(old) = std::fs::read(&p) {
        if !old.starts_with(MAGIC.as_bytes()) {
            return Err(not_ours(&p));
        }
    }
    let ranges = pollwise_bench::engine::merge_ranges(
        blocks.iter().map(|&(o, l)| (o, o + l as u64)).collect(),
    );
    let mut text = format!("{MAGIC}\njob {}\n", w.job);
    for (s, e) in ranges {
        text.push_str(&format!("written {s} {e}\n"));
    }
    crate::outfile::write_whole("verify state", &p, text.as_bytes())
}

/// Loads the state of `w`'s thread: the byte ranges written, sorted.
pub fn load(dir: &Path, w: Whose<'_>) -> Result<Vec<(u64, u64)>> {
    let p = path(dir, w);
    let bad = |why: String| {
        Error::Usage(format!(
            "--verify_state_load: {} {why}: run the writing job (of the same name, with verify_state_save=1) in this directory first",
            p.display()
        ))
    };
    let text = std::fs::read_to_string(&p).map_err(|e| bad(format!("cannot be read ({e})")))?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(bad("is not a pollwise verify state".into()));
    }
    match lines.next().and_then(|l| l.strip_prefix("job ")) {
        Some(name) if name == w.job => {}
        Some(name) => return Err(bad(format!("is the state of job '{name}'"))),
        None => return Err(bad("names no job".into())),
    }
    let mut ranges = Vec::new();
    for (k, l) in lines.enumerate() {
        let r = l.strip_prefix("written ").and_then(|rest| {
            let (s, e) = rest.split_once(' ')?;
            let (s, e) = (s.parse::<u64>().ok()?, e.parse::<u64>().ok()?);
            (s < e).then_some((s, e))
        });
        match r {
            Some(r) => ranges.push(r),
            None => return Err(bad(format!("is damaged at line {}", k + 3))),
        }
    }
    ranges.sort_unstable();
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads_and_never_overwrites_another_file() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        let spec = Whose {
            job: "a/b",
            thread: 3,
        };
        let p = path(d, spec);
        assert_eq!(p, d.join("local-a.b-3-verify.state"));
        let r = (|| {
            save(d, spec, &[(0, 4096), (4096, 4096), (16384, 512)])?;
            let got = load(d, spec)?;
            assert_eq!(got, vec![(0, 8192), (16384, 16896)]);
            // Another job's name: refused.
            let other = Whose { job: "c", ..spec };
            std::fs::copy(&p, path(d, other)).unwrap();
            assert!(load(d, other).is_err());
            // A file that is not a state is never overwritten.
            std::fs::write(&p, b"the user's notes\n").unwrap();
            let e = save(d, spec, &[(0, 4096)]).unwrap_err();
            assert!(e.to_string().contains("will not overwrite"), "{e}");
            assert_eq!(std::fs::read(&p).unwrap(), b"the user's notes\n");
            assert!(load(d, spec).is_err());
            Ok::<(), Error>(())
        })();
        r.unwrap();
    }
}
