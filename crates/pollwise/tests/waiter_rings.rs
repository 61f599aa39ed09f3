//! The Waiter on a caller's own io-uring rings of every kind this kernel offers: reads checked
//! block by block at queue depth 4 with a foreign NOP on the same ring, under every mode; the
//! ring kinds' own rules (IOPOLL without a polling device, CQ overflow, multishot, registered
//! ring fds); timeouts, and peeks that never block.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::request::{Dir, ReqClass};
use pollwise::ring::{RawRing, Ring, RingParts, UringView};
use pollwise::waiter::Waiter;

const BS: usize = 4096;
const BLOCKS: u64 = 64;
const NOP: u64 = u64::MAX - 1;
/// No wait in these tests may take this long: a wait that does has hung.
const BOUND: Duration = Duration::from_secs(10);

#[repr(align(4096))]
struct Block([u8; BS]);

/// A temp file whose block `b` is filled with byte `b`, opened with O_DIRECT.
fn patterned() -> (tempfile::NamedTempFile, File) {
    let mut tmp = tempfile::NamedTempFile::new().unwrap();
    for b in 0..BLOCKS {
        tmp.write_all(&[b as u8; BS]).unwrap();
    }
    tmp.as_file().sync_all().unwrap();
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(tmp.path())
        .unwrap();
    (tmp, f)
}

fn push_read(ring: &mut IoUring, file: &File, buf: &mut Block, slot: u64, n: u64) {
    let blk = n * 13 % BLOCKS;
    let sqe = opcode::Read::new(types::Fd(file.as_raw_fd()), buf.0.as_mut_ptr(), BS as u32)
        .offset(blk * BS as u64)
        .build()
        .user_data(blk << 8 | slot);
    // SAFETY: the buffer is this slot's, boxed, and untouched until its CQE is reaped.
    unsafe { ring.submission().push(&sqe) }.unwrap();
}

/// `reads` checked reads at QD4 and one foreign NOP on `ring`, waited on by a Waiter in
/// `mode` through `view`; the Waiter's stats. `note` notes each read's user_data and class.
fn run_reads<R: Ring>(
    ring: &mut IoUring,
    view: &R,
    mode: Mode,
    reads: u64,
    note: bool,
) -> pollwise::waiter::WaiterStats {
    let (_tmp, file) = patterned();
    let mut w = Waiter::new(&PolicyConfig::new(mode));
    let mut bufs: Vec<Box<Block>> = (0..4).map(|_| Box::new(Block([0; BS]))).collect();
    // SAFETY: a NOP names no memory.
    unsafe {
        ring.submission()
            .push(&opcode::Nop::new().build().user_data(NOP))
    }
    .unwrap();
    if note {
        w.note_submit(
            NOP,
            ReqClass {
                dir: Dir::Read,
                len: 0,
            },
        );
    }
    let (mut next, mut done, mut nops) = (0u64, 0u64, 0u64);
    let mut issue = |ring: &mut IoUring, w: &mut Waiter, buf: &mut Block, slot: u64| {
        if note {
            let blk = next * 13 % BLOCKS;
            let class = ReqClass {
                dir: Dir::Read,
                len: BS as u32,
            };
            w.note_submit(blk << 8 | slot, class);
        }
        push_read(ring, &file, buf, slot, next);
        next += 1;
    };
    for (slot, buf) in bufs.iter_mut().enumerate() {
        issue(ring, &mut w, buf, slot as u64);
    }
    let t0 = Instant::now();
    while done < reads {
        let ready = w
            .submit_and_wait_timeout(view, 1, Some(BOUND))
            .unwrap_or_else(|e| panic!("{mode:?}: the wait failed after {done} reads: {e}"));
        assert!(ready >= 1);
        for cqe in ring.completion().collect::<Vec<_>>() {
            if cqe.user_data() == NOP {
                assert_eq!(cqe.result(), 0);
                nops += 1;
                continue;
            }
            let (blk, slot) = (cqe.user_data() >> 8, cqe.user_data() & 0xff);
            let buf = &mut bufs[slot as usize];
            assert_eq!(cqe.result(), BS as i32, "{mode:?}: read of block {blk}");
            assert!(
                buf.0.iter().all(|&b| b == blk as u8),
                "{mode:?}: block {blk} read wrong data"
            );
            done += 1;
            if done + 4 <= reads {
                issue(ring, &mut w, buf, slot);
            }
        }
        assert!(t0.elapsed() < BOUND * 3, "{mode:?}: too slow, hung?");
    }
    assert_eq!(nops, 1, "{mode:?}: the foreign NOP completed once");
    // A peek catches up with the CQEs reaped after the last wait.
    assert_eq!(w.wait(view, 0).unwrap(), 0);
    let s = w.stats();
    assert_eq!(s.cqes, reads + 1, "{mode:?}: every CQE seen once: {s:?}");
    assert_eq!(s.submitted, reads + 1, "{mode:?}: {s:?}");
    assert!(s.waits > 0);
    // Each mode waited its own way.
    let p = s.policy;
    match mode {
        // Poll blocks only where an SQPOLL thread waited for its CPU (a stall).
        Mode::Poll => assert!(
            p.wait.polls > 0 && p.wait.blocks == p.wait.stall_blocks,
            "{p:?}"
        ),
        Mode::Interrupt => assert!(p.wait.blocks > 0 && p.wait.sleeps == 0, "{p:?}"),
        Mode::Hybrid | Mode::Adaptive => assert!(p.wait.polls > 0, "{p:?}"),
        Mode::Auto => assert!(p.wait.polls + p.wait.blocks > 0, "{p:?}"),
        // Both sleep before they poll, DPAS may go to interrupts by the load.
        Mode::KHybrid => assert!(p.wait.polls > 0, "{p:?}"),
        Mode::Dpas => assert!(p.wait.polls + p.wait.blocks > 0, "{p:?}"),
    }
    s
}

