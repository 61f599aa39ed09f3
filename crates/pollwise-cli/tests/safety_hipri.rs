//! `--hipri` on a device without poll queues is refused for
//! writes as for reads (the kernel completes such writes by interrupt, and a report would have
//! called them polled), before any file is laid out.

mod common;

use common::{pollwise, temp_file};
use pollwise_cli::device::device_of;

#[test]
fn hipri_writes_are_refused_where_reads_are() {
    let (d, f) = temp_file("hipri.dat");
    let dev = device_of(d.path());
    for rw in ["randread", "randwrite", "write"] {
        let (code, _, err) = pollwise(&[
            "run",
            &format!("--filename={}", f.display()),
            "--size=4M",
            "--runtime=0.2",
            "--hipri",
            &format!("--rw={rw}"),
        ]);
        match &dev {
            Ok(dv) if dv.io_poll == Some(0) => {
                assert_eq!(code, 2, "{rw}: {err}");
                assert!(
                    err.contains("polled I/O (--hipri) is not supported")
                        && err.contains("run without --hipri"),
                    "{rw}: {err}"
                );
                assert!(!f.exists(), "{rw}: nothing is laid out for a refused job");
            }
            // A device with poll queues polls: the run must work.
            Ok(_) => assert_eq!(code, 0, "{rw}: {err}"),
            // No block device under the temp dir (tmpfs): O_DIRECT is refused anyway.
            Err(_) => assert_eq!(code, 2, "{rw}: {err}"),
        }
    }
}
