//! io_uring setup with any flag, and probing of what the ring can do.
//!
//! The io-uring crate's builder has no method for `IORING_SETUP_HYBRID_IOPOLL` (Linux 6.13), so
//! [`setup`] calls `io_uring_setup` itself with the flags it is given and hands the ring to the
//! crate through [`IoUring::from_fd`]. A flag the kernel refuses comes back as a [`SetupError`]
//! that names the flags, the feature most likely refused, the errno (the `io::Error` is kept)
//! and what the feature needs. It speaks of kernel features, never of a program's options: the
//! program maps [`SetupError::feature`] to its own option names.
//!
//! Capabilities are probed, never assumed: [`Features`] reads the feature bits the kernel
//! reports at setup (through the crate's `Parameters`: `EXT_ARG`, `NODROP`, ...), and
//! [`probe_opcodes`] asks the kernel which operations it supports (`IORING_REGISTER_PROBE`).
//! A request that needs a feature the ring lacks fails with a [`MissingFeature`] inside an
//! `io::Error` of kind `Unsupported`.
//!
//! Two features are the kernel's word that nothing is lost, and are checked rather than
//! assumed: a ring without `IORING_FEAT_NODROP` (before Linux 5.5) drops completions that do not
//! fit its completion ring, so [`setup`] refuses it (a [`SetupError`] naming `"NODROP"`); and
//! `IORING_ASYNC_CANCEL_ANY` (Linux 5.19), which cancels every request of a ring in one entry, is
//! probed by trying it ([`cancel_any_supported`]): older kernels answer `EINVAL`, and a queue then
//! cancels its requests one by one.

use std::io;
use std::mem;
use std::os::fd::RawFd;

use io_uring::IoUring;

// The setup flags (`IORING_SETUP_*`, include/uapi/linux/io_uring.h): defined here once, for
// setup and for what they mean to a wait ([`RingKind`](crate::ring::RingKind)).

/// `IORING_SETUP_IOPOLL`: the kernel polls the device for completions.
pub const IORING_SETUP_IOPOLL: u32 = 1 << 0;
/// `IORING_SETUP_SQPOLL`: a kernel thread polls the submission queue.
pub const IORING_SETUP_SQPOLL: u32 = 1 << 1;
/// `IORING_SETUP_SQ_AFF`: pin the SQPOLL thread to `sq_thread_cpu`.
pub const IORING_SETUP_SQ_AFF: u32 = 1 << 2;
/// `IORING_SETUP_CQSIZE`: the completion queue has `cq_entries`.
pub const IORING_SETUP_CQSIZE: u32 = 1 << 3;
/// `IORING_SETUP_ATTACH_WQ`: share the async workers (and SQPOLL thread) of ring `wq_fd`.
pub const IORING_SETUP_ATTACH_WQ: u32 = 1 << 5;
/// `IORING_SETUP_COOP_TASKRUN` (Linux 5.19): no interrupt to run completion task work.
pub const IORING_SETUP_COOP_TASKRUN: u32 = 1 << 8;
/// `IORING_SETUP_TASKRUN_FLAG` (Linux 5.19): the kernel sets `IORING_SQ_TASKRUN` while
/// completion work waits for the task (with COOP_TASKRUN or DEFER_TASKRUN).
pub const IORING_SETUP_TASKRUN_FLAG: u32 = 1 << 9;
/// `IORING_SETUP_CQE32` (Linux 5.19): CQEs are 32 bytes.
pub const IORING_SETUP_CQE32: u32 = 1 << 11;
/// `IORING_SETUP_SINGLE_ISSUER` (Linux 6.0): one task submits.
pub const IORING_SETUP_SINGLE_ISSUER: u32 = 1 << 12;
/// `IORING_SETUP_DEFER_TASKRUN` (Linux 6.1): completions are posted when the task enters.
pub const IORING_SETUP_DEFER_TASKRUN: u32 = 1 << 13;
/// `IORING_SETUP_NO_MMAP` (Linux 6.5): the rings live in memory the application gave.
pub const IORING_SETUP_NO_MMAP: u32 = 1 << 14;
/// `IORING_SETUP_NO_SQARRAY` (Linux 6.6): the SQ has no index array.
pub const IORING_SETUP_NO_SQARRAY: u32 = 1 << 16;
/// `IORING_SETUP_HYBRID_IOPOLL` (Linux 6.13): sleep part of the expected completion time, then
/// poll.
pub const IORING_SETUP_HYBRID_IOPOLL: u32 = 1 << 17;
/// Every setup flag up to Linux 6.13 (`IOPOLL` to `HYBRID_IOPOLL`): the flags whose effect on
/// waiting is known ([`RingKind`](crate::ring::RingKind)). A Waiter refuses a ring with another
/// flag (a later kernel's flag might change how completions become visible).
pub const KNOWN_SETUP_FLAGS: u32 = (1 << 18) - 1;
/// `IORING_ENTER_GETEVENTS`: wait for (or, with IOPOLL, poll for) completions.
pub const IORING_ENTER_GETEVENTS: u32 = 1 << 0;