fn every_mode(make: impl Fn() -> IoUring, what: &str) {
    for &mode in Mode::ALL {
        let mut ring = make();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let s = run_reads(&mut ring, &view, mode, 120, mode == Mode::Hybrid);
        assert_eq!(s.foreign_cqes, 0, "{what} {mode:?}: {s:?}");
    }
}

/// An 8-entry ring whose task work runs only when its one issuer waits.
fn defer_taskrun_ring() -> IoUring {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(8)
        .unwrap()
}

/// An 8-entry ring whose task work waits for the task's next transition, flagged in the SQ.
fn coop_taskrun_ring() -> IoUring {
    IoUring::builder()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .build(8)
        .unwrap()
}

#[test]
fn plain_ring_every_mode() {
    every_mode(|| IoUring::new(8).unwrap(), "plain");
}

#[test]
fn defer_taskrun_ring_every_mode() {
    every_mode(defer_taskrun_ring, "DEFER_TASKRUN");
}

#[test]
fn coop_taskrun_ring_every_mode() {
    every_mode(coop_taskrun_ring, "COOP_TASKRUN");
}

#[test]
fn sqpoll_ring_every_mode() {
    // A short idle time, so the SQPOLL thread sleeps between batches and needs waking.
    every_mode(
        || IoUring::builder().setup_sqpoll(1).build(8).unwrap(),
        "SQPOLL",
    );
}

