//! fio 3.33's passes over a job's region when `io_size` is given: how many, and how many bytes.
//!
//! fio runs a job's loop (`thread_main`) while `keep_running` says so: `loops` times, then
//! again while the bytes the job completed (`td->io_bytes`, every direction, the read back of
//! a verifying job included, never reset between passes) are under `io_size` by at least a
//! block. Each pass (`do_io`) issues requests until the pass's region is done or the bytes the
//! job issued in its direction over all passes (`io_issue_bytes_exceeded`) reach
//! `io_size × loops`. A sequential pattern with holes (`rw=write:N`) does fewer bytes a pass
//! than its region, so `io_size` decides how many passes it takes: fio's own example
//! `cross-stripe-verify.fio` (16 KiB every 128 KiB of 8 MiB, `io_size=8m`, `loops=2`, verify)
//! makes four passes of 1 MiB written and 1 MiB read back, not two.
//!
//! With `experimental_verify` the read backs of a pass are writes turned reads that keep the
//! write's accounting, so they count against `size × loops`: see [`experimental_verify_bytes`].

/// A job's passes and bytes in its direction, as fio 3.33 does them: `pass` bytes a full pass
/// (a whole number of `bs`), `reads_back` when each written block is read back in the same pass
/// (verify). Returns (passes, bytes), or `None` when a pass would be cut short (the byte limit
/// falls inside it), which pollwise's passes of equal size cannot follow.
pub fn fio_passes(
    pass: u64,
    bs: u64,
    io_size: u64,
    loops: u32,
    reads_back: bool,
) -> Option<(u64, u64)> {
    if pass == 0 || bs == 0 || io_size == 0 {
        return None;
    }
    let loops = u64::from(loops.max(1));
    // backend.c io_bytes_exceeded: limit = io_size * td->loops, against the bytes issued.
    let limit = io_size.saturating_mul(loops);
    let (mut issued, mut completed, mut left, mut passes) = (0u64, 0u64, loops, 0u64);
    loop {
        // backend.c keep_running: `loops` passes, then while io_bytes < io_size and the
        // difference is at least the largest block.
        if left > 0 {
            left -= 1;
        } else if completed >= io_size || io_size - completed < bs {
            break;
        }
        // backend.c do_io: a block at a time while the pass has blocks and the limit is not met.
        let mut this = 0;
        while this < pass && issued < limit {
            this += bs;
            issued += bs;
        }
        if this == 0 {
            // do_io did nothing: thread_main marks the job done.
            break;
        }
        if this != pass {
            return None;
        }
        passes += 1;
        completed += if reads_back { 2 * this } else { this };
    }
    Some((passes, issued))
}

/// A writing job's bytes written with `experimental_verify` over `loops` passes of
/// `io_size / loops` each: fio reads the first pass back by replaying its offsets as writes
/// turned reads, which keep the write's accounting direction (io_u.c `set_rw_ddir` sets
/// `acct_ddir`, ioengines.c `td_io_queue` counts it), so they count against the writes'
/// `size × loops` (backend.c `io_bytes_exceeded`) and the job writes one pass less; no later
/// pass is read back (backend.c `do_verify`: `bytes_verified` is never reset between loops).
pub fn experimental_verify_bytes(io_size: u64, loops: u64) -> u64 {
    if loops < 2 {
        return io_size;
    }
    io_size / loops * (loops - 1)
}

#[cfg(test)]
mod tests {
    use super::fio_passes;

    const K: u64 = 1024;

    #[test]
    fn cross_stripe_verify_makes_four_passes() {
        // 64 writes of 16 KiB a pass, each read back: 2 MiB a pass against io_size 8 MiB.
        assert_eq!(
            fio_passes(64 * 16 * K, 16 * K, 8 * K * K, 2, true),
            Some((4, 4 * K * K))
        );
        // Without the read back, 1 MiB a pass: eight.
        assert_eq!(
            fio_passes(64 * 16 * K, 16 * K, 8 * K * K, 2, false),
            Some((8, 8 * K * K))
        );
    }

    #[test]
    fn experimental_verify_writes_a_pass_less() {
        use super::experimental_verify_bytes;
        // fio's t/jobs/t0026.fio: 1 MiB, loops=8: 7 MiB written, 1 MiB read back.
        assert_eq!(experimental_verify_bytes(8 * K * K, 8), 7 * K * K);
        assert_eq!(experimental_verify_bytes(K * K, 1), K * K);
    }

    #[test]
    fn loops_are_a_floor() {
        // io_size met in the first pass: still `loops` passes.
        assert_eq!(
            fio_passes(K * K, 4 * K, K * K, 3, false),
            Some((3, 3 * K * K))
        );
    }

    #[test]
    fn a_pass_cut_by_the_limit_is_not_followed() {
        // 1.5 passes of io_size: the second pass stops half way.
        assert_eq!(fio_passes(K * K, 4 * K, 3 * K * K / 2, 1, false), None);
    }
}
