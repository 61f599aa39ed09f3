//! A second SIGINT 10 ms after the first left an empty temp directory
//! about once in 20. The signal path removes the registered directories and exits; the exit
//! could fall between a directory's creation and its registration, or between its owner's
//! unregistering it and removing it. Here a thread makes, fills and drops pollwise's private
//! directories as fast as it can while this one plays the signal path again and again: with the
//! registry locked as the exit would leave it, nothing may be on disk.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pollwise_cli::{cleanup, target};

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn an_exit_on_a_signal_never_leaves_a_private_directory_behind() {
    let base = tempfile::tempdir().unwrap();
    let b = base.path().to_path_buf();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let maker = std::thread::spawn(move || {
        for _ in 0..300 {
            // The signal path may remove it at any point: what follows may fail.
            if let Ok(g) = target::create_private(&b, "t") {
                let _ = std::fs::write(g.file(), [1u8; 16 << 10]);
                drop(g);
            }
        }
        d.store(true, Ordering::SeqCst);
    });
    let mut checks = 0u64;
    while !done.load(Ordering::SeqCst) {
        let mut reg = cleanup::lock();
        reg.remove_all();
        // An exit here leaves exactly what is on disk now.
        let left = entries(base.path());
        assert!(
            left.is_empty(),
            "after {checks} checks an exit would leave {left:?}"
        );
        drop(reg);
        checks += 1;
    }
    maker.join().unwrap();
    assert!(checks > 10, "{checks}");
}
