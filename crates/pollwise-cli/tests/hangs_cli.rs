//! Signals and time: `--runtime` bounds every wait, and every signal fio
//! handles acts at once in every phase. Each test runs the real binary with a time limit of its
//! own (a hang fails the test, killed, instead of hanging the suite) and sends real signals.

mod common;

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running pollwise with its own `TMPDIR`.
struct Run {
    child: Child,
    started: Instant,
}

fn spawn_in(args: &[&str], tmp: &Path, cwd: Option<&Path>) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pollwise"));
    c.args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    Run {
        child: c.spawn().expect("run pollwise"),
        started: Instant::now(),
    }
}

fn spawn(args: &[&str], tmp: &Path) -> Run {
    spawn_in(args, tmp, None)
}

impl Run {
    fn kill(&self, sig: i32) {
        // SAFETY: kill has no memory effects; the pid is our own child, not yet reaped.
        let r = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits at most `limit` for the process to end by itself (else kills it and fails):
    /// (exit code, stdout, stderr, how long it ran).
    fn finish_within(mut self, limit: Duration, what: &str) -> (i32, String, String, Duration) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("{what}: still running {limit:?} after the wait began; stderr: {err}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = self.started.elapsed();
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut o) = self.child.stdout.take() {
            o.read_to_string(&mut out).unwrap();
        }
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        (status.code().unwrap_or(-1), out, err, took)
    }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Waits (at most 20 s) until pollwise's directory appears in `tmp`.
fn wait_for_dir(tmp: &Path) {
    let t0 = Instant::now();
    while entries(tmp).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(20), "no directory made");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A 4 MiB file to run on, in its own directory.
fn data_file() -> (tempfile::TempDir, String) {
    let d = common::tempdir();
    let f = d.path().join("f.dat");
    std::fs::write(&f, vec![7u8; 4 << 20]).unwrap();
    let s = f.display().to_string();
    (d, s)
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

// --- spikes ---------------------------------------------------------------------------------

#[test]
fn an_hour_long_spike_ends_at_the_runtime_under_interrupt_and_adaptive() {
    let (d, f) = data_file();
    for mode in ["interrupt", "adaptive"] {
        let line =
            format!("run --filename={f} --size=4M --fault=spike:1.0:1h --runtime=1s --mode={mode}");
        let r = spawn(&common::words(&line), d.path());
        let (code, out, err, took) = r.finish_within(Duration::from_secs(15), &line);
        // 1 s, the half-second grace, and the start and stop of a debug build.
        assert!(took < Duration::from_secs(5), "{mode}: {took:?}");
        assert!(!err.contains("panicked"), "{err}");
        // The requests the spike held were cancelled at the deadline: no I/O done, a failure
        // that says why.
        assert_eq!(code, 1, "{mode}: {out}{err}");
        assert!(err.contains("were cancelled"), "{mode}: {err}");
    }
}

#[test]
fn the_first_sigint_or_sigterm_ends_an_hour_long_spike_at_once() {
    let (d, f) = data_file();
    for (sig, code, name) in [
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGTERM, 143, "SIGTERM"),
    ] {
        let line = format!("run --filename={f} --size=4M --fault=spike:1.0:1h --runtime=1h");
        let r = spawn(&common::words(&line), d.path());
        std::thread::sleep(Duration::from_millis(1000));
        r.kill(sig);
        let sent = Instant::now();
        let (rc, out, err, _) = r.finish_within(Duration::from_secs(10), &line);
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "{name}: {:?}",
            sent.elapsed()
        );
        assert_eq!(rc, code, "{name}: {out}{err}");
        assert!(out.contains(&format!("interrupted by {name}")), "{out}");
        assert!(
            !err.contains("did not stop"),
            "the backstop, not the stop: {err}"
        );
    }
}

// --- FIFOs ----------------------------------------------------------------------------------

