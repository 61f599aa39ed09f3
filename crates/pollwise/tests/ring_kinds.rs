//! One rule for what a ring's setup flags mean to a wait ([`RingKind`]): the crate's io_uring
//! queue polls by it as the Waiter does.

use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::Queue;
use pollwise::ring::{RingKind, FEAT_EXT_ARG};

/// A COOP_TASKRUN ring's poll enters too: the queue used to poll it by loads alone, seeing
/// task-work completions only at the next tick. A DEFER_TASKRUN ring, set up with TASKRUN_FLAG,
/// is polled by a load of the flag.
#[test]
fn the_uring_queue_polls_by_the_ring_kind_rule() {
    let cases = [
        UringOptions::default(),
        UringOptions {
            coop_taskrun: true,
            ..Default::default()
        },
        UringOptions {
            defer_taskrun: true,
            ..Default::default()
        },
        UringOptions {
            sqpoll_idle_ms: Some(10),
            ..Default::default()
        },
    ];
    for opts in cases {
        let q = UringQueue::new(&opts, &[0], false).unwrap();
        let kind = RingKind::new(opts.setup_flags(), FEAT_EXT_ARG);
        assert_eq!(q.poll_needs_enter(), kind.poll_needs_enter(), "{opts:?}");
        assert_eq!(q.completions_wake(), !kind.polled_in_enter(), "{opts:?}");
    }
}
