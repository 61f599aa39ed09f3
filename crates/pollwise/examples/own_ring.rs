//! Your own io-uring ring, SQEs, `user_data`, buffers (QD4 `O_DIRECT` reads, checked, on a
//! DEFER_TASKRUN ring with a foreign NOP); pollwise only waits. `-- [MODE]`: default, all modes.

use io_uring::{opcode, squeue::Entry, types::Fd, IoUring};
use pollwise::{policy::Mode, waiter::UringWaiter};
use std::{fs::OpenOptions, io::Write, os::fd::AsRawFd, os::unix::fs::OpenOptionsExt};

const BS: usize = 4096;
const READS: u64 = 2_000;
const NOP: u64 = u64::MAX;
#[repr(align(4096))]
struct Block([u8; BS]);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let one: Option<Mode> = std::env::args().nth(1).map(|m| m.parse()).transpose()?;
    let mut tmp = tempfile::NamedTempFile::new()?;
    (0..=255u8).try_for_each(|b| tmp.write_all(&[b; BS]))?;
    let mut opts = OpenOptions::new();
    opts.read(true).custom_flags(libc::O_DIRECT);
    let file = opts.open(tmp.path())?;
    let read = |buf: &mut Block, n: u64, slot: u64| -> Entry {
        let (fd, blk) = (Fd(file.as_raw_fd()), n * 7919 % 256);
        let read = opcode::Read::new(fd, buf.0.as_mut_ptr(), BS as u32).offset(blk * BS as u64);
        read.build().user_data(blk << 8 | slot)
    };
    for mode in one.map_or(Mode::ALL.to_vec(), |m| vec![m]) {
        let mut builder = IoUring::builder();
        builder.setup_single_issuer().setup_defer_taskrun();
        let ring: IoUring = builder.build(8)?;
        // The waiter owns the ring: submission() and completion() are the ring's own queues.
        let mut waiter = UringWaiter::new(ring, mode)?;
        let mut bufs: Vec<Box<Block>> = (0..4).map(|_| Box::new(Block([0; BS]))).collect();
        let mut sqes = vec![opcode::Nop::new().build().user_data(NOP)];
        sqes.extend((0..).zip(&mut bufs).map(|(s, b)| read(b, s, s)));
        let (mut done, mut nops) = (0u64, 0);
        while done < READS {
            // SAFETY: each read's buffer is its slot's own, untouched until its CQE is reaped.
            unsafe { waiter.submission().push_multiple(&sqes)? };
            sqes.clear();
            waiter.submit_and_wait(1)?;
            for cqe in waiter.completion() {
                let (blk, slot) = (cqe.user_data() >> 8, cqe.user_data() & 0xff);
                let Some(buf) = bufs.get_mut(slot as usize) else {
                    nops += (cqe.user_data() == NOP) as u32;
                    continue;
                };
                assert!(cqe.result() == BS as i32 && buf.0.iter().all(|&b| b == blk as u8));
                done += 1;
                if done + 4 <= READS {
                    sqes.push(read(buf, done + 3, slot));
                }
            }
        }
        println!(
            "{mode:?}: {done} reads checked, {nops} foreign NOP; {:?}",
            waiter.stats()
        );
        assert_eq!(nops, 1, "the foreign NOP came back once, as the caller's");
    }
    Ok(())
}
