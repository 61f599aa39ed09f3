//! Job files, several jobs per run, and the fio options latency studies use: each of the
//! issue's misreads (1-6) is either fio's behaviour or a clear exit 2.

mod common;

use common::{json_of, pollwise, temp_file, tempdir, usage_error};
use serde_json::Value;

fn jobs(v: &Value) -> &Vec<Value> {
    v["jobs"].as_array().expect("jobs[]")
}

fn ios(j: &Value, dir: &str) -> u64 {
    j[dir]["total_ios"].as_u64().unwrap()
}

const SIM: &[&str] = &["--ioengine=sim", "--sim_latency=fixed:20us"];

/// `run` on the simulated device, then `more`.
fn run_sim<'a>(more: &[&'a str]) -> Vec<&'a str> {
    with(&with(&["run"], SIM), more)
}

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[test]
fn a_job_file_runs_every_job_with_globals_comments_includes_and_env() {
    let d = tempdir();
    std::fs::write(d.path().join("inc.fio"), "; included\niodepth = 2\n").unwrap();
    std::env::set_var("POLLWISE_JOBFILE_BS", "8k");
    let job = d.path().join("j.fio");
    std::fs::write(
        &job,
        "# comment\n[global]\nioengine=sim ; inline comment\nsim_latency=fixed:20us\nruntime=200ms\ntime_based\ndescription=two jobs\n\n[reader]\nrw=randread\nbs=${POLLWISE_JOBFILE_BS}\ninclude inc.fio\n\n[writer]\nrw = randwrite\n",
    )
    .unwrap();
    let j = job.to_str().unwrap();
    let v = json_of(&["run", j, "--output-format=json"]);
    let js = jobs(&v);
    assert_eq!(js.len(), 2, "{v}");
    assert_eq!(js[0]["jobname"], "reader");
    assert_eq!(js[1]["jobname"], "writer");
    assert!(ios(&js[0], "read") > 0 && ios(&js[0], "write") == 0);
    assert!(ios(&js[1], "write") > 0 && ios(&js[1], "read") == 0);
    assert_eq!(
        js[0]["read"]["io_bytes"].as_u64().unwrap(),
        8192 * ios(&js[0], "read")
    );
    assert_eq!(js[0]["job options"]["iodepth"], "2");
    // --parse-only checks and lists the jobs without running them.
    let (code, out, err) = pollwise(&["run", j, "--parse-only"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.contains("reader: rw=randread bs=8192 iodepth=2") && out.contains("(two jobs)"),
        "{out}"
    );
    // Command-line options apply to every job and override the file.
    let (code, out, err) = pollwise(&["run", j, "--parse-only", "--iodepth=4", "--bs=4k"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("bs=4096 iodepth=4").count(), 2, "{out}");
}

#[test]
fn options_fio_has_but_pollwise_does_not_exit_2_naming_file_and_line() {
    let (_d, job) = temp_file("j.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=sim\n\n[a]\nio_submit_mode=offload\n",
    )
    .unwrap();
    let j = job.to_str().unwrap();
    usage_error(
        &["run", j],
        &[
            "io_submit_mode",
            &format!("{j}:5"),
            "not implemented by pollwise",
        ],
    );
    for (opt, line) in [
        ("numa_cpu_nodes", "numa_cpu_nodes=0"),
        ("serialize_overlap", "serialize_overlap=1"),
        ("replay_scale", "replay_scale=2"),
    ] {
        std::fs::write(&job, format!("[a]\nioengine=sim\n{line}\n")).unwrap();
        usage_error(
            &["run", j],
            &[opt, &format!("{j}:3"), "not implemented by pollwise"],
        );
    }
    std::fs::write(&job, "[a]\nioengine=falloc\n").unwrap();
    usage_error(
        &["run", j],
        &[
            "ioengine=falloc",
            &format!("{j}:2"),
            "not implemented by pollwise",
        ],
    );
    // ...unless the command line overrides it, as fio users do.
    let (code, _, err) = pollwise(&["run", j, "--ioengine=io_uring", "--parse-only"]);
    assert_eq!(code, 0, "{err}");
    // On the command line too, and a typo is still a typo.
    usage_error(
        &["run", "--ioengine=sim", "--io_submit_mode=offload"],
        &["io_submit_mode", "not implemented by pollwise"],
    );
    usage_error(&["run", "--iodpth=2"], &["did you mean `--iodepth`"]);
    std::fs::write(&job, "[a]\nbs=4k\n[b]\niodepth=0\n").unwrap();
    usage_error(&["run", j], &["--iodepth=0", &format!("{j}:4")]);
}

#[test]
fn misread_1_a_repeated_name_runs_several_jobs() {
    let v = json_of(&run_sim(&[
        "--runtime=200ms",
        "--output-format=json",
        "--name=a",
        "--rw=randread",
        "--name=b",
        "--rw=randwrite",
    ]));
    let js = jobs(&v);
    assert_eq!(js.len(), 2, "{v}");
    assert_eq!(
        (js[0]["jobname"].as_str(), js[1]["jobname"].as_str()),
        (Some("a"), Some("b"))
    );
    assert!(ios(&js[0], "read") > 0 && ios(&js[0], "write") == 0);
    assert!(ios(&js[1], "write") > 0 && ios(&js[1], "read") == 0);
}

#[test]
fn misread_2_numjobs_are_separate_jobs_unless_group_reporting() {
    let base = [
        "run",
        "--runtime=200ms",
        "--output-format=json",
        "--numjobs=3",
    ];
    let v = json_of(&with(&base, SIM));
    let js = jobs(&v);
    assert_eq!(js.len(), 3, "{v}");
    assert!(js.iter().all(|j| ios(j, "read") > 0));
    let v = json_of(&with(&with(&base, SIM), &["--group_reporting"]));
    assert_eq!(jobs(&v).len(), 1, "{v}");
}

#[test]
fn misread_3_filename_colons_are_fios_separator() {
    let (d, a) = temp_file("a");
    let b = d.path().join("b");
    let both = format!("--filename={}:{}", a.display(), b.display());
    // `run`'s default randread over several files is refused, and nothing is made.
    usage_error(
        &["run", &both, "--size=1M", "--runtime=100ms"],
        &["--rw", "2 files"],
    );
    assert!(!d.path().join("a:b").exists() && !a.exists());
    // A sequential job makes both, half the size on each (fio's size / nrfiles).
    let (code, _, err) = pollwise(&[
        "run",
        &both,
        "--rw=read",
        "--size=1M",
        "--runtime=1s",
        "--direct=0",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!d.path().join("a:b").exists());
    for f in [&a, &b] {
        assert_eq!(std::fs::metadata(f).unwrap().len(), 512 << 10, "{f:?}");
    }
    // '\:' is a ':' inside one name.
    let escaped = format!("--filename={}\\:x", a.display());
    let (code, _, err) = pollwise(&[
        "run",
        &escaped,
        "--size=1M",
        "--runtime=100ms",
        "--direct=0",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(d.path().join("a:x").exists());
}

#[test]
fn misread_4_ramp_time_longer_than_runtime_still_measures() {
    // fio runs ramp_time, then runtime: the measured period must hold I/O, and for a job that
    // stops after a number of bytes, the ramp's requests do not count.
    let v = json_of(&run_sim(&[
        "--runtime=200ms",
        "--ramp_time=400ms",
        "--size=4M",
        "--bs=4k",
        "--output-format=json",
    ]));
    let j = &jobs(&v)[0];
    assert!(ios(j, "read") > 100, "{j}");
    let cpu = j["sys_cpu"].as_f64().unwrap() + j["usr_cpu"].as_f64().unwrap();
    assert!(
        cpu <= 100.0 * 2.0 + 1.0,
        "one job thread cannot use {cpu}% CPU"
    );
}

#[test]
fn misread_5_batch_complete_min_0_reaps_after_every_request_as_fio() {
    // fio 3.33 with iodepth_batch_complete_min=0 waits for a completion after every request it
    // queues (its "IO depths" show 1=100%): with a 200 us device, QD16 then runs near QD1.
    let run = |min: &str| {
        let v = json_of(&[
            "run",
            "--ioengine=sim",
            "--sim_latency=fixed:200us",
            "--iodepth=16",
            "--runtime=300ms",
            "--time_based",
            &format!("--iodepth_batch_complete_min={min}"),
            "--output-format=json",
        ]);
        ios(&jobs(&v)[0], "read")
    };
    let (deep, polled) = (run("1"), run("0"));
    assert!(
        polled * 4 < deep,
        "min=0 did {polled} I/Os, min=1 did {deep}: expected about one in flight"
    );
}

#[test]
fn misread_6_compare_refuses_what_it_cannot_honour() {
    usage_error(
        &["compare", "--ioengine=sim", "--io_size=1M"],
        &["--io_size=1M", "time-based", "pollwise run"],
    );
    usage_error(
        &["compare", "--ioengine=sim", "--time_based=0"],
        &["--time_based=0", "time-based"],
    );
    let (_d, job) = temp_file("j.fio");
    std::fs::write(&job, "[a]\nioengine=sim\n[b]\nioengine=sim\n").unwrap();
    usage_error(&["compare", job.to_str().unwrap()], &["one job", "2"]);
}

#[test]
fn stonewall_serializes_and_the_rest_run_together() {
    let (_d, job) = temp_file("j.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=sim\nsim_latency=fixed:20us\nruntime=1s\ntime_based\n[a]\n[b]\n[c]\nstonewall\n",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let v = json_of(&["run", job.to_str().unwrap(), "--output-format=json"]);
    let took = t0.elapsed();
    assert_eq!(jobs(&v).len(), 3);
    // a and b together (1 s), then c (1 s): at least 2 s; all three one after another would
    // take 3 s, so the margin for a loaded machine is most of a second.
    assert!(took.as_millis() >= 2000, "{took:?}");
    assert!(
        took.as_millis() < 2900,
        "{took:?}: a and b did not run together"
    );
}

#[test]
fn rates_cap_the_job_linear_and_poisson() {
    for process in ["linear", "poisson"] {
        let v = json_of(&[
            "run",
            "--ioengine=sim",
            "--sim_latency=fixed:20us",
            "--rate_iops=400",
            &format!("--rate_process={process}"),
            "--runtime=500ms",
            "--time_based",
            "--output-format=json",
        ]);
        let n = ios(&jobs(&v)[0], "read");
        assert!(
            (120..=280).contains(&n),
            "{process}: {n} I/Os in 0.5 s at 400/s"
        );
    }
    usage_error(&["run", "--rate_process=poisson"], &["--rate_iops"]);
}

#[test]
fn read_write_block_sizes_and_sequential_mixed() {
    let v = json_of(&run_sim(&[
        "--rw=rw",
        "--bs=4k,16k",
        "--runtime=200ms",
        "--time_based",
        "--output-format=json",
    ]));
    let j = &jobs(&v)[0];
    let (r, w) = (ios(j, "read"), ios(j, "write"));
    assert!(r > 0 && w > 0, "{j}");
    assert_eq!(j["read"]["io_bytes"].as_u64().unwrap(), 4096 * r);
    assert_eq!(j["write"]["io_bytes"].as_u64().unwrap(), 16384 * w);
    // readwrite= is rw=, and rwmixwrite is 100 - rwmixread.
    let v = json_of(&run_sim(&[
        "--readwrite=readwrite",
        "--rwmixwrite=0",
        "--runtime=100ms",
        "--time_based",
        "--output-format=json",
    ]));
    let j = &jobs(&v)[0];
    assert!(ios(j, "read") > 0 && ios(j, "write") == 0, "{j}");
}

#[test]
fn loops_offsets_and_cpus() {
    let (_d, f) = temp_file("t");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    let file = format!("--filename={}", f.display());
    // size=25% of 1 MiB from offset 50%, read twice: 2 x 64 blocks of 4k.
    let v = json_of(&[
        "run",
        &file,
        "--direct=0",
        "--rw=read",
        "--size=25%",
        "--offset=50%",
        "--loops=2",
        "--runtime=10s",
        "--output-format=json",
    ]);
    assert_eq!(ios(&jobs(&v)[0], "read"), 128);
    // offset=512k size=128k: the job's I/O is its region's 32 blocks, not the 160 up to its end
    // (as fio: size is the job's I/O from offset).
    for rw in ["read", "randread"] {
        let v = json_of(&[
            "run",
            &file,
            "--direct=0",
            &format!("--rw={rw}"),
            "--offset=512k",
            "--size=128k",
            "--runtime=10s",
            "--output-format=json",
        ]);
        assert_eq!(ios(&jobs(&v)[0], "read"), 32, "{rw}");
    }
    let v = json_of(&run_sim(&[
        "--cpus_allowed=0",
        "--runtime=100ms",
        "--output-format=json",
    ]));
    assert!(ios(&jobs(&v)[0], "read") > 0);
    usage_error(&run_sim(&["--cpus_allowed=a-b"]), &["--cpus_allowed=a-b"]);
}
