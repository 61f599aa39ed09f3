//! Your own io_uring ring, waited on with the policy you name: the library's parts without its
//! engine.
//!
//! Sets up a plain ring over a file opened with `O_DIRECT` and wraps it in a `Tracked` queue,
//! which records every operation in flight, tells the policy of each submission itself, and owns
//! the `Slab` whose buffers the reads use (a buffer is out of reach while the kernel holds it).
//! Then it reads 4 KiB at random offsets, four at a time, taking each request from the slab and
//! giving it back the moment its completion is handled, and waits for completions with the policy
//! named on the command line. It prints the latency percentiles and what the queue and the policy
//! counted (system calls, polls in vain, blocks, sleeps).
//!
//! Run with
//!
//! ```text
//! cargo run --example ring_with_policy -- hybrid              # 5000 reads of a 16 MiB temp file
//! cargo run --example ring_with_policy -- poll 20000 /path/to/file
//! ```
//!
//! The policies are `interrupt`, `poll`, `hybrid` and `adaptive`. The temp file is patterned and
//! every read is checked against it. Exit status: 0 on success, 2 for bad arguments, 1 when the
//! I/O fails.

use std::error::Error;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;

use pollwise::clock::monotonic;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{Completion, OpKind, RequestOp, Tracked};
use pollwise::request::{Dir, Handle, ReqMeta, Slab};
use pollwise_bench::stats::DirStats;

/// Bytes per read.
const BS: usize = 4096;
/// Reads in flight at once: the slab's slots.
const DEPTH: usize = 4;
/// The temp file's size.
const TEMP_SIZE: usize = 16 << 20;
const USAGE: &str = "usage: ring_with_policy MODE [READS] [FILE]  (MODE: interrupt, poll, hybrid or adaptive; READS default 5000; FILE default a 16 MiB temp file)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = (|| -> Result<(Mode, u64, Option<&str>), String> {
        let mode: Mode = args.first().ok_or("name a policy")?.parse()?;
        let reads = match args.get(1) {
            Some(n) => n
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("READS must be a positive number, not '{n}'"))?,
            None => 5_000,
        };
        if args.len() > 3 {
            return Err("too many arguments".into());
        }
        Ok((mode, reads, args.get(2).map(String::as_str)))
    })();
    let (mode, reads, path) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ring_with_policy: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(mode, reads, path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ring_with_policy: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A file whose every 8-byte word holds its own offset, so a read can be checked.
fn patterned_temp_file(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let path = dir.join("ring_with_policy.dat");
    let mut data = Vec::with_capacity(TEMP_SIZE);
    for o in (0..TEMP_SIZE as u64).step_by(8) {
        data.extend_from_slice(&o.to_le_bytes());
    }
    let mut f = File::create(&path)?;
    f.write_all(&data)?;
    f.sync_all()?;
    Ok(path)
}

fn run(mode: Mode, reads: u64, path: Option<&str>) -> Result<(), Box<dyn Error>> {
    // The temp directory (and the file in it) is removed when `_dir` drops, however run ends.
    let _dir;
    let (path, check) = match path {
        Some(p) => (Path::new(p).to_path_buf(), false),
        None => {
            let d = tempfile::tempdir()?;
            let p = patterned_temp_file(d.path())?;
            _dir = d;
            (p, true)
        }
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| format!("cannot open {} with O_DIRECT: {e}", path.display()))?;
    let blocks = file.metadata()?.len() / BS as u64;
    if blocks == 0 {
        return Err(format!("{} is smaller than one {BS}-byte block", path.display()).into());
    }

    // The ring reads `file`'s fd: `file` is declared first, so it is dropped after the queue.
    let ring = UringQueue::new(
        &UringOptions {
            entries: DEPTH as u32,
            ..Default::default()
        },
        &[file.as_raw_fd()],
        false,
    )?;
    let clock = monotonic();
    let slab = Slab::new(DEPTH, BS, 4096)?;
    let mut q = Tracked::with_requests(ring, clock.clone(), slab);
    let mut policy = PolicyConfig::new(mode).build(clock.clone());

    let mut lat = DirStats::default();
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    let mut reaped: Vec<(Completion, u64)> = Vec::with_capacity(DEPTH);
    let (mut issued, mut done) = (0u64, 0u64);
    let t0 = std::time::Instant::now();
    while done < reads {
        // Keep DEPTH reads in flight: a free slot of the slab, its buffer handed to the kernel.
        while issued < reads && q.in_flight() < DEPTH {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let offset = rng % blocks * BS as u64;
            let mut slab = q.requests_mut().ok_or("the queue owns no slab")?;
            let h = slab
                .alloc(ReqMeta {
                    dir: Dir::Read,
                    offset,
                    len: BS as u32,
                    submit_ns: clock.now_ns(),
                    issued_ns: None,
                    ioprio: 0,
                })
                .ok_or("no free slot although fewer than DEPTH reads are in flight")?;
            q.push_request(
                h,
                RequestOp {
                    kind: OpKind::Read,
                    file: 0,
                    offset,
                    len: BS as u32,
                    fixed: false,
                },
            )?;
            issued += 1;
        }
        // The policy submits what was pushed, then waits its way for at least one completion.
        reaped.clear();
        policy.wait(&mut q, 1, &mut |c| reaped.push((c, clock.now_ns())))?;
        let mut slab = q.requests_mut().ok_or("the queue owns no slab")?;
        for &(c, now) in &reaped {
            // The completion's user_data is the request's handle; its buffer is ours again.
            let h = Handle::from_user_data(c.user_data);
            slab.complete(h, |meta, buf| -> Result<(), String> {
                if c.result < 0 {
                    let e = std::io::Error::from_raw_os_error(-c.result);
                    return Err(format!("read at offset {} failed: {e}", meta.offset));
                }
                if c.result as u32 != meta.len {
                    return Err(format!(
                        "short read at offset {}: {} bytes",
                        meta.offset, c.result
                    ));
                }
                if check && buf[..8] != meta.offset.to_le_bytes() {
                    return Err(format!(
                        "read at offset {} returned other data",
                        meta.offset
                    ));
                }
                // fio's times: slat up to the submission's return, clat from there to the reap.
                match meta.issued_ns {
                    Some(issued) => lat.record(
                        issued.saturating_sub(meta.submit_ns),
                        now.saturating_sub(issued),
                        BS as u64,
                    ),
                    None => lat.record_lat(now.saturating_sub(meta.submit_ns), BS as u64),
                }
                Ok(())
            })??;
            done += 1;
        }
    }
    let secs = t0.elapsed().as_secs_f64();

    let us = |ns: u64| ns as f64 / 1e3;
    println!(
        "{} on {}: {} reads of {BS} bytes at depth {DEPTH} in {secs:.2} s ({:.0} IOPS)",
        mode.name(),
        path.display(),
        lat.ios,
        lat.ios as f64 / secs
    );
    println!(
        "latency (queued to reaped): p50 {:.1} us, p99 {:.1} us; completion latency p50 {:.1} us",
        us(lat.pct(50.0)),
        us(lat.pct(99.0)),
        us(pollwise_bench::stats::pct_of(&lat.clat, 50.0)),
    );
    let qc = q.counters();
    println!(
        "queue: {} io_uring_enter calls ({:.2} per read)",
        qc.enters,
        qc.enters as f64 / lat.ios as f64
    );
    let counters = policy.counters();
    let fields: Vec<String> = counters
        .fields()
        .iter()
        .map(|(name, v)| format!("{name}={v}"))
        .collect();
    println!("policy {}: {}", policy.name(), fields.join(" "));
    Ok(())
}
