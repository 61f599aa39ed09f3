//! No safe API reaches a buffer the kernel holds or finishes a request from another table: a
//! handle from another slab is refused by every call that takes one, and leaves both slabs as
//! they were. (Replacing a queue's slab or device does not compile: see `RequestsMut`'s doc
//! tests; completions from another queue's records: `queue::tests::soundness`.)

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use pollwise::clock;
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{OpKind, RequestOp, Tracked};
use pollwise::request::{ReqMeta, Slab, State};

fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array, which we then own.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both fds are fresh and ours alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (r.into(), w.into())
}

const READ: RequestOp = RequestOp {
    kind: OpKind::Read,
    file: 0,
    offset: 0,
    len: 64,
    fixed: false,
};

#[test]
fn a_handle_from_another_slab_is_refused_by_every_call_that_takes_one() {
    let (r, mut w) = pipe();
    let ring = || UringQueue::new(&UringOptions::default(), &[r.as_raw_fd()], false).unwrap();
    let slab = || Slab::new(2, 64, 64).unwrap();
    let mut qa = Tracked::with_requests(ring(), clock::monotonic(), slab());
    let mut qb = Tracked::with_requests(ring(), clock::monotonic(), slab());
    let a = qa
        .requests_mut()
        .unwrap()
        .alloc(ReqMeta::default())
        .unwrap();
    let b = qb
        .requests_mut()
        .unwrap()
        .alloc(ReqMeta::default())
        .unwrap();
    assert_eq!((a.index(), a.generation()), (b.index(), b.generation()));
    qb.push_request(b, READ).unwrap();
    qb.submit().unwrap();

    // `a` names slot 0, generation 0, as `b` does; but it is qa's.
    let e = qb.push_request(a, READ).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("another table"), "{e}");
    {
        let mut reqs = qb.requests_mut().unwrap();
        assert!(reqs.buf_mut(a).is_err());
        assert!(reqs.buf(a).is_err());
        assert!(reqs.meta_mut(a).is_err());
        assert!(reqs.restart(a).is_err());
        assert!(reqs.cancel(a).is_err());
        assert!(reqs.free(a).is_err());
        assert!(reqs.complete(a, |_, _| ()).is_err());
        assert!(!reqs.is_live(a));
    }
    assert_eq!(qb.in_flight(), 1);
    assert_eq!(qb.requests().unwrap().state(b), Ok(State::InFlight));
    assert_eq!(qa.requests().unwrap().state(a), Ok(State::Prepared));
    assert!(qa.requests_mut().unwrap().buf_mut(b).is_err());

    // b's read is untouched by all that: it ends when data comes.
    std::io::Write::write_all(&mut w, b"b's").unwrap();
    let t = Instant::now();
    let mut got = Vec::new();
    while got.is_empty() {
        assert!(t.elapsed() < Duration::from_secs(5));
        let _ = qb.wait(1, Some(Duration::from_millis(10)));
        qb.poll(&mut |c| got.push(c)).unwrap();
    }
    assert_eq!((got[0].user_data, got[0].result), (b.user_data(), 3));
    assert_eq!(&qb.requests().unwrap().buf(b).unwrap()[..3], b"b's");
}
