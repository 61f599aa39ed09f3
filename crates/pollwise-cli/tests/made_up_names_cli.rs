//! The file names pollwise makes up itself (a job file's job without a filename:
//! `$jobname.$jobnum.$filenum`, or `--filename_format`) are never followed as symbolic links:
//! another user may have planted one in a shared directory, pointing at a file of the user's.
//! A plain file left by an earlier run is used again, as fio uses it.

mod common;

use std::path::Path;

use common::{one_line_naming, pollwise, tempdir};

/// A victim file and a link to it named `link` in `dir`.
fn plant(dir: &Path, link: &str) -> std::path::PathBuf {
    let victim = dir.join("victim");
    std::fs::write(&victim, b"the user's data").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(link)).unwrap();
    victim
}

fn refused_and_untouched(args: &[&str], victim: &Path, link: &str) {
    let (code, _out, err) = pollwise(args);
    assert_eq!(code, 2, "{args:?}: exit {code}: {err}");
    one_line_naming(&args, &err, &[link, "symbolic link", "made this name up"]);
    assert_eq!(std::fs::read(victim).unwrap(), b"the user's data");
}

#[test]
fn a_planted_link_at_a_made_up_name_is_never_followed() {
    let d = tempdir();
    let dir = d.path();
    let dir_s = dir.display().to_string();
    // The default name of a job file's first clone, and of a later clone.
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        format!("[job1]\ndirectory={dir_s}\nrw=write\nsize=256k\nnumjobs=2\n"),
    )
    .unwrap();
    for link in ["job1.0.0", "job1.1.0"] {
        let victim = plant(dir, link);
        refused_and_untouched(&["run", job.to_str().unwrap()], &victim, link);
        std::fs::remove_file(dir.join(link)).unwrap();
    }
    // A format of the user's.
    let victim = plant(dir, "mine.0");
    refused_and_untouched(
        &[
            "run",
            "--name=z",
            &format!("--directory={dir_s}"),
            "--filename_format=mine.$jobnum",
            "--rw=write",
            "--size=256k",
        ],
        &victim,
        "mine.0",
    );
    // Without links the job runs, and runs again on the files it left.
    std::fs::remove_file(dir.join("mine.0")).unwrap();
    for _ in 0..2 {
        let (code, _out, err) = pollwise(&["run", job.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(
        std::fs::metadata(dir.join("job1.1.0")).unwrap().len(),
        256 << 10
    );
}

#[test]
fn a_link_the_user_names_is_still_followed() {
    let d = tempdir();
    let data = d.path().join("data");
    std::fs::write(&data, vec![0u8; 256 << 10]).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let (code, _out, err) = pollwise(&[
        "run",
        &format!("--filename={}", link.display()),
        "--rw=write",
        "--size=256k",
    ]);
    assert_eq!(code, 0, "{err}");
}
