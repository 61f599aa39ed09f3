//! A spinning wait on an SQPOLL ring whose kernel thread shares the waiter's CPU: the thread
//! cannot take a submission while the waiter spins, so before the waits learned to see it, poll
//! did one request per scheduler slice (126 reads in a second where interrupt did 23,549).

mod common;

use common::{json_of, temp_file};

/// The first CPU this process may run on.
fn first_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by sched_getaffinity.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(
        r,
        0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: CPU_ISSET reads the set it is given.
    (0..libc::CPU_SETSIZE as usize)
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .expect("some CPU is allowed")
}

fn run_pinned(path: &str, mode: &str, cpu: usize) -> (u64, u64) {
    let cpu_arg = format!("--sqthread_poll_cpu={cpu}");
    let allowed = format!("--cpus_allowed={cpu}");
    let mode_arg = format!("--mode={mode}");
    let file = format!("--filename={path}");
    let j = json_of(&[
        "run",
        &file,
        "--size=1M",
        "--rw=randread",
        "--sqthread_poll=1",
        &cpu_arg,
        &allowed,
        &mode_arg,
        "--runtime=0.5",
        "--time_based",
        "--output-format=json",
    ]);
    let job = &j["jobs"][0];
    let ios = job["read"]["total_ios"].as_u64().expect("total_ios");
    let stalls = job["pollwise"]["stall_blocks"]
        .as_u64()
        .expect("the report counts stall_blocks");
    (ios, stalls)
}

#[test]
fn a_spinning_wait_gives_its_cpu_to_the_sqpoll_thread_pinned_beside_it() {
    let (_dir, path) = temp_file("sq.dat");
    let path = path.to_str().unwrap();
    let cpu = first_cpu();
    let (blocking, _) = run_pinned(path, "interrupt", cpu);
    assert!(blocking > 0, "interrupt did no I/O");
    for mode in ["poll", "hybrid"] {
        let (ios, stalls) = run_pinned(path, mode, cpu);
        // The waiter saw the SQ untaken and blocked, which let the SQ thread run.
        assert!(stalls > 0, "{mode}: no stall seen in {ios} I/Os");
        // Starved, a spin gets one request through per scheduler slice (hundreds a second);
        // handing the CPU over it runs within a small factor of a blocking wait. A loose bound
        // that only starvation misses.
        assert!(
            ios * 20 >= blocking,
            "{mode}: {ios} I/Os against interrupt's {blocking}: the SQ thread starved"
        );
    }
}
