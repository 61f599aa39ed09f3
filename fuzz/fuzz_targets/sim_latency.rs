//! cargo-fuzz target: see crates/pollwise-cli/tests/fuzz_harness/mod.rs (shared with the stable
//! proptest runs in crates/pollwise-cli/tests/fuzz_inputs.rs).
#![no_main]

#[path = "../../crates/pollwise-cli/tests/fuzz_harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = harness::fuzz_latency(data) {
        panic!("{e}");
    }
});