/// No device here has poll queues: an IOPOLL read is refused in its CQE (EOPNOTSUPP), and the
/// Waiter hands it back in every mode (polling in the kernel, never sleeping on an interrupt
/// that does not exist) instead of hanging.
#[test]
fn iopoll_ring_without_a_polling_device_answers_every_mode() {
    let (_tmp, file) = patterned();
    for &mode in Mode::ALL {
        let mut ring: IoUring = IoUring::builder().setup_iopoll().build(4).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        assert!(view.raw().kind().iopoll());
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let mut buf = Box::new(Block([0; BS]));
        push_read(&mut ring, &file, &mut buf, 0, 0);
        let t0 = Instant::now();
        let ready = w
            .submit_and_wait_timeout(&view, 1, Some(BOUND))
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert!(t0.elapsed() < BOUND);
        assert_eq!(ready, 1);
        let cqe = ring.completion().next().unwrap();
        assert_eq!(cqe.result(), -libc::EOPNOTSUPP, "{mode:?}");
        assert_eq!(w.stats().submitted, 1);
        // Nothing in flight: the wait polls in the kernel until its limit, then ETIME.
        let t1 = Instant::now();
        let e = w
            .wait_timeout(&view, 1, Some(Duration::from_millis(20)))
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ETIME), "{mode:?}");
        assert!(t1.elapsed() >= Duration::from_millis(20) && t1.elapsed() < BOUND);
    }
}

/// A request that will not complete for 5 s: every mode's wait ends on its own timeout with
/// ETIME, soon; so does a wait with nothing in flight.
#[test]
fn a_timeout_ends_every_mode_with_etime() {
    let ts = types::Timespec::new().sec(5);
    for &mode in Mode::ALL {
        let mut ring = IoUring::new(4).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let t0 = Instant::now();
        let e = w
            .wait_timeout(&view, 1, Some(Duration::from_millis(20)))
            .unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(libc::ETIME),
            "{mode:?}: nothing in flight"
        );
        let sqe = opcode::Timeout::new(&ts).build().user_data(7);
        // SAFETY: the timespec outlives the request (it is read at submission).
        unsafe { ring.submission().push(&sqe) }.unwrap();
        let e = w
            .submit_and_wait_timeout(&view, 1, Some(Duration::from_millis(30)))
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ETIME), "{mode:?}: {e}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{mode:?}");
        let s = w.stats();
        assert_eq!((s.timeouts, s.submitted), (2, 1), "{mode:?}: {s:?}");
    }
}

/// A peek (wait for 0) never blocks, on a DEFER_TASKRUN ring with a request in flight, in any
/// mode.
#[test]
fn a_peek_never_blocks() {
    let ts = types::Timespec::new().sec(5);
    for &mode in Mode::ALL {
        let mut ring: IoUring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(4)
            .unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let sqe = opcode::Timeout::new(&ts).build().user_data(7);
        // SAFETY: the timespec outlives the request.
        unsafe { ring.submission().push(&sqe) }.unwrap();
        let t0 = Instant::now();
        assert_eq!(w.submit_and_wait(&view, 0).unwrap(), 0);
        assert_eq!(w.wait(&view, 0).unwrap(), 0);
        assert!(t0.elapsed() < Duration::from_secs(1), "{mode:?}");
        assert_eq!(w.stats().peeks, 2);
        // The nop that follows is seen by a peek (a non-blocking enter on this ring).
        // SAFETY: a NOP names no memory.
        unsafe {
            ring.submission()
                .push(&opcode::Nop::new().build().user_data(8))
        }
        .unwrap();
        w.submit_and_wait(&view, 0).unwrap();
        let t1 = Instant::now();
        while w.wait(&view, 0).unwrap() == 0 {
            assert!(t1.elapsed() < BOUND);
        }
        assert_eq!(ring.completion().next().unwrap().user_data(), 8);
    }
}

