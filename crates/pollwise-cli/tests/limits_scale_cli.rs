//! Limits end to end: a run that cannot fit is refused up front in one line
//! (fio's job limit, a group's threads and buffers, a scenario's burst), and one that fits runs
//! under a lowered address-space limit instead of aborting in an allocation.

mod common;

use common::{one_line_naming, outcome, tempdir};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs pollwise with `args` under RLIMIT_AS = `limit` bytes (set in the child before exec),
/// with `TMPDIR` at `tmp` if given: (exit code, -1 for a death by signal; stdout; stderr).
fn under_address_limit(limit: u64, args: &[&str], tmp: Option<&Path>) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pollwise"));
    c.args(args);
    if let Some(t) = tmp {
        c.env("TMPDIR", t);
    }
    // SAFETY: between fork and exec the child calls only setrlimit (async-signal-safe) on a
    // value on its own stack, and allocates nothing.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    outcome(c.output().expect("run pollwise"))
}

/// A job file of `n` sections of a 200 ms random-read job on `file`.
fn sections(dir: &Path, n: usize, file: &Path) -> String {
    let mut t = format!(
        "[global]\nfilename={}\nsize=1M\nruntime=200ms\ntime_based=1\nrw=randread\ndirect=0\n",
        file.display()
    );
    for i in 0..n {
        t.push_str(&format!("[j{i}]\n"));
    }
    let p = dir.join("many.fio");
    std::fs::write(&p, t).unwrap();
    p.display().to_string()
}

#[test]
fn more_jobs_than_fio_allows_are_refused_before_any_runs() {
    let d = tempdir();
    let jf = sections(d.path(), 5000, &d.path().join("s.dat"));
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", &jf])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It used to run every job (44 s, 7 GB); a refusal takes a moment.
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("5000 jobs still running after 60 s: not refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, _out, err) = outcome(child.wait_with_output().unwrap());
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"5000 sections", &err, &["4096", "FIO_MAX_JOBS"]);
    assert!(
        !d.path().join("s.dat").exists(),
        "a refused run laid out its file"
    );
    let (code, _out, err) = common::pollwise(&[
        "run",
        "--ioengine=sim",
        "--numjobs=2000",
        "--name=a",
        "--name=b",
        "--name=c",
    ]);
    assert_eq!(code, 2, "{err}");
    one_line_naming(
        &"3 x 2000 threads",
        &err,
        &["6000 job threads", "--numjobs"],
    );
}

#[test]
fn two_thousand_job_threads_each_do_io_in_their_window() {
    // The issue's `--numjobs=2000 --runtime=1s` (59 s and 5.3 GB once), paced. Each thread copied six
    // histograms as the window opened, and left a barrier one at a time: the last ones started
    // after the window had closed and did no I/O (which fails the run).
    let (code, out, err) = common::pollwise(&[
        "run",
        "--ioengine=sim",
        "--sim_latency=fixed:200us",
        "--numjobs=2000",
        // Paced, so 2000 threads fit two cores: unpaced, each wants a few percent of a core,
        // 25 times what there is, and a thread the scheduler leaves out for a second does no
        // I/O for a reason that is not the one tested here. At 20 IOPS a debug build was still
        // at the edge on two quiet cores: paced threads go in lockstep (2000 requests at each
        // slot), 15% of the requests asked were never made and 1 run in 4 to 1 in 2 had a
        // thread the scheduler left out for the whole second (the binary of the stop before
        // alike); at 5 IOPS each slot's burst fits in a quarter of the interval. The window is
        // 3 s: on a machine at load 2 to 3 (another build beside this test) one thread of 2000
        // was left out for a whole 1 s window; a thread that gets a core once in it does I/O,
        // and what is checked (every thread did some) is the same.
        "--rate_iops=5",
        "--runtime=3s",
        "--time_based",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2000);
    for j in jobs {
        assert!(
            j["read"]["total_ios"].as_u64().unwrap() > 0,
            "{}",
            j["jobname"]
        );
    }
}

#[test]
fn a_groups_jobs_are_checked_together_and_later_groups_on_their_own() {
    let d = tempdir();
    // Three jobs of 256 MiB of buffers each (1 MiB x 256 slots), under a 700 MiB address space:
    // one at a time they fit, all three at once they cannot.
    let job = |stonewall: bool| {
        let sw = if stonewall { "stonewall\n" } else { "" };
        let mut t = String::from(
            "[global]\nioengine=sim\nsim_latency=fixed:10us\nbs=1M\niodepth=256\nruntime=100ms\ntime_based=1\n",
        );
        for n in ["a", "b", "c"] {
            t.push_str(&format!("[{n}]\n{sw}"));
        }
        let p = d.path().join(format!("g{stonewall}.fio"));
        std::fs::write(&p, t).unwrap();
        p.display().to_string()
    };
    let limit = 700 << 20;
    let (code, _out, err) = under_address_limit(limit, &["run", &job(false)], None);
    assert_eq!(code, 2, "{err}");
    one_line_naming(
        &"one group",
        &err,
        &["3 jobs running at once", "ulimit -v", "stonewall"],
    );
    let (code, out, err) = under_address_limit(limit, &["run", &job(true)], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("IOPS=").count(), 3, "{out}");
}

#[test]
fn many_job_threads_fit_under_a_lowered_address_space_limit() {
    // glibc's per-thread arenas once took the whole of `ulimit -v 500000` and the run aborted
    // (SIGABRT) in an allocation. (The simulated device keeps 64 threads from starving one
    // another of the CPU on a small machine: a thread that did no I/O fails the run.)
    let args = [
        "run",
        "--ioengine=sim",
        "--sim_latency=fixed:200us",
        "--numjobs=64",
        "--runtime=2s",
        "--time_based",
    ];
    let (code, out, err) = under_address_limit(500_000 << 10, &args, None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches(": mode=").count(), 64, "{out}");
    // And on a real file, what cannot fit there is one line instead of an abort.
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("n.dat").display());
    let many = [
        "run",
        f.as_str(),
        "--size=1M",
        "--direct=0",
        "--numjobs=4000",
    ];
    let (code, _out, err) = under_address_limit(500_000 << 10, &many, None);
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"4000 threads", &err, &["--numjobs", "ulimit -v"]);
}

