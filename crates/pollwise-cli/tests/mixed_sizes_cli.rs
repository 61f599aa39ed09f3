//! Random requests of several sizes (`bssplit`, `bsrange`) over fio's random map behave as fio
//! 3.33's: a size is a multiple of the smallest (or the largest), a request is never longer than
//! the size drawn, the map covers each unit of the smallest size once, and a job without
//! `io_size` ends when the map is full.

mod common;

use common::{pollwise, tempdir};

/// The (offset, length) of each read in a `write_iolog` file.
fn reads(log: &std::path::Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "read").then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect()
}

/// Runs a buffered random read of 1 MiB with `sizes` and returns its reads.
fn run(sizes: &str, extra: &[&str]) -> Vec<(u64, u64)> {
    let d = tempdir();
    let file = d.path().join("data");
    let log = d.path().join("log.txt");
    let mut args = vec![
        "run".to_string(),
        format!("--filename={}", file.display()),
        "--size=1M".into(),
        "--rw=randread".into(),
        "--direct=0".into(),
        sizes.into(),
        format!("--write_iolog={}", log.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _out, err) = pollwise(&args);
    assert_eq!(code, 0, "{sizes}: {err}");
    reads(&log)
}

/// No two requests of one pass share a byte.
fn disjoint(mut r: Vec<(u64, u64)>, what: &str) {
    r.sort_unstable();
    for w in r.windows(2) {
        assert!(
            w[0].0 + w[0].1 <= w[1].0,
            "{what}: {:?} overlaps {:?}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn split_sizes_are_multiples_of_the_smallest_and_cover_the_map_once() {
    // fio 3.33: 3k/4k asks only 3072 (4096 rounded down), 341 reads, 1047552 bytes; 1536/4k
    // asks 1536 and 3072 and moves the same 1047552 bytes.
    for (sizes, allowed) in [
        ("--bssplit=3k/50:4k/50", &[3072u64][..]),
        ("--bssplit=1536/50:4k/50", &[1536, 3072][..]),
    ] {
        let r = run(sizes, &[]);
        for &(_, len) in &r {
            assert!(allowed.contains(&len), "{sizes}: a read of {len}");
        }
        let bytes: u64 = r.iter().map(|x| x.1).sum();
        assert_eq!(bytes, 1_047_552, "{sizes}");
        if sizes.contains("3k/50") {
            assert_eq!(r.len(), 341, "{sizes}");
        }
        disjoint(r, sizes);
    }
}

#[test]
fn a_range_ends_with_its_full_map() {
    // fio 3.33 on 1 MiB with bsrange=1000-4k: reads of 1000..4000 and 4096 (5000 clamped), no
    // read past the map's last whole unit (1048000), and one pass that moves less than the
    // units (1040768 bytes), not a second pass topping it up.
    let r = run("--bsrange=1000-4k", &[]);
    for &(off, len) in &r {
        assert!(len % 1000 == 0 || len == 4096, "a read of {len}");
        assert!((1000..=4096).contains(&len), "a read of {len}");
        assert!(off % 1000 == 0 && off + len <= 1_048_000, "{off}+{len}");
    }
    let bytes: u64 = r.iter().map(|x| x.1).sum();
    assert!((1_000_000..=1_048_000).contains(&bytes), "{bytes} bytes");
    disjoint(r, "bsrange");
    // loops=2: two full maps, each covering its units once.
    let r = run("--bsrange=1000-4k", &["--loops=2"]);
    let bytes: u64 = r.iter().map(|x| x.1).sum();
    assert!(
        (2_000_000..=2_096_000).contains(&bytes),
        "{bytes} bytes over two loops"
    );
}
