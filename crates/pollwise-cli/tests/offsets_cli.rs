//! An offset given as a percentage is aligned upwards to the smallest block size, as fio's is:
//! a file whose length is no multiple of the block size still gets whole-block requests, which
//! O_DIRECT needs.

mod common;

use common::{pollwise, tempdir};

/// The offsets of the requests in a `write_iolog` file.
fn offsets(log: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| f[3].parse().unwrap())
        })
        .collect()
}

#[test]
fn a_percentage_offset_is_aligned_to_the_block_size() {
    let d = tempdir();
    let file = d.path().join("odd");
    // 1 MiB and 100 bytes: half of it is 524338, no multiple of 4096 (nor of 512).
    std::fs::write(&file, vec![7u8; 1048676]).unwrap();
    let log = d.path().join("log.txt");
    for direct in ["0", "1"] {
        let (code, _out, err) = pollwise(&[
            "run",
            &format!("--filename={}", file.display()),
            "--rw=read",
            "--bs=4k",
            "--offset=50%",
            &format!("--direct={direct}"),
            &format!("--write_iolog={}", log.display()),
        ]);
        assert_eq!(code, 0, "--direct={direct}: {err}");
        let o = offsets(&log);
        // fio 3.33 reads 528384 (524338 aligned up) to 1044480, 127 blocks.
        assert_eq!(o.first(), Some(&528384), "--direct={direct}");
        assert_eq!(o.last(), Some(&1044480), "--direct={direct}");
        assert_eq!(o.len(), 127, "--direct={direct}");
    }
}
