//! Your own io-uring ring, SQEs, `user_data` and buffers; pollwise only decides how to wait.
//!
//! Reads 4 KiB blocks of a patterned temp file with `O_DIRECT` at queue depth 4 on a
//! DEFER_TASKRUN ring, with a foreign NOP on the same ring, and checks every block. The
//! `Waiter` never consumes a CQE or rewrites a `user_data`: this program reaps its own.
//! `cargo run --example own_ring -- [MODE]` (every mode when none is named).

use std::{fs::OpenOptions, io::Write, os::fd::AsRawFd, os::unix::fs::OpenOptionsExt};

use io_uring::{opcode, types::Fd, IoUring};
use pollwise::{policy::Mode, policy::PolicyConfig, ring::UringView, waiter::Waiter};

const BS: usize = 4096;
const READS: u64 = 2_000;
const NOP: u64 = u64::MAX - 1;

#[repr(align(4096))]
struct Block([u8; BS]);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let modes = std::env::args().nth(1).map(|m| m.parse()).transpose()?;
    let mut tmp = tempfile::NamedTempFile::new()?;
    (0..=255u8).try_for_each(|b| tmp.write_all(&[b; BS]))?;
    tmp.as_file().sync_all()?;
    let mut opts = OpenOptions::new();
    let file = opts
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(tmp.path())?;
    for mode in modes.map_or(Mode::ALL.to_vec(), |m: Mode| vec![m]) {
        let mut ring: IoUring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(8)?;
        let (view, mut waiter) = (
            UringView::new(&ring)?,
            Waiter::new(&PolicyConfig::new(mode)),
        );
        let mut bufs: Vec<Box<Block>> = (0..4).map(|_| Box::new(Block([0; BS]))).collect();
        let (mut next, mut done, mut nops) = (0u64, 0u64, 0);
        let mut push = |ring: &mut IoUring, buf: &mut Block, slot: u64| {
            let blk = next * 7919 % 256;
            next += 1;
            let read = opcode::Read::new(Fd(file.as_raw_fd()), buf.0.as_mut_ptr(), BS as u32);
            let sqe = read
                .offset(blk * BS as u64)
                .build()
                .user_data(blk << 8 | slot);
            // SAFETY: `buf` is this slot's own and is not touched again until its CQE is reaped.
            unsafe { ring.submission().push(&sqe) }
        };
        // SAFETY: a NOP names no memory.
        unsafe {
            ring.submission()
                .push(&opcode::Nop::new().build().user_data(NOP))?
        };
        for (slot, buf) in bufs.iter_mut().enumerate() {
            push(&mut ring, buf, slot as u64)?;
        }
        while done < READS {
            waiter.submit_and_wait(&view, 1)?;
            for cqe in ring.completion().collect::<Vec<_>>() {
                let (blk, slot) = (cqe.user_data() >> 8, cqe.user_data() & 0xff);
                if cqe.user_data() == NOP {
                    nops += 1;
                    continue;
                }
                let buf = &mut bufs[slot as usize];
                assert!(cqe.result() == BS as i32 && buf.0.iter().all(|&b| b == blk as u8));
                done += 1;
                if done + 4 <= READS {
                    push(&mut ring, buf, slot)?;
                }
            }
        }
        let s = waiter.stats();
        let seen = (s.waits, s.policy.polls, s.policy.blocks, s.policy.sleeps);
        println!("{mode:?}: {done} reads checked, {nops} foreign NOP; waits, polls, blocks, sleeps: {seen:?}");
        assert_eq!(
            nops, 1,
            "the foreign NOP's CQE came back once, as the caller's"
        );
    }
    Ok(())
}
