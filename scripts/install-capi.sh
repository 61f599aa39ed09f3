#!/usr/bin/env bash
# Installs pollwise's C library the way cargo-c lays one out: include/pollwise.h,
# lib/libpollwise.so.VERSION (soname libpollwise.so.0) with its libpollwise.so.0 and
# libpollwise.so links, lib/libpollwise.a, lib/pkgconfig/pollwise.pc, and the preload library
# lib/libpollwise_preload.so (for LD_PRELOAD and `pollwise exec`).
#
#   PREFIX=/usr/local (default)  LIBDIR=$PREFIX/lib  INCLUDEDIR=$PREFIX/include
#   DESTDIR=   (a staging root)  PROFILE=release (or dev: the debug build)
#
# Why a script and not cargo-c: cargo-c is a cargo subcommand built from source (a cargo
# library and a few hundred crates, many minutes on a small machine) for what these steps do.
# Needs liburing-dev (the header includes <liburing.h>; pollwise.pc requires liburing).
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DESTDIR=${DESTDIR:-}
PROFILE=${PROFILE:-release}
case "$PROFILE" in
  dev|debug) PROFILE=dev; out=target/debug ;;
  *) out=target/$PROFILE ;;
esac
[ -n "${CARGO_TARGET_DIR:-}" ] && out=$CARGO_TARGET_DIR/${out#target/}

cargo build --locked --profile "$PROFILE" -p pollwise-capi -p pollwise-preload
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The system libraries a program linking libpollwise.a statically needs (rustc says which).
native=$(cargo rustc --locked --profile "$PROFILE" -p pollwise-capi --lib --crate-type staticlib \
  -- --print native-static-libs 2>&1 | sed -n 's/.*native-static-libs: //p' | tail -1)

lib=$DESTDIR$LIBDIR
install -d "$lib/pkgconfig" "$DESTDIR$INCLUDEDIR"
install -m 0644 crates/pollwise-capi/include/pollwise.h "$DESTDIR$INCLUDEDIR/pollwise.h"
install -m 0755 "$out/libpollwise_capi.so" "$lib/libpollwise.so.$version"
ln -sfn "libpollwise.so.$version" "$lib/libpollwise.so.0"
ln -sfn libpollwise.so.0 "$lib/libpollwise.so"
install -m 0644 "$out/libpollwise_capi.a" "$lib/libpollwise.a"
install -m 0755 "$out/libpollwise_preload.so" "$lib/libpollwise_preload.so"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@LIBDIR@|$LIBDIR|" -e "s|@INCLUDEDIR@|$INCLUDEDIR|" \
  -e "s|@VERSION@|$version|" -e "s|@NATIVE_LIBS@|$native|" \
  crates/pollwise-capi/pollwise.pc.in > "$lib/pkgconfig/pollwise.pc"
echo "installed pollwise $version under $DESTDIR$PREFIX (pkg-config: PKG_CONFIG_PATH=$lib/pkgconfig)"
