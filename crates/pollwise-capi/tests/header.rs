//! The committed header is what cbindgen makes of the crate now: this fails when it is stale.
//! Regenerate it with `POLLWISE_BLESS=1 cargo test -p pollwise-capi --test header`.

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut fresh);
    let path = dir.join("include/pollwise.h");
    if std::env::var_os("POLLWISE_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is stale: regenerate it with POLLWISE_BLESS=1 cargo test -p pollwise-capi --test header",
        path.display()
    );
}