#[test]
fn a_fifo_as_filename_or_output_is_refused_at_once() {
    let d = common::tempdir();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    let (fd, f) = data_file();
    let p = fifo.display().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["run".into(), format!("--filename={p}")],
        vec!["run".into(), format!("--filename={p}"), "--size=1M".into()],
        vec!["compare".into(), format!("--filename={p}")],
        vec!["calibrate".into(), format!("--filename={p}")],
        vec![
            "advise".into(),
            format!("--filename={p}"),
            "--time=5s".into(),
        ],
        vec![
            "scenario".into(),
            "idle-sources".into(),
            format!("--filename={p}"),
        ],
        vec![
            "run".into(),
            format!("--filename={f}"),
            "--runtime=100ms".into(),
            format!("--output={p}"),
        ],
        vec![
            "calibrate".into(),
            format!("--filename={f}"),
            format!("--output={p}"),
        ],
    ];
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = spawn(&a, fd.path());
        let (code, _out, err, took) = r.finish_within(Duration::from_secs(10), &args.join(" "));
        assert!(took < Duration::from_secs(3), "{args:?}: {took:?}");
        assert_eq!(code, 2, "{args:?}: {err}");
        common::one_line_naming(&args, &err, &["FIFO", &p]);
    }
    // A job file naming a FIFO as its target, too.
    let job = d.path().join("j.fio");
    std::fs::write(&job, format!("[j]\nfilename={p}\nsize=1m\n")).unwrap();
    let r = spawn(&["run", &job.display().to_string()], fd.path());
    let (code, _out, err, _) = r.finish_within(Duration::from_secs(10), "job file");
    assert_eq!(code, 2, "{err}");
    common::one_line_naming(&"job file", &err, &["FIFO"]);
}

// --- include fan-out ------------------------------------------------------------------------

#[test]
fn an_include_fan_out_and_a_cycle_are_refused_at_once_naming_file_and_line() {
    let d = common::tempdir();
    // 13 files, each including the next 4 times: 4^12 expansions of the last.
    for i in 1..=13 {
        let text = if i < 13 {
            format!("include f{}.fio\n", i + 1).repeat(4)
        } else {
            "bs=4k\n".into()
        };
        std::fs::write(d.path().join(format!("f{i}.fio")), text).unwrap();
    }
    std::fs::write(d.path().join("top.fio"), "[j]\ninclude f1.fio\nsize=1m\n").unwrap();
    let r = spawn_in(&["run", "top.fio"], d.path(), Some(d.path()));
    let (code, _out, err, took) = r.finish_within(Duration::from_secs(20), "fan-out");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(code, 2, "{err}");
    common::one_line_naming(&"fan-out", &err, &[".fio:", "included in all"]);

    std::fs::write(d.path().join("a.fio"), "bs=4k\ninclude b.fio\n").unwrap();
    std::fs::write(d.path().join("b.fio"), "include a.fio\n").unwrap();
    std::fs::write(d.path().join("cyc.fio"), "[j]\ninclude a.fio\n").unwrap();
    let r = spawn_in(&["run", "cyc.fio"], d.path(), Some(d.path()));
    let (code, _out, err, _) = r.finish_within(Duration::from_secs(20), "cycle");
    assert_eq!(code, 2, "{err}");
    common::one_line_naming(&"cycle", &err, &["b.fio:1", "cycle", "a.fio"]);
}

// --- the platform model -----------------------------------------------------------------------

#[test]
fn a_model_device_of_ten_seconds_is_bounded_in_real_time_for_poll_and_hybrid() {
    let d = common::tempdir();
    for mode in ["poll", "hybrid"] {
        let line = format!(
            "run --ioengine=sim --platform=here --sim_latency=fixed:10s --runtime=100ms --mode={mode}"
        );
        let r = spawn(&common::words(&line), d.path());
        // poll: 100 ms of virtual polling (every 14 virtual ns: seconds of work in a debug
        // build), then a drain of half a second at most, virtual and real. Before, the drain
        // polled out the device's 10 virtual seconds: minutes.
        let (code, out, err, took) = r.finish_within(Duration::from_secs(90), &line);
        assert!(took < Duration::from_secs(30), "{mode}: {took:?}");
        assert!(!err.contains("panicked"), "{err}");
        if mode == "poll" {
            // Nothing completed in the run: cancelled, and a failure saying so.
            assert_eq!(code, 1, "{mode}: {err}");
            assert!(err.contains("were cancelled"), "{mode}: {err}");
            assert!(err.contains("did no I/O"), "{mode}: {err}");
        } else {
            // hybrid, with no prediction yet, spins a bounded while and then blocks, as
            // interrupt does: the model's blocking wait ends with the read, at 10 s.
            assert_eq!(code, 0, "{mode}: {err}");
            assert!(out.contains("run=10000-10000msec"), "{mode}: {out}");
        }
    }
}