#[test]
fn idle_sources_fits_under_a_lowered_address_space_limit() {
    let d = tempdir();
    let args = [
        "scenario",
        "idle-sources",
        "--runtime=300ms",
        "--ramp_time=100ms",
        "--rounds=1",
    ];
    let (code, out, err) = under_address_limit(300_000 << 10, &args, Some(d.path()));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pruning"), "{out}");
    // 2000 sources (64 KiB buffers and their channels) cannot fit there: refused, naming
    // --sources.
    let args = [
        "scenario",
        "idle-sources",
        "--sources=2000",
        "--bs=64k",
        "--runtime=300ms",
        "--rounds=1",
    ];
    let (code, _out, err) = under_address_limit(300_000 << 10, &args, Some(d.path()));
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"2000 sources", &err, &["--sources", "ulimit -v"]);
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_burst_that_cannot_fit_is_refused_and_leaves_no_file() {
    // 32768 requests of 8 MiB: 256 GiB of buffers. Once the OOM killer ended it (24 GB in),
    // leaving its temp file. The address-space limit keeps this test safe if the check failed.
    let d = tempdir();
    let args = ["scenario", "fairness", "--bs=8M", "--runtime=1s"];
    let (code, _out, err) = under_address_limit(8 << 30, &args, Some(d.path()));
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"--bs=8M burst", &err, &["--burst", "--bs", "MemAvailable"]);
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Registered buffers are locked memory. A job whose `--fixedbufs` exceed the locked-memory
/// limit (a process without CAP_IPC_LOCK) is refused before the first job runs, naming
/// `ulimit -l`, not by the kernel's ENOMEM when its thread registers them after the job before
/// it has run. The run is made without CAP_IPC_LOCK (setpriv drops it from the bounding set) and
/// with a 64 KiB limit (prlimit), both from util-linux.
#[test]
fn registered_buffers_over_the_memlock_limit_are_refused_before_anything_runs() {
    let d = tempdir();
    let first = d.path().join("first.dat");
    let jf = d.path().join("two.fio");
    std::fs::write(
        &jf,
        format!(
            "[first]\nfilename={}\nsize=1M\nrw=write\nruntime=2s\ntime_based=1\n\
             [second]\nstonewall\nfilename={}\nsize=4M\nrw=randread\nbs=64k\niodepth=32\nfixedbufs=1\n",
            first.display(),
            d.path().join("second.dat").display()
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    // SAFETY: geteuid takes no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // Root drops CAP_IPC_LOCK; another user lacks it already.
    let mut c = Command::new(if root { "setpriv" } else { "prlimit" });
    if root {
        c.args([
            "--bounding-set=-ipc_lock",
            "--inh-caps=-ipc_lock",
            "--",
            "prlimit",
        ]);
    }
    let out = c
        .args(["--memlock=65536:65536", "--"])
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", jf.to_str().unwrap()])
        .output()
        .expect("run setpriv and prlimit (util-linux)");
    let (code, _out, err) = outcome(out);
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"memlock", &err, &["--fixedbufs", "ulimit -l", "2.0 MiB"]);
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "refused after {:?}: the first job ran",
        t0.elapsed()
    );
    assert!(!first.exists(), "the first job laid out its file");
}