/// A multishot timeout posts CQEs with F_MORE before its last: they end no request, and the
/// request is in flight until its last CQE.
#[test]
fn multishot_cqes_with_more_do_not_end_the_request() {
    let ts = types::Timespec::new().nsec(2_000_000);
    for &mode in &[Mode::Poll, Mode::Interrupt, Mode::Auto] {
        let mut ring = IoUring::new(4).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let sqe = opcode::Timeout::new(&ts)
            .count(3)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(9);
        // SAFETY: the timespec outlives the request.
        unsafe { ring.submission().push(&sqe) }.unwrap();
        let mut flags = Vec::new();
        while flags.len() < 3 {
            w.submit_and_wait_timeout(&view, 1, Some(BOUND)).unwrap();
            for c in ring.completion() {
                assert_eq!(c.user_data(), 9);
                flags.push(io_uring::cqueue::more(c.flags()));
            }
        }
        assert_eq!(flags, [true, true, false], "{mode:?}");
        let s = w.stats();
        assert_eq!(
            (s.cqes, s.more_cqes, s.foreign_cqes),
            (3, 2, 0),
            "{mode:?}: {s:?}"
        );
        // Nothing is believed in flight now: a further wait blocks in the kernel, to its limit.
        let e = w
            .wait_timeout(&view, 1, Some(Duration::from_millis(10)))
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ETIME));
        assert!(w.stats().untracked >= 1);
    }
}

/// CQEs that overflowed the CQ wait in the kernel: a spinning wait flushes them (a GETEVENTS
/// enter when the ring says IORING_SQ_CQ_OVERFLOW) instead of spinning on an empty CQ.
#[test]
fn overflowed_cqes_are_flushed_before_spinning() {
    for &mode in &[Mode::Poll, Mode::Hybrid, Mode::Interrupt] {
        let mut ring: IoUring = IoUring::builder().setup_cqsize(4).build(4).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        // The Waiter follows the ring from here: the NOPs below are requests it knows of, so
        // its policy (not a plain kernel wait) waits for them.
        w.wait(&view, 0).unwrap();
        for round in 0..2u64 {
            for i in 0..4 {
                let nop = opcode::Nop::new().build().user_data(round * 4 + i);
                // SAFETY: a NOP names no memory.
                unsafe { ring.submission().push(&nop) }.unwrap();
            }
            ring.submit().unwrap();
        }
        let mut got = Vec::new();
        while got.len() < 8 {
            w.wait_timeout(&view, 1, Some(Duration::from_secs(2)))
                .unwrap_or_else(|e| panic!("{mode:?}: after {} CQEs: {e}", got.len()));
            got.extend(ring.completion().map(|c| c.user_data()));
        }
        got.sort();
        assert_eq!(got, (0..8).collect::<Vec<u64>>(), "{mode:?}");
        assert_eq!(w.stats().untracked, 0, "{mode:?}: the policy waited");
    }
}

/// `IORING_REGISTER_RING_FDS` (Linux 5.18), as liburing's `io_uring_register_ring_fd` does:
/// registers `fd` in this thread's table and returns its index.
fn register_ring_fd(fd: i32) -> io::Result<u32> {
    #[repr(C)]
    struct RsrcUpdate {
        offset: u32,
        resv: u32,
        data: u64,
    }
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    // SAFETY: IORING_REGISTER_RING_FDS (20) reads and writes one io_uring_rsrc_update, `up`,
    // which lives across the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            20,
            &mut up as *mut RsrcUpdate,
            1,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(up.offset)
}

/// A ring entered by its registered index (liburing's `io_uring_register_ring_fd`) is waited
/// on through that index.
#[test]
fn a_registered_ring_fd_is_entered_by_index() {
    for &mode in &[Mode::Interrupt, Mode::Poll, Mode::Hybrid] {
        let mut ring = IoUring::new(8).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let index = register_ring_fd(ring.as_raw_fd()).unwrap();
        let parts = RingParts {
            enter_fd: index as i32,
            registered: true,
            ..*view.raw().parts()
        };
        // SAFETY: the parts are the view's, whose mapping outlives `raw` (dropped first).
        let raw = unsafe { RawRing::from_parts(parts) }.unwrap();
        run_reads(&mut ring, &raw, mode, 40, false);
    }
}

/// The handlers of the signal tests: each counts the delivery for the Waiter's spins, as
/// `pollwise::waiter::note_signal` asks.
extern "C" fn on_signal(_: libc::c_int) {
    pollwise::waiter::note_signal();
}

