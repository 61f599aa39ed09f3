//! Kernel shared SQPOLL (`--sqthread_poll --sqthread_share`): rings attached with ATTACH_WQ to
//! the first ring share its one SQPOLL thread, which shows as one `iou-sqp-<pid>` thread of the
//! process; rings set up apart get one each. This file holds a single test, so no other test in
//! the process makes SQPOLL threads while it counts them.

use std::fs::OpenOptions;
use std::io::Write;

use pollwise::queue::{Op, OpKind, Queue};
use pollwise::request::AlignedBuf;
use pollwise_cli::job::{run_job, uring_for, JobSpec};

fn sqpoll_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with("iou-sqp"))
        .count()
}

fn wait_for_threads(n: usize) -> usize {
    // The kernel starts and reaps its threads asynchronously: give it up to 5 s.
    for _ in 0..500 {
        if sqpoll_threads() == n {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    sqpoll_threads()
}

#[test]
fn shared_rings_use_one_sqpoll_thread() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let path = dir.path().join("share.dat");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&vec![7u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    let file = OpenOptions::new().read(true).open(&path).unwrap();
    let spec = JobSpec {
        filename: path.clone(),
        size: 1 << 20,
        sqthread_poll: true,
        sqthread_share: true,
        iodepth: 4,
        direct: false,
        ..Default::default()
    };
    let base = wait_for_threads(0);
    assert_eq!(base, 0);

    // Shared: the second and third ring attach to the first.
    let a = uring_for(&spec, &file, None).unwrap();
    let mut b = uring_for(&spec, &file, Some(a.ring_fd())).unwrap();
    let c = uring_for(&spec, &file, Some(a.ring_fd())).unwrap();
    assert_eq!(
        wait_for_threads(1),
        1,
        "three attached rings, one SQPOLL thread"
    );
    // An attached ring really is served by that thread: a read completes with no enter.
    let mut buf = AlignedBuf::new(4096, 4096);
    let op = Op {
        kind: OpKind::Read,
        file: 0,
        buf: buf.as_mut_ptr(),
        len: 4096,
        offset: 4096,
        buf_index: None,
        user_data: 1,
        ioprio: 0,
    };
    // SAFETY: buf outlives the read; we wait for its completion below.
    unsafe { b.push(&op) }.unwrap();
    b.submit().unwrap();
    let mut got = None;
    while got.is_none() {
        b.poll(&mut |c| got = Some(c)).unwrap();
    }
    assert_eq!(got.unwrap().result, 4096);
    assert!(buf.as_slice().iter().all(|&x| x == 7));
    drop((a, b, c));
    assert_eq!(wait_for_threads(0), 0);

    // Apart: one thread each.
    let d = uring_for(&spec, &file, None).unwrap();
    let e = uring_for(&spec, &file, None).unwrap();
    assert_eq!(
        wait_for_threads(2),
        2,
        "two rings set up apart, two SQPOLL threads"
    );
    drop((d, e));
    assert_eq!(wait_for_threads(0), 0);

    // run_job with --numjobs=3 --sqthread_poll --sqthread_share runs on one shared thread.
    // (Page-cache reads through a shared SQPOLL thread used to hang the engine now and then:
    // completions were reaped before the kernel moved the SQ head, the push found the ring
    // full and the slot leaked; a few short runs cover that.)
    for _ in 0..5 {
        let job = JobSpec {
            numjobs: 3,
            runtime: std::time::Duration::from_millis(50),
            time_based: true,
            ..spec.clone()
        };
        assert!(run_job(&job).unwrap().read.ios > 0);
    }
    // Threads of the runs above go away asynchronously: count from zero.
    assert_eq!(wait_for_threads(0), 0);
    let job = JobSpec {
        numjobs: 3,
        runtime: std::time::Duration::from_millis(300),
        time_based: true,
        ..spec.clone()
    };
    let watcher = std::thread::spawn(move || {
        let mut most = 0;
        for _ in 0..100 {
            most = most.max(sqpoll_threads());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        most
    });
    let stats = run_job(&job).unwrap();
    assert!(stats.read.ios > 0);
    assert_eq!(
        watcher.join().unwrap(),
        1,
        "the job's three rings shared one SQPOLL thread"
    );
}
