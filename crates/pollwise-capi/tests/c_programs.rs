//! The C test program (tests/c/ring_modes.c) on liburing, built and run on every ring kind this
//! kernel offers under every mode: (a) waiting through the C ABI, compiled against an install
//! in a temp prefix with `pkg-config --cflags --libs pollwise` (and once statically), and
//! (b) unmodified, waiting with liburing's own functions under the preload library, whose
//! summary must show the waits were taken over. Needs a C compiler, pkg-config and liburing-dev
//! (scripts/test.sh installs them): without them the test fails saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use pollwise::policy::Mode;

const KINDS: [&str; 5] = [
    "plain",
    "defer_taskrun",
    "coop_taskrun",
    "sqpoll",
    "registered_fd",
];
const READS: &str = "200";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The temp install prefix, made once: scripts/install-capi.sh with the debug build.
fn prefix() -> &'static Path {
    static P: OnceLock<tempfile::TempDir> = OnceLock::new();
    P.get_or_init(|| {
        assert!(
            Path::new("/usr/include/liburing.h").exists(),
            "liburing-dev is missing: apt-get install liburing-dev (scripts/test.sh does)"
        );
        let dir = tempfile::tempdir().unwrap();
        run(Command::new("bash")
            .arg(root().join("scripts/install-capi.sh"))
            .env("PREFIX", dir.path())
            .env("PROFILE", "dev")
            .env("CARGO", env!("CARGO")));
        dir
    })
    .path()
}

fn pkg_config(args: &[&str]) -> Vec<String> {
    let out = run(Command::new("pkg-config")
        .args(args)
        .arg("pollwise")
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")));
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// Compiles tests/c/ring_modes.c into `exe` with `flags`.
fn cc(exe: &Path, flags: &[String]) {
    run(Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(exe)
        .arg(root().join("tests/c/ring_modes.c"))
        .args(flags));
}

/// Each ring kind said its reads were checked.
fn assert_every_kind(out: &Output, what: &str) {
    let text = String::from_utf8_lossy(&out.stdout);
    for k in KINDS {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{k} ")) && l.contains("reads checked")),
            "{what}: no checked reads on the {k} ring:\n{text}"
        );
    }
}

#[test]
fn the_c_program_waits_through_the_c_abi_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("ring_modes_capi");
    let mut flags = vec!["-DUSE_POLLWISE".to_string()];
    flags.extend(pkg_config(&["--cflags", "--libs"]));
    cc(&exe, &flags);
    for mode in Mode::ALL.iter().map(|m| m.name()) {
        let out = run(Command::new(&exe)
            .args(["capi", mode, READS])
            .env("LD_LIBRARY_PATH", prefix().join("lib")));
        assert_every_kind(&out, mode);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines().all(|l| l.contains(&format!(" {mode}: "))),
            "{text}"
        );
    }
    // Statically linked: libpollwise.a and the libraries pkg-config names for it.
    let exe = dir.path().join("ring_modes_static");
    let mut flags = vec!["-DUSE_POLLWISE".to_string()];
    flags.extend(pkg_config(&["--cflags"]));
    flags.push(prefix().join("lib/libpollwise.a").display().to_string());
    flags.extend(
        pkg_config(&["--static", "--libs"])
            .into_iter()
            .filter(|f| f != "-lpollwise"),
    );
    cc(&exe, &flags);
    let out = run(Command::new(&exe).args(["capi", "auto", READS]));
    assert_every_kind(&out, "static");
}