/// Installs `on_signal` for `sig`, with `flags` (SA_RESTART or not).
fn handle(sig: libc::c_int, flags: libc::c_int) {
    // SAFETY: a zeroed sigaction is valid; the handler only counts (async-signal-safe), and the
    // signals given are used by no other test of this binary.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

/// A Waiter in `mode` waits for `wait_nr` CQEs of a 5 s timeout request (and a NOP, when
/// `nop`), with a 4 s limit; `sig` is sent to its thread 200 ms in. What the wait returned, how
/// long it took, and the Waiter's count of interrupted waits.
fn signalled_wait(
    mode: Mode,
    sig: libc::c_int,
    nop: bool,
    wait_nr: u32,
) -> (Result<u32, io::ErrorKind>, Duration, u64) {
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let ts = types::Timespec::new().sec(5);
        let mut ring = IoUring::new(4).unwrap();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let sqe = opcode::Timeout::new(&ts).build().user_data(7);
        // SAFETY: the timespec outlives the request (the ring is dropped first, in this thread).
        unsafe { ring.submission().push(&sqe) }.unwrap();
        if nop {
            // SAFETY: a NOP names no memory.
            unsafe {
                ring.submission()
                    .push(&opcode::Nop::new().build().user_data(8))
            }
            .unwrap();
        }
        // SAFETY: pthread_self has no preconditions.
        tx.send(unsafe { libc::pthread_self() } as usize).unwrap();
        let t0 = Instant::now();
        let r = w.submit_and_wait_timeout(&view, wait_nr, Some(Duration::from_secs(4)));
        let took = t0.elapsed();
        drop(ring);
        (r.map_err(|e| e.kind()), took, w.stats().interrupted)
    });
    let tid = rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: tid is the live waiting thread's pthread_t (it is joined below).
    let sent = unsafe { libc::pthread_kill(tid as libc::pthread_t, sig) };
    assert_eq!(sent, 0);
    waiter.join().unwrap()
}

/// A signal delivered to the waiting thread ends the wait in every mode, spins included, with
/// EINTR, as liburing's `io_uring_enter` does with or without SA_RESTART (a handler ran; the
/// caller decides whether to wait again).
#[test]
fn a_signal_ends_a_wait_with_eintr_in_every_mode() {
    handle(libc::SIGUSR1, 0);
    handle(libc::SIGUSR2, libc::SA_RESTART);
    for &mode in Mode::ALL {
        for sig in [libc::SIGUSR1, libc::SIGUSR2] {
            let (r, took, interrupted) = signalled_wait(mode, sig, false, 1);
            assert_eq!(r, Err(io::ErrorKind::Interrupted), "{mode:?} {sig}");
            assert!(took < Duration::from_secs(3), "{mode:?} {sig}: {took:?}");
            assert_eq!(interrupted, 1, "{mode:?} {sig}");
        }
    }
}

/// A signal while waiting for 2 CQEs with 1 already posted ends the wait with that one, as the
/// kernel's enter does (it returns 0, not EINTR, when the CQ holds CQEs).
#[test]
fn a_signal_ends_a_wait_for_two_with_the_one_ready() {
    handle(libc::SIGURG, 0);
    for &mode in Mode::ALL {
        let (r, took, _) = signalled_wait(mode, libc::SIGURG, true, 2);
        assert_eq!(r, Ok(1), "{mode:?}");
        assert!(took < Duration::from_secs(3), "{mode:?}: {took:?}");
    }
}

