use super::*;
use crate::poller::{Client, ClientOptions, SharedPoller};
use crate::queue::{Queue, WaitOutcome, DROP_BOUND};
use std::time::{Duration, Instant};

fn nop_client(p: &SharedPoller, depth: usize) -> Client {
    p.client(ClientOptions {
        depth,
        files: vec![],
    })
    .unwrap()
}

fn push_nops(c: &mut Client, n: u64) {
    for i in 0..n {
        // SAFETY: a nop carries no buffer.
        unsafe { c.push(&crate::queue::Op::nop(i)) }.unwrap();
    }
    c.submit().unwrap();
}

/// Clears the injected refusals when dropped, so a failing test does not leave the
/// poller's shutdown facing a kernel that refuses for ever.
struct Refusing<'a>(&'a SharedPoller);

impl Refusing<'_> {
    fn start(p: &SharedPoller, errno: i32) -> Refusing<'_> {
        p.shared.test.refuse.store(errno, Ordering::SeqCst);
        Refusing(p)
    }
}

impl Drop for Refusing<'_> {
    fn drop(&mut self) {
        self.0.shared.test.refuse.store(0, Ordering::SeqCst);
    }
}

/// Waits until the poller has gone to sleep once, then a little more.
fn until_asleep(p: &SharedPoller) {
    let t0 = Instant::now();
    while p.counters().sleeps == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the poller never slept"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
}

/// Polls `c` until `n` completions came back (each checked to succeed once), for 5 s at most.
fn collect(c: &mut Client, n: usize) -> Vec<u64> {
    let mut got = Vec::new();
    let t0 = Instant::now();
    while got.len() < n && t0.elapsed() < Duration::from_secs(5) {
        let _ = c.wait(1, Some(Duration::from_millis(50)));
        c.poll(&mut |x| {
            assert_eq!(x.result, 0, "{x:?}");
            got.push(x.user_data);
        })
        .unwrap();
    }
    got.sort_unstable();
    got
}

/// An enter refused with EAGAIN or EBUSY submits nothing: the poller counts nothing as
/// submitted, blocks in no enter while entries wait in its ring, and once the kernel takes
/// them every request completes, once.
#[test]
fn refused_enters_are_retried_and_never_counted_as_submitted() {
    for errno in [libc::EAGAIN, libc::EBUSY] {
        let p = SharedPoller::new(PollerConfig {
            // Sleep at the first idle round: the sleep path runs all through the refusals.
            wait: LoopWait::Interrupt,
            ..Default::default()
        })
        .unwrap();
        let mut c = nop_client(&p, 8);
        let t = &p.shared.test;
        until_asleep(&p);
        let refusing = Refusing::start(&p, errno);
        let blocking_before = t.blocking_enters.load(Ordering::SeqCst);
        push_nops(&mut c, 8);
        // Let the poller take them and be refused for a while.
        let t0 = Instant::now();
        while p.counters().refused < 20 {
            assert!(t0.elapsed() < Duration::from_secs(5), "no refusal seen");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(p.in_flight(), 8, "taken into the poller's ring");
        assert_eq!(
            p.counters().submitted,
            0,
            "refused entries counted as submitted"
        );
        assert_eq!(c.ready(), 0);
        assert_eq!(
            t.blocking_enters.load(Ordering::SeqCst),
            blocking_before,
            "a blocking enter while the kernel refused the ring's entries"
        );
        drop(refusing);
        assert_eq!(collect(&mut c, 8), (0..8).collect::<Vec<_>>());
        let k = p.counters();
        assert_eq!(k.submitted, 8);
        assert!(k.refused >= 20);
        assert_eq!(t.blind_blocking_enters.load(Ordering::SeqCst), 0);
        drop(c);
        p.shutdown().unwrap();
    }
}

/// A ring of two entries filled by a request the kernel refuses: the poller never sleeps
/// in the kernel with the ring full and nothing in flight there; the request completes as
/// soon as the kernel takes it, and the doorbell still wakes a sleeping poller afterwards.
#[test]
fn full_ring_with_nothing_in_the_kernel_never_sleeps() {
    let p = SharedPoller::new(PollerConfig {
        depth: 1,
        wait: LoopWait::Interrupt,
        ..Default::default()
    })
    .unwrap();
    let mut c = nop_client(&p, 4);
    let t = &p.shared.test;
    until_asleep(&p);
    let refusing = Refusing::start(&p, libc::EAGAIN);
    let blocking_before = t.blocking_enters.load(Ordering::SeqCst);
    push_nops(&mut c, 4);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        t.blocking_enters.load(Ordering::SeqCst),
        blocking_before,
        "blocked in the kernel with refused entries in the ring"
    );
    assert_eq!(p.counters().submitted, 0);
    drop(refusing);
    assert_eq!(collect(&mut c, 4), vec![0, 1, 2, 3]);
    // Asleep again (with nothing to do, at once), then woken by the doorbell.
    std::thread::sleep(Duration::from_millis(20));
    push_nops(&mut c, 1);
    assert_eq!(collect(&mut c, 1), vec![0]);
    assert_eq!(t.blind_blocking_enters.load(Ordering::SeqCst), 0);
}

