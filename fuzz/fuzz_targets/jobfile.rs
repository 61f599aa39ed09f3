//! cargo-fuzz target: see crates/pollwise-cli/tests/fuzz_harness/mod.rs (shared with the stable
//! proptest runs in crates/pollwise-cli/tests/fuzz_inputs.rs).
#![no_main]

#[path = "../../crates/pollwise-cli/tests/fuzz_harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("pollwise-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a directory for the job file");
        d
    });
    if let Err(e) = harness::fuzz_jobfile(dir, data) {
        panic!("{e}");
    }
});