#[test]
fn advise_on_a_ten_second_model_device_ends_within_its_time() {
    let d = common::tempdir();
    let line = "advise --ioengine=sim --platform=here --sim_latency=fixed:10s --time=5s";
    let r = spawn(&common::words(line), d.path());
    let (code, out, err, took) = r.finish_within(Duration::from_secs(60), line);
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the sweep was cut"), "{out}");
}

#[test]
fn sigint_stops_a_slow_model_at_once_with_its_results_so_far() {
    let d = common::tempdir();
    let line = "run --ioengine=sim --platform=here --runtime=30s --mode=poll --numjobs=2";
    let r = spawn(&common::words(line), d.path());
    std::thread::sleep(Duration::from_millis(1500));
    r.kill(libc::SIGINT);
    let sent = Instant::now();
    let (code, out, err, _) = r.finish_within(Duration::from_secs(20), line);
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(code, 130, "{err}");
    assert!(out.contains("interrupted by SIGINT"), "{out}");
}

// --- slow-handler ---------------------------------------------------------------------------

#[test]
fn slow_handler_near_its_limit_ends_with_its_runtime() {
    let d = common::tempdir();
    // Four requests behind handlers of almost a second each: before, each run drained them
    // all (4 s) past its 1 s.
    let line = "scenario slow-handler --handler_us=999999 --iodepth=4 --rounds=1 --runtime=1s \
                --ramp_time=100ms";
    let r = spawn(&common::words(line), d.path());
    let (code, out, err, took) = r.finish_within(Duration::from_secs(60), line);
    assert_eq!(code, 0, "{err}");
    // Two variants of 100 ms ramp and 1 s each, plus set-up (and laying out 128 MiB, seconds
    // on a loaded machine). Draining the handlers took each variant 4 s past its 1 s: at least
    // 10.2 s in all, which this bound still tells apart.
    assert!(took < Duration::from_secs(9), "{took:?}");
    // The handlers cut at the end and the few reads are said, not hidden in the figures.
    assert!(out.contains("handlers cut short at the end"), "{out}");
    assert!(out.contains("(fewer than 100)"), "{out}");
}

// --- signals in every phase -----------------------------------------------------------------