/// The setup flags this module names, in the order they are listed.
const FLAG_NAMES: [(u32, &str); 10] = [
    (IORING_SETUP_IOPOLL, "IOPOLL"),
    (IORING_SETUP_HYBRID_IOPOLL, "HYBRID_IOPOLL"),
    (IORING_SETUP_SQPOLL, "SQPOLL"),
    (IORING_SETUP_SQ_AFF, "SQ_AFF"),
    (IORING_SETUP_CQSIZE, "CQSIZE"),
    (IORING_SETUP_ATTACH_WQ, "ATTACH_WQ"),
    (IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"),
    (IORING_SETUP_TASKRUN_FLAG, "TASKRUN_FLAG"),
    (IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER"),
    (IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN"),
];

/// Setup flags by name, joined by `|` (`"IOPOLL|HYBRID_IOPOLL"`), or `"no flags"`. Bits this
/// module does not name are shown in hex.
pub fn setup_flag_names(flags: u32) -> String {
    let mut names: Vec<String> = FLAG_NAMES
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known = FLAG_NAMES.iter().fold(0, |a, f| a | f.0);
    if flags & !known != 0 {
        names.push(format!("{:#x}", flags & !known));
    }
    if names.is_empty() {
        "no flags".into()
    } else {
        names.join("|")
    }
}

/// What to ask `io_uring_setup` for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetupParams {
    /// Submission queue entries (0: 128; the kernel rounds up to a power of two).
    pub entries: u32,
    /// `IORING_SETUP_*` flags.
    pub flags: u32,
    /// Completion queue entries (with `IORING_SETUP_CQSIZE`).
    pub cq_entries: u32,
    /// The SQPOLL thread's CPU (with `IORING_SETUP_SQ_AFF`).
    pub sq_thread_cpu: u32,
    /// The SQPOLL thread's idle time before it sleeps, in milliseconds.
    pub sq_thread_idle_ms: u32,
    /// The ring whose workers to share (with `IORING_SETUP_ATTACH_WQ`).
    pub wq_fd: RawFd,
}

/// Which step of making a ring failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupStage {
    /// `io_uring_setup` refused the flags.
    Setup,
    /// Mapping the rings into memory failed.
    Map,
    /// Registering the ring's files failed.
    RegisterFiles,
    /// The kernel set the ring up without a feature every ring needs (`NODROP`).
    Features,
}

/// A ring the kernel would not set up: which flags, which feature, which errno, and what the
/// feature needs. Its message names kernel features only.
#[derive(Debug, thiserror::Error)]
#[error("io_uring setup with {flags} failed: {source}; {hint}")]
pub struct SetupError {
    /// The setup flags asked for, by name (`setup_flag_names`).
    pub flags: String,
    /// Which step failed.
    pub stage: SetupStage,
    /// The feature most likely refused, by its kernel name (`"HYBRID_IOPOLL"`, `"SQPOLL"`,
    /// `"SQ_AFF"`, `"DEFER_TASKRUN"`, `"registered files"`, `"locked memory"`,
    /// `"io_uring"` when io_uring itself is disabled), when one can be named.
    pub feature: Option<&'static str>,
    /// The kernel's answer.
    pub source: io::Error,
    /// What the feature needs, in the kernel's terms.
    pub hint: String,
}

/// For tests: `r` is a refusal with the kernel's `errno`, naming `feature`, whose message shows
/// the flags as `flags` and names no program option. Returns the error.
#[cfg(test)]
pub(crate) fn assert_refused<T>(
    r: std::result::Result<T, SetupError>,
    errno: i32,
    feature: &str,
    flags: &str,
) -> SetupError {
    let Err(e) = r else {
        panic!("the kernel took a setup it must refuse: {flags}");
    };
    assert_eq!(e.errno(), Some(errno), "{e}");
    assert_eq!(e.feature, Some(feature), "{e}");
    let m = e.to_string();
    assert!(m.contains(flags), "{m}");
    assert!(!m.contains("--"), "the library names no option: {m}");
    e
}

impl SetupError {
    /// The errno of the kernel's answer, if it was one.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// Registering files on a ring set up with `flags` failed with `source`.
    pub fn register_files(flags: u32, source: io::Error) -> Self {
        SetupError {
            flags: setup_flag_names(flags) + " + registered files",
            stage: SetupStage::RegisterFiles,
            feature: Some("registered files"),
            source,
            hint: "the kernel would not register the files with the ring".into(),
        }
    }
}

/// Names the feature `io_uring_setup` most likely refused with `e`, and what it needs.
fn diagnose(flags: u32, e: &io::Error) -> (Option<&'static str>, String) {
    let errno = e.raw_os_error().unwrap_or(0);
    let has = |bit: u32| flags & bit != 0;
    if has(IORING_SETUP_HYBRID_IOPOLL) && errno == libc::EINVAL {
        return (
            Some("HYBRID_IOPOLL"),
            "this kernel has no HYBRID_IOPOLL (it needs Linux 6.13 or later)".into(),
        );
    }
    if has(IORING_SETUP_SQPOLL) && errno == libc::EINVAL {
        if has(IORING_SETUP_SQ_AFF) {
            return (
                Some("SQ_AFF"),
                "the SQPOLL thread's CPU (SQ_AFF) must be an online CPU this process may use"
                    .into(),
            );
        }
        return (Some("SQPOLL"), "the kernel refused an SQPOLL ring".into());
    }
    if errno == libc::EPERM || errno == libc::EACCES {
        return (
            Some("io_uring"),
            "io_uring is disabled here (sysctl kernel.io_uring_disabled); enable it or run as root"
                .into(),
        );
    }
    if errno == libc::ENOMEM {
        return (
            Some("locked memory"),
            "the rings do not fit the locked-memory limit (ulimit -l); raise it or ask for fewer entries"
                .into(),
        );
    }
    if has(IORING_SETUP_DEFER_TASKRUN) && errno == libc::EINVAL {
        return (
            Some("DEFER_TASKRUN"),
            "this kernel has no DEFER_TASKRUN (it needs Linux 6.1 or later)".into(),
        );
    }
    (
        None,
        "the kernel refused this combination of setup flags".into(),
    )
}

/// `struct io_uring_params` (include/uapi/linux/io_uring.h), 120 bytes.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct RawParams {
    pub(crate) sq_entries: u32,
    pub(crate) cq_entries: u32,
    pub(crate) flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    pub(crate) features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    /// `struct io_sqring_offsets`: head, tail, ring_mask, ring_entries, flags, dropped, array,
    /// resv1, user_addr (as 32-bit words but the last).
    pub(crate) sq_off: [u32; 8],
    sq_user_addr: u64,
    /// `struct io_cqring_offsets`: head, tail, ring_mask, ring_entries, overflow, cqes, flags,
    /// resv1, user_addr.
    pub(crate) cq_off: [u32; 8],
    cq_user_addr: u64,
}