#[test]
fn the_unmodified_c_program_waits_through_the_preload_library_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("ring_modes");
    // Plain liburing: nothing of pollwise at build time.
    cc(&exe, &["-luring".to_string()]);
    let preload = prefix().join("lib/libpollwise_preload.so");
    for mode in Mode::ALL.iter().map(|m| m.name()) {
        let summary = dir.path().join(format!("summary-{mode}.json"));
        let out = run(Command::new(&exe)
            .args(["liburing", READS])
            .env("LD_PRELOAD", &preload)
            .env("POLLWISE_MODE", mode)
            .env("POLLWISE_SUMMARY", &summary));
        assert_every_kind(&out, mode);
        let text = std::fs::read_to_string(&summary).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 1, "one process, one summary line: {text}");
        let s = &lines[0];
        assert_eq!(s["mode"], mode);
        assert_eq!(s["mode_known"], true);
        assert_eq!(s["rings"], KINDS.len() as u64, "{s}");
        // Every exported wait was taken over, and the calls with a signal mask (one per ring)
        // went to liburing.
        for f in [
            "__io_uring_get_cqe",
            "io_uring_wait_cqes",
            "io_uring_wait_cqe_timeout",
            "io_uring_submit_and_wait",
            "io_uring_submit_and_wait_timeout",
        ] {
            assert!(s["taken"][f].as_u64().unwrap() > 0, "{mode}: {f}: {s}");
        }
        assert!(s["calls"]["io_uring_get_events"].as_u64().unwrap() > 0);
        assert_eq!(s["fallbacks"]["sigmask"], KINDS.len() as u64, "{s}");
        assert_eq!(s["fallbacks"]["ring_flags"], 0, "{s}");
        assert_eq!(s["fallbacks"]["busy"], 0, "{s}");
        // The idle waits ended with ETIME, one per ring.
        assert_eq!(s["timeouts"], KINDS.len() as u64, "{s}");
        let n = |k: &str| s[k].as_u64().unwrap();
        assert!(
            n("waits") > 0 && n("cpu_user_ns") + n("cpu_sys_ns") > 0,
            "{s}"
        );
        match mode {
            // Poll blocks only for an SQPOLL thread that waits for its CPU (a stall).
            "poll" => assert!(n("spins") > 0 && n("blocks") == n("stall_blocks"), "{s}"),
            "interrupt" => assert!(n("blocks") > 0 && n("sleeps") == 0, "{s}"),
            "hybrid" | "adaptive" => assert!(n("spins") > 0, "{s}"),
            _ => assert!(n("spins") + n("blocks") > 0, "{s}"),
        }
    }
}

/// liburing's rules, one check each (tests/c/liburing_rules.c): each holds plain, under the
/// preload library in every mode, and for the C API's own checks through the C ABI.
const RULES: [&str; 12] = [
    "signal",
    "signal_restart",
    "signal_fn",
    "two_one_ready",
    "fork",
    "short_submit",
    "single_issuer",
    "timespec",
    "timer_slack",
    "idle_cpu",
    "cqe_arrives",
    "double_close",
];

fn cc_rules(exe: &Path, flags: &[String]) {
    run(Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(exe)
        .arg(root().join("tests/c/liburing_rules.c"))
        .args(flags)
        .arg("-lpthread")
        .arg("-lm"));
}

#[test]
fn liburing_rules_hold_plain_and_under_the_preload_library_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("liburing_rules");
    cc_rules(&exe, &["-luring".to_string()]);
    let preload = prefix().join("lib/libpollwise_preload.so");
    let mut failed = Vec::new();
    for check in RULES {
        let plain = Command::new(&exe).arg(check).output().unwrap();
        assert!(
            plain.status.success(),
            "{check} fails plain: liburing itself differs here:\n{}",
            String::from_utf8_lossy(&plain.stderr)
        );
        for mode in Mode::ALL.iter().map(|m| m.name()) {
            let out = Command::new(&exe)
                .arg(check)
                .env("LD_PRELOAD", &preload)
                .env("POLLWISE_MODE", mode)
                .output()
                .unwrap();
            if !out.status.success() {
                failed.push(format!(
                    "{check} under {mode}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_c_api_refuses_a_second_thread_and_options_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("liburing_rules_capi");
    let mut flags = vec!["-DUSE_POLLWISE".to_string()];
    flags.extend(pkg_config(&["--cflags", "--libs"]));
    cc_rules(&exe, &flags);
    for check in ["capi_busy", "capi_options"] {
        run(Command::new(&exe)
            .arg(check)
            .env("LD_LIBRARY_PATH", prefix().join("lib")));
    }
}