/// A shutdown facing a kernel that refuses every wait stops waiting after a bounded run of
/// refusals and says how many requests it left in the kernel, in its report and in the
/// process's leak counters, instead of printing and aborting: the library never prints,
/// and the caller decides.
#[test]
fn shutdown_against_a_refusing_kernel_reports_the_requests_it_left() {
    let p = SharedPoller::new(PollerConfig::default()).unwrap();
    let mut c = nop_client(&p, 8);
    // Refusing for ever (the poller is shut down under it): no guard to clear it.
    p.shared.test.refuse.store(libc::EAGAIN, Ordering::SeqCst);
    push_nops(&mut c, 3);
    let t0 = Instant::now();
    while p.in_flight() < 3 || p.counters().refused == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "never taken and refused"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let leaks_before = crate::leaks::leaks().unanswered;
    let r = p.shutdown().unwrap();
    assert_eq!(r.unanswered, 3, "{r:?}");
    assert_eq!(r.completed, 0, "{r:?}");
    assert!(crate::leaks::leaks().unanswered >= leaks_before + 3);
    // The client was handed back its ends (so its drop does not wait out DROP_BOUND), and
    // got no completion for the requests the kernel may still hold.
    let mut got = 0;
    let _ = c.poll(&mut |_| got += 1);
    assert_eq!(got, 0);
    let t0 = Instant::now();
    drop(c);
    assert!(
        t0.elapsed() < DROP_BOUND,
        "the client's drop waited for a retired client"
    );
}

/// A client's drop waits for the poller for DROP_BOUND at most: with the poller stuck, it
/// returns after the bound and says so in the counters; the poller retires it later.
#[test]
fn client_drop_is_bounded_when_the_poller_is_stuck() {
    let p = SharedPoller::new(PollerConfig::default()).unwrap();
    let mut c = nop_client(&p, 4);
    push_nops(&mut c, 1);
    assert_eq!(collect(&mut c, 1), vec![0]);
    p.shared.test.stall.store(true, Ordering::SeqCst);
    push_nops(&mut c, 2);
    let t0 = Instant::now();
    drop(c);
    let took = t0.elapsed();
    assert!(took >= DROP_BOUND, "{took:?}");
    assert!(took < DROP_BOUND * 5, "{took:?}");
    assert_eq!(p.counters().abandoned, 1);
    p.shared.test.stall.store(false, Ordering::SeqCst);
    let t0 = Instant::now();
    while p.clients() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "never retired");
        std::thread::sleep(Duration::from_millis(1));
    }
    let r = p.shutdown().unwrap();
    assert_eq!(r.counters.abandoned, 1);
    assert_eq!(r.counters.discarded, 2);
}

/// A timed client learns when each request was queued, submitted and reaped, in that order.
#[test]
fn timed_client_sees_queue_submit_and_reap_times() {
    let p = SharedPoller::new(PollerConfig::default()).unwrap();
    let mut c = nop_client(&p, 8);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    c.set_timing(Some(Box::new(move |t| s2.lock().unwrap().push(*t))));
    push_nops(&mut c, 8);
    assert_eq!(collect(&mut c, 8).len(), 8);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 8);
    for t in seen.iter() {
        let s = t.submitted_ns.expect("submitted");
        let r = t.reaped_ns.expect("reaped");
        assert!(t.queued_ns <= s && s <= r, "{t:?}");
        assert_eq!(t.submission_delay_ns(), Some(s - t.queued_ns));
    }
    assert_eq!(c.wait(1, Some(Duration::ZERO)).unwrap(), WaitOutcome::Ready);
}

/// A request that stays in the kernel (a read on an empty pipe) costs a spinning poller no
/// enter per round: it enters when the kernel says it has completion work, or once in
/// QUIET_ROUNDS rounds. When the pipe gets data the completion still comes back, and the client
/// asleep in `wait` for it is woken.
#[test]
fn a_spinning_poller_enters_for_completion_work_only_and_wakes_its_sleeping_client() {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // Declared before the client, so dropped after it: the client's drop waits until the
    // kernel is done with the read.
    let mut buf = [0u8; 8];
    let p = SharedPoller::new(PollerConfig {
        idle: Duration::from_secs(10),
        ..Default::default()
    })
    .unwrap();
    let mut c = p
        .client(ClientOptions {
            depth: 1,
            files: vec![fds[0]],
        })
        .unwrap();
    let op = crate::queue::Op::read(0, buf.as_mut_ptr(), 8, 0, 7);
    // SAFETY: buf outlives the request: the client is dropped (and waits for the poller to
    // retire it) before buf.
    unsafe { c.push(&op) }.unwrap();
    c.submit().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let before = p.counters();
    std::thread::sleep(Duration::from_millis(100));
    let after = p.counters();
    let (rounds, enters) = (after.rounds - before.rounds, after.enters - before.enters);
    assert!(rounds > 0, "the poller did not spin");
    if p.shared.test.flagged.load(Ordering::SeqCst) {
        assert!(
            enters * 16 <= rounds,
            "{enters} enters in {rounds} rounds with nothing to do"
        );
    }
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: writes 8 bytes from a static string to the pipe's write end, which is open.
        let n = unsafe { libc::write(fds[1], b"abcdefgh".as_ptr().cast(), 8) };
        assert_eq!(n, 8);
    });
    assert_eq!(
        c.wait(1, Some(Duration::from_secs(5))).unwrap(),
        WaitOutcome::Ready
    );
    let mut got = Vec::new();
    c.poll(&mut |x| got.push((x.user_data, x.result))).unwrap();
    assert_eq!(got, [(7, 8)]);
    writer.join().unwrap();
    drop(c);
    assert_eq!(&buf, b"abcdefgh");
    for fd in fds {
        // SAFETY: closes the two descriptors pipe gave us, once.
        unsafe { libc::close(fd) };
    }
}