// The crate's `Parameters` is a newtype over the same kernel struct; from_fd needs one.
const _: () = assert!(mem::size_of::<RawParams>() == 120);
const _: () = assert!(mem::size_of::<io_uring::Parameters>() == mem::size_of::<RawParams>());
const _: () = assert!(mem::align_of::<io_uring::Parameters>() == mem::align_of::<RawParams>());

/// The kernel's `io_uring_params` behind the crate's `Parameters` (offsets of the mapped rings).
pub(crate) fn raw_params(p: &io_uring::Parameters) -> RawParams {
    // SAFETY: Parameters is a transparent wrapper over the kernel's io_uring_params, which
    // RawParams mirrors (size and alignment asserted equal above); every bit pattern is a
    // valid RawParams (integers only).
    unsafe { *(p as *const io_uring::Parameters).cast::<RawParams>() }
}

/// Sets up a ring with `p` and hands it to the io-uring crate.
pub fn setup(p: &SetupParams) -> Result<IoUring, SetupError> {
    let names = || setup_flag_names(p.flags);
    let mut raw = RawParams {
        flags: p.flags,
        sq_thread_idle: p.sq_thread_idle_ms,
        sq_thread_cpu: p.sq_thread_cpu,
        cq_entries: p.cq_entries,
        wq_fd: p.wq_fd as u32,
        ..Default::default()
    };
    let entries = if p.entries == 0 { 128 } else { p.entries };
    // SAFETY: io_uring_setup reads and writes exactly one struct io_uring_params, which
    // RawParams is (size checked above); the returned fd is owned by us from here on.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            entries as libc::c_long,
            &mut raw as *mut RawParams,
        )
    };
    if fd < 0 {
        let source = io::Error::last_os_error();
        let (feature, hint) = diagnose(p.flags, &source);
        return Err(SetupError {
            flags: names(),
            stage: SetupStage::Setup,
            feature,
            source,
            hint,
        });
    }
    // SAFETY: Parameters wraps the kernel's io_uring_params and nothing else; size and alignment
    // are asserted equal at compile time, and `raw` holds what the kernel filled in for the ring
    // `fd`, which from_fd takes ownership of.
    let params: io_uring::Parameters = unsafe { mem::transmute(raw) };
    // SAFETY: fd is a ring we just set up with exactly these parameters, owned by nobody else.
    let ring = unsafe { IoUring::from_fd(fd as RawFd, params) }.map_err(|source| SetupError {
        flags: names(),
        stage: SetupStage::Map,
        feature: Some("locked memory"),
        source,
        hint: "mapping the ring failed; check the locked-memory limit (ulimit -l)".into(),
    })?;
    require_features(p.flags, &Features::of(&ring))?;
    Ok(ring)
}