/// The safe way to wait on an io-uring ring: a UringWaiter owns it, so nothing reaps under its
/// waits. Moved to a thread of its own in every mode, it hands back every NOP once through the
/// ring's own completion queue, counts every submission and no CQE twice or as foreign, and
/// gives the ring back.
#[test]
fn a_uring_waiter_owns_its_ring_and_hands_every_cqe_back_once() {
    use pollwise::waiter::UringWaiter;
    const NOPS: u64 = 200;
    for &mode in Mode::ALL {
        let w = UringWaiter::new(IoUring::new(8).unwrap(), mode).unwrap();
        let w = std::thread::spawn(move || {
            let mut w = w;
            let mut seen = vec![0u32; NOPS as usize];
            for i in 0..NOPS {
                let nop = opcode::Nop::new().build().user_data(i);
                // SAFETY: a NOP names no memory.
                unsafe { w.submission().push(&nop) }.unwrap();
                let ready = w.submit_and_wait_timeout(1, Some(BOUND)).unwrap();
                assert!(ready >= 1, "{mode:?}");
                for cqe in w.completion() {
                    seen[cqe.user_data() as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{mode:?}: {seen:?}");
            w
        })
        .join()
        .unwrap();
        // A peek catches up with the CQEs reaped after the last wait.
        let mut w = w;
        assert_eq!(w.wait(0).unwrap(), 0);
        let s = w.stats();
        assert_eq!(s.cqes, NOPS, "{mode:?}: every CQE seen once: {s:?}");
        assert_eq!(s.foreign_cqes, 0, "{mode:?}: {s:?}");
        assert_eq!(s.submitted, NOPS, "{mode:?}: {s:?}");
        let mut ring = w.into_ring();
        assert!(ring.completion().is_empty());
    }
}

/// `NOPS` NOPs on a ring `make` makes, one per `submit_and_wait(1)`, reaped after each, in every
/// mode: a NOP completes inside the submitting enter, so each wait finds its CQE ready at once.
fn nops_ready_at_once_every_mode(make: impl Fn() -> IoUring, what: &str) {
    const NOPS: u64 = 300;
    for &mode in Mode::ALL {
        let mut ring = make();
        // SAFETY: one thread, which consumes CQEs only between the Waiter's calls.
        let view = unsafe { UringView::new(&ring) }.unwrap();
        let mut w = Waiter::new(&PolicyConfig::new(mode));
        let mut seen = vec![0u32; NOPS as usize];
        for i in 0..NOPS {
            // SAFETY: a NOP names no memory.
            unsafe {
                ring.submission()
                    .push(&opcode::Nop::new().build().user_data(i))
            }
            .unwrap();
            let ready = w.submit_and_wait_timeout(&view, 1, Some(BOUND)).unwrap();
            assert!(ready >= 1, "{what} {mode:?}");
            for cqe in ring.completion() {
                seen[cqe.user_data() as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{what} {mode:?}");
        // A peek catches up with the CQEs reaped after the last wait.
        assert_eq!(w.wait(&view, 0).unwrap(), 0);
        let s = w.stats();
        assert_eq!(
            (s.submitted, s.cqes, s.foreign_cqes),
            (NOPS, NOPS, 0),
            "{what} {mode:?}: {s:?}"
        );
        if mode == Mode::Auto {
            // auto counts every completion toward its throughput, those reaped unseen too.
            let a = s.policy.auto;
            let counted = a.poll_completions
                + a.hybrid_completions
                + a.interrupt_completions
                + a.adaptive_completions;
            assert_eq!(counted, NOPS, "{what}: {a:?}");
        }
    }
}

/// Waits that find their CQEs ready at once never look at the CQ; the caller reaps those CQEs
/// between calls. Each call still ends the records of the CQEs reaped since the last, so records
/// do not pile up past the Waiter's table (twice the CQ entries, at least 64), where new SQEs
/// went unrecorded and their CQEs came out foreign (the every-mode tests' flake under load,
/// when the reads of whole runs completed before their waits looked).
#[test]
fn waits_ready_at_once_end_the_records_of_cqes_reaped_between_calls() {
    nops_ready_at_once_every_mode(|| IoUring::new(8).unwrap(), "plain");
    nops_ready_at_once_every_mode(coop_taskrun_ring, "COOP_TASKRUN");
    nops_ready_at_once_every_mode(defer_taskrun_ring, "DEFER_TASKRUN");
}
