//! The shared library's soname is libpollwise.so.0, the name scripts/install-capi.sh installs it
//! under (cargo names the file libpollwise_capi.so).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpollwise.so.0");
}