/// `Ok` if a ring with `features` keeps every completion; else the [`SetupError`] naming
/// `"NODROP"` (its source a [`MissingFeature`], kind `Unsupported`).
fn require_features(flags: u32, features: &Features) -> Result<(), SetupError> {
    if features.nodrop {
        return Ok(());
    }
    Err(SetupError::nodrop_missing(setup_flag_names(flags)))
}

impl SetupError {
    /// The refusal of a ring set up with `flags` (their names) on a kernel without NODROP.
    pub fn nodrop_missing(flags: String) -> SetupError {
        SetupError {
            flags,
            stage: SetupStage::Features,
            feature: Some("NODROP"),
            source: MissingFeature {
                feature: "NODROP",
                since: "Linux 5.5",
                needed_for: "keeping completions that overflow the completion ring",
            }
            .into(),
            hint: "this kernel drops completions when its completion ring overflows (NODROP needs Linux 5.5 or later)".into(),
        }
    }
}

/// What the completion of an `ASYNC_CANCEL` with `IORING_ASYNC_CANCEL_ANY` says of the flag:
/// `EINVAL` is a kernel that does not know it (before Linux 5.19: any cancel flag is invalid
/// there); anything else (how many were cancelled, `ENOENT` for none) is one that does.
pub fn cancel_any_known(result: i32) -> bool {
    result != -libc::EINVAL
}

/// The [`MissingFeature`] of a kernel without `IORING_ASYNC_CANCEL_ANY`.
pub fn missing_cancel_any() -> MissingFeature {
    MissingFeature {
        feature: "ASYNC_CANCEL_ANY",
        since: "Linux 5.19",
        needed_for: "cancelling every request of a ring at once",
    }
}

