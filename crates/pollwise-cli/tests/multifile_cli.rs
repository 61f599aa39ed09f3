//! Several files in one job (fio's `--filename=a:b:c`, `nrfiles`, `file_service_type`): each
//! request goes to the file fio's get_next_file picks (roundrobin: the next file each request,
//! roundrobin:N after N, sequential: each file to its end), each file with a sequential position
//! of its own. Which blocks a short run wrote shows the rotation: the files start as zeros and
//! every write fills its block with non-zero data. Verify checks blocks on every file; the
//! patterns that would move a request across files are refused with their line.

mod common;

use common::{json_of, pollwise, tempdir, usage_error};
use std::path::Path;

const BS: usize = 4096;

/// Three files of four zero blocks each in `dir`; the `--filename=` naming them.
fn zero_files(dir: &Path) -> String {
    let names: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let p = dir.join(n);
            std::fs::write(&p, vec![0u8; 4 * BS]).unwrap();
            p.display().to_string()
        })
        .collect();
    format!("--filename={}", names.join(":"))
}

/// Per block of `path`: whether it holds anything but zeros.
fn written(path: &Path) -> Vec<bool> {
    std::fs::read(path)
        .unwrap()
        .chunks(BS)
        .map(|b| b.iter().any(|x| *x != 0))
        .collect()
}

/// Writes `ios` blocks over the three files (48 KiB: 16 KiB, four blocks, each) with
/// `extra`, and returns which blocks of a, b and c were written.
fn rotation(ios: u32, extra: &[&str]) -> [Vec<bool>; 3] {
    let d = tempdir();
    let files = zero_files(d.path());
    let n = format!("--number_ios={ios}");
    let mut args = vec![
        "run",
        "--name=m",
        files.as_str(),
        "--rw=write",
        "--bs=4k",
        "--size=48k",
        "--iodepth=1",
        "--ioengine=psync",
        n.as_str(),
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    let v = json_of(&args);
    assert_eq!(
        v["jobs"][0]["write"]["total_ios"].as_u64(),
        Some(ios as u64)
    );
    ["a", "b", "c"].map(|f| written(&d.path().join(f)))
}

#[test]
fn roundrobin_puts_each_request_on_the_next_file() {
    let t = true;
    let f = false;
    // fio: a@0 b@0 c@0 a@4k b@4k.
    assert_eq!(
        rotation(5, &[]),
        [vec![t, t, f, f], vec![t, t, f, f], vec![t, f, f, f]]
    );
    assert_eq!(
        rotation(5, &["--file_service_type=roundrobin"]),
        [vec![t, t, f, f], vec![t, t, f, f], vec![t, f, f, f]]
    );
}

#[test]
fn roundrobin_n_and_sequential_switch_files_as_fio() {
    let t = true;
    let f = false;
    // roundrobin:2: a@0 a@4k b@0 b@4k c@0.
    assert_eq!(
        rotation(5, &["--file_service_type=roundrobin:2"]),
        [vec![t, t, f, f], vec![t, t, f, f], vec![t, f, f, f]]
    );
    // roundrobin:3: a@0 a@4k a@8k b@0 b@4k.
    assert_eq!(
        rotation(5, &["--file_service_type=roundrobin:3"]),
        [vec![t, t, t, f], vec![t, t, f, f], vec![f, f, f, f]]
    );
    // sequential: all of a (its 16 KiB share), then b.
    assert_eq!(
        rotation(5, &["--file_service_type=sequential"]),
        [vec![t, t, t, t], vec![t, f, f, f], vec![f, f, f, f]]
    );
}

#[test]
fn a_whole_run_covers_every_files_share_and_verifies_on_each_file() {
    let d = tempdir();
    let files = zero_files(d.path());
    for engine in ["io_uring", "libaio", "psync"] {
        let eng = format!("--ioengine={engine}");
        let args = |rw: &'static str| {
            vec![
                "run",
                "--name=v",
                files.as_str(),
                rw,
                "--bs=4k",
                "--size=36k",
                "--iodepth=4",
                eng.as_str(),
                "--verify=crc32c",
                "--output-format=json",
            ]
        };
        // 36 KiB over three files: 12 KiB (three blocks) on each; the write reads them back.
        let v = json_of(&args("--rw=write"));
        let j = &v["jobs"][0];
        assert_eq!(j["write"]["total_ios"].as_u64(), Some(9), "{engine}");
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(9), "{engine}");
        for f in ["a", "b", "c"] {
            assert_eq!(
                written(&d.path().join(f)),
                vec![true, true, true, false],
                "{engine}: file {f}"
            );
        }
        let v = json_of(&args("--rw=read"));
        assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(9));
    }
    // A corrupted block on the second file fails the verified read.
    let b = d.path().join("b");
    let mut data = std::fs::read(&b).unwrap();
    data[BS + 100] ^= 0xFF;
    std::fs::write(&b, &data).unwrap();
    let (code, _out, err) = pollwise(&[
        "run",
        "--name=v",
        files.as_str(),
        "--rw=read",
        "--bs=4k",
        "--size=36k",
        "--verify=crc32c",
        "--output-format=json",
    ]);
    assert_ne!(code, 0, "a corrupted block on file b passed: {err}");
}

#[test]
fn nrfiles_makes_fios_names_in_the_directory() {
    let d = tempdir();
    let job = d.path().join("n.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\ndirectory={}\n[n]\nrw=write\nsize=48k\nnrfiles=3\n",
            d.path().display()
        ),
    )
    .unwrap();
    let v = json_of(&["run", job.to_str().unwrap(), "--output-format=json"]);
    assert_eq!(v["jobs"][0]["write"]["total_ios"].as_u64(), Some(12));
    for i in 0..3 {
        let f = d.path().join(format!("n.0.{i}"));
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 16 << 10, "{f:?}");
    }
}

#[test]
fn what_would_move_a_request_across_files_is_refused_by_name() {
    let d = tempdir();
    let files = zero_files(d.path());
    let f = files.as_str();
    for (extra, needle) in [
        (["--rw=randwrite", "--bs=4k"], "--rw"),
        (
            ["--rw=write", "--file_service_type=random"],
            "--file_service_type=random",
        ),
        (["--rw=write", "--bsrange=4k-8k"], "--bsrange"),
        (["--rw=write", "--offset=4k"], "--offset"),
        (["--rw=write", "--nrfiles=2"], "--nrfiles=2"),
        (["--rw=write", "--fsync=4"], "--fsync"),
        (["--rw=write", "--end_fsync=1"], "--end_fsync"),
    ] {
        usage_error(
            &["run", "--name=r", f, "--size=48k", extra[0], extra[1]],
            &[needle],
        );
    }
    // The scenarios and advise take one file.
    usage_error(
        &["scenario", "shared-poller", f, "--size=48k"],
        &["shared-poller", "one file"],
    );
    // Nothing of the user's was touched by the refusals.
    for n in ["a", "b", "c"] {
        assert_eq!(written(&d.path().join(n)), vec![false; 4]);
    }
}
