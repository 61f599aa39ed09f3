//! bench-fio (PyPI fio-plot) drives pollwise installed as `fio` on its PATH and fio-plot draws
//! charts from what it wrote: `bench/fio_plot_smoke.sh`, the short form. It installs fio-plot
//! the first time (python3 with venv, and the network): without them it fails, it never skips.

use std::process::Command;

#[test]
fn bench_fio_drives_pollwise_and_fio_plot_draws_it() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("bash")
        .arg("bench/fio_plot_smoke.sh")
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .current_dir(root)
        .output()
        .expect("run bash");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "bench/fio_plot_smoke.sh failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("fio_plot_smoke: ok"), "{stdout}");
    assert!(
        stdout.contains("depths.png") && stdout.contains("logs.png"),
        "{stdout}"
    );
}