/// Whether this kernel cancels every request of a ring in one `ASYNC_CANCEL`
/// (`IORING_ASYNC_CANCEL_ANY`), found by trying it once on a ring of its own with nothing in
/// flight, then remembered for the process. `Err` if the probe itself could not run (no
/// io_uring); nothing is remembered then.
pub fn cancel_any_supported() -> io::Result<bool> {
    static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if let Some(&k) = KNOWN.get() {
        return Ok(k);
    }
    let mut ring = setup(&SetupParams {
        entries: 1,
        ..Default::default()
    })
    .map_err(|e| e.source)?;
    let sqe = io_uring::opcode::AsyncCancel2::new(io_uring::types::CancelBuilder::any())
        .build()
        .user_data(1);
    // SAFETY: a cancellation references no memory.
    unsafe { ring.submission().push(&sqe) }
        .map_err(|_| io::Error::other("a fresh ring had no room for one entry"))?;
    loop {
        match ring.submit_and_wait(1) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(_) => break,
        }
    }
    let res = ring
        .completion()
        .next()
        .map(|c| c.result())
        .ok_or_else(|| io::Error::other("the probe's cancellation did not complete"))?;
    Ok(*KNOWN.get_or_init(|| cancel_any_known(res)))
}

/// The features a ring's kernel reported at setup (`io_uring_params.features`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    /// `IORING_FEAT_EXT_ARG` (Linux 5.11): `io_uring_enter` takes a timeout, so a wait can end
    /// on either a completion or a deadline. Timed waits need it.
    pub ext_arg: bool,
    /// `IORING_FEAT_NODROP` (Linux 5.5): completions that overflow the CQ are kept, not lost.
    pub nodrop: bool,
    /// `IORING_FEAT_SUBMIT_STABLE` (Linux 5.5): SQE data is consumed at submission.
    pub submit_stable: bool,
    /// `IORING_FEAT_FAST_POLL` (Linux 5.7): pollable files are polled, not punted to workers.
    pub fast_poll: bool,
    /// `IORING_FEAT_SQPOLL_NONFIXED` (Linux 5.11): SQPOLL takes unregistered files.
    pub sqpoll_nonfixed: bool,
    /// `IORING_FEAT_MIN_TIMEOUT` (Linux 6.12): waits take a minimum batch timeout.
    pub min_timeout: bool,
}

impl Features {
    /// The features of `ring`.
    pub fn of(ring: &IoUring) -> Features {
        let p = ring.params();
        Features {
            ext_arg: p.is_feature_ext_arg(),
            nodrop: p.is_feature_nodrop(),
            submit_stable: p.is_feature_submit_stable(),
            fast_poll: p.is_feature_fast_poll(),
            sqpoll_nonfixed: p.is_feature_sqpoll_nonfixed(),
            min_timeout: p.is_feature_min_timeout(),
        }
    }

    /// `Ok` if the ring can wait with a timeout; else the [`MissingFeature`] (as an
    /// `io::Error` of kind `Unsupported`).
    pub fn check_timed_wait(&self) -> io::Result<()> {
        if self.ext_arg {
            Ok(())
        } else {
            Err(MissingFeature {
                feature: "EXT_ARG",
                since: "Linux 5.11",
                needed_for: "a wait with a timeout",
            }
            .into())
        }
    }
}

/// What a ring cannot do: carried inside an `io::Error` of kind `Unsupported` (downcast it with
/// `io::Error::get_ref`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this io_uring ring has no {feature} ({since}), which {needed_for} needs")]
pub struct MissingFeature {
    /// The kernel's name of the feature (`"EXT_ARG"`).
    pub feature: &'static str,
    /// The first kernel that has it.
    pub since: &'static str,
    /// What asked for it.
    pub needed_for: &'static str,
}

impl From<MissingFeature> for io::Error {
    fn from(m: MissingFeature) -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, m)
    }
}

/// The operations a ring's kernel supports (`IORING_REGISTER_PROBE`).
pub struct Opcodes(io_uring::Probe);

impl Opcodes {
    /// Whether the kernel supports `opcode` (e.g. `io_uring::opcode::Nop::CODE`).
    pub fn is_supported(&self, opcode: u8) -> bool {
        self.0.is_supported(opcode)
    }
}