/// `sig` while `compare` lays out its own file (in a `TMPDIR` of the test's own): exits
/// promptly with 128 + sig and leaves nothing behind.
fn mid_layout(sig: i32, code: i32) {
    let root = common::tempdir();
    let tmp = root.path();
    let r = spawn(&["compare", "--size=2G", "--runtime=1s"], tmp);
    wait_for_dir(tmp);
    std::thread::sleep(Duration::from_millis(300));
    r.kill(sig);
    let sent = Instant::now();
    let (rc, out, err, _) = r.finish_within(Duration::from_secs(20), "compare");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(rc, code, "{out}{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(entries(tmp).is_empty(), "left: {:?}", entries(tmp));
}

#[test]
fn sighup_mid_layout_removes_the_temp_file_and_exits_129() {
    mid_layout(libc::SIGHUP, 129);
}

#[test]
fn sigalrm_mid_layout_removes_the_temp_file_and_exits_142() {
    mid_layout(libc::SIGALRM, 142);
}

#[test]
fn sigterm_mid_layout_removes_the_temp_file_and_exits_143() {
    mid_layout(libc::SIGTERM, 143);
}

#[test]
fn sighup_in_a_scenario_exits_at_once_and_removes_its_file() {
    let root = common::tempdir();
    let tmp = root.path();
    let r = spawn(&["scenario", "slow-handler", "--runtime=30s"], tmp);
    wait_for_dir(tmp);
    std::thread::sleep(Duration::from_millis(500));
    r.kill(libc::SIGHUP);
    let sent = Instant::now();
    let (rc, _out, err, _) = r.finish_within(Duration::from_secs(10), "scenario");
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(rc, 129, "{err}");
    assert!(entries(tmp).is_empty(), "left: {:?}", entries(tmp));
}

#[test]
fn sigalrm_mid_run_prints_the_results_so_far_and_exits_142() {
    let (d, f) = data_file();
    let line = format!("run --filename={f} --size=4M --runtime=30s --time_based");
    let r = spawn(&common::words(&line), d.path());
    std::thread::sleep(Duration::from_millis(1500));
    r.kill(libc::SIGALRM);
    let (rc, out, err, took) = r.finish_within(Duration::from_secs(10), &line);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(rc, 142, "{err}");
    assert!(out.contains("interrupted by SIGALRM"), "{out}");
}

#[test]
fn sigusr1_prints_the_status_so_far_and_the_run_goes_on() {
    let (d, f) = data_file();
    let line = format!("run --filename={f} --size=4M --runtime=3s --time_based");
    let r = spawn(&common::words(&line), d.path());
    std::thread::sleep(Duration::from_millis(1500));
    r.kill(libc::SIGUSR1);
    let (rc, out, err, took) = r.finish_within(Duration::from_secs(20), &line);
    assert_eq!(rc, 0, "{err}");
    assert!(took >= Duration::from_secs(3), "stopped early: {took:?}");
    // The interim report, then the final one: two reports of the job.
    assert_eq!(out.matches("pollwise: mode=").count(), 2, "{out}");
    assert!(!out.contains("interrupted"), "{out}");
}

#[test]
fn sigusr1_outside_run_says_so_and_goes_on() {
    let root = common::tempdir();
    let line = "compare --ioengine=sim --runtime=2s --rounds=1 --warmup=0 --modes=interrupt";
    let r = spawn(&common::words(line), root.path());
    wait_for_dir(root.path());
    std::thread::sleep(Duration::from_millis(500));
    r.kill(libc::SIGUSR1);
    let (rc, out, err, _) = r.finish_within(Duration::from_secs(30), line);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains("SIGUSR1"), "{err}");
    assert!(out.contains("interrupt"), "{out}");
}

#[test]
fn sigint_during_advise_calibration_exits_at_once() {
    let (d, f) = data_file();
    let line = format!("advise --filename={f} --time=30s");
    let r = spawn(&common::words(&line), d.path());
    std::thread::sleep(Duration::from_millis(400));
    r.kill(libc::SIGINT);
    let sent = Instant::now();
    let (rc, _out, err, _) = r.finish_within(Duration::from_secs(30), &line);
    assert!(
        sent.elapsed() < Duration::from_millis(1500),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(rc, 130, "{err}");
}

#[test]
fn a_double_sigint_mid_layout_never_leaves_the_temp_dir() {
    // Before, the second signal's exit could fall between the file's removal (slow for a big
    // file) and its directory's, leaving an empty directory about once in 20.
    for i in 0..8 {
        let root = common::tempdir();
        let tmp = root.path();
        let r = spawn(&["compare", "--size=2G", "--runtime=1s"], tmp);
        wait_for_dir(tmp);
        std::thread::sleep(Duration::from_millis(200 + 40 * i));
        r.kill(libc::SIGINT);
        std::thread::sleep(Duration::from_millis(10));
        r.kill(libc::SIGINT);
        let (rc, out, err, _) = r.finish_within(Duration::from_secs(20), "compare");
        assert_eq!(rc, 130, "{out}{err}");
        assert!(
            entries(tmp).is_empty(),
            "round {i}: left: {:?}",
            entries(tmp)
        );
    }
}