impl std::fmt::Debug for Opcodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ops: Vec<u8> = (0..=u8::MAX).filter(|&o| self.0.is_supported(o)).collect();
        f.debug_tuple("Opcodes").field(&ops).finish()
    }
}

/// Asks the kernel which operations `ring` supports (Linux 5.6).
pub fn probe_opcodes(ring: &IoUring) -> io::Result<Opcodes> {
    let mut p = io_uring::Probe::new();
    ring.submitter().register_probe(&mut p)?;
    Ok(Opcodes(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::opcode;

    #[test]
    fn flags_are_named() {
        assert_eq!(setup_flag_names(0), "no flags");
        assert_eq!(
            setup_flag_names(IORING_SETUP_IOPOLL | IORING_SETUP_HYBRID_IOPOLL),
            "IOPOLL|HYBRID_IOPOLL"
        );
        assert_eq!(setup_flag_names(1 << 30), "0x40000000");
    }

    #[test]
    fn a_plain_ring_sets_up_and_probes() {
        let ring = setup(&SetupParams {
            entries: 8,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(ring.params().sq_entries(), 8);
        let f = Features::of(&ring);
        // Every kernel that can run this crate's tests (5.11 or later, as the reactor's
        // epoll_pwait2 and multishot tests assume) reports these.
        assert_eq!(f.ext_arg, ring.params().is_feature_ext_arg());
        assert!(f.nodrop && f.submit_stable, "{f:?}");
        assert!(f.check_timed_wait().is_ok());
        let ops = probe_opcodes(&ring).unwrap();
        assert!(ops.is_supported(opcode::Nop::CODE), "{ops:?}");
        assert!(ops.is_supported(opcode::Read::CODE), "{ops:?}");
    }

    #[test]
    fn a_refused_flag_is_named_without_program_options() {
        // Bit 31 is no setup flag: every kernel refuses it with EINVAL.
        let params = SetupParams {
            entries: 8,
            flags: IORING_SETUP_DEFER_TASKRUN | (1 << 31),
            ..Default::default()
        };
        let e = assert_refused(
            setup(&params),
            libc::EINVAL,
            "DEFER_TASKRUN",
            "DEFER_TASKRUN|0x80000000",
        );
        assert_eq!(e.stage, SetupStage::Setup);
    }

    #[test]
    fn a_ring_without_nodrop_is_refused_naming_the_feature() {
        let old = Features {
            ext_arg: false,
            nodrop: false,
            ..Default::default()
        };
        let e = require_features(IORING_SETUP_CQSIZE, &old).unwrap_err();
        assert_eq!(e.feature, Some("NODROP"));
        assert_eq!(e.stage, SetupStage::Features);
        assert_eq!(e.source.kind(), io::ErrorKind::Unsupported);
        let m = e
            .source
            .get_ref()
            .and_then(|i| i.downcast_ref::<MissingFeature>())
            .unwrap();
        assert_eq!((m.feature, m.since), ("NODROP", "Linux 5.5"));
        assert!(!e.to_string().contains("--"), "{e}");
        let this_kernel = Features {
            nodrop: true,
            ..old
        };
        assert!(require_features(0, &this_kernel).is_ok());
    }

    #[test]
    fn the_cancel_any_probe_reads_einval_as_a_kernel_without_the_flag() {
        // What a kernel before 5.19 answers, and what later ones answer with nothing to cancel
        // or with some cancelled.
        assert!(!cancel_any_known(-libc::EINVAL));
        assert!(cancel_any_known(-libc::ENOENT));
        assert!(cancel_any_known(3));
        // This kernel (6.x) has the flag; the answer is remembered.
        assert!(cancel_any_supported().unwrap());
        assert!(cancel_any_supported().unwrap());
    }

    #[test]
    fn a_missing_feature_is_a_structured_unsupported_error() {
        let f = Features {
            ext_arg: false,
            ..Default::default()
        };
        let e = f.check_timed_wait().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        let m = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<MissingFeature>())
            .unwrap();
        assert_eq!(m.feature, "EXT_ARG");
    }
}
