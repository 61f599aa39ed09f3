#!/usr/bin/env bash
# liburing's own test suite, plain and under the preload library in every mode: each test must
# end the same way under the preload as it does plain (pass, skip, fail or time out alike).
#
# The suite is built from Debian's liburing source package at the installed version, against the
# installed shared library (the preload interposes on liburing.so, so the tests must use it), and
# cached in $CACHE (default ~/.cache/pollwise/liburing-VERSION). Needs liburing-dev, a C compiler,
# make, dpkg-dev and a deb-src line for the distribution (installed and added under
# /etc/apt/sources.list.d when missing and run as root; otherwise it fails). Every test must
# build: it fails, and skips none, when one does not.
#
#   scripts/liburing_suite.sh [TEST.t ...]
#
# Environment: MODES (default: every mode), PRELOAD (default: libpollwise_preload.so built from
# the tree, in $CARGO_TARGET_DIR or target/), TEST_TIMEOUT (seconds per run, default 60),
# HANG_TIMEOUT (seconds per run of the tests that hang plain, below; default 10), CACHE.
#
# Every mode is run: about 20 minutes for the suite in eight runs per test on a loaded 2-core
# machine, once the two tests that hang plain stop after 10 s instead of 60 (they took 16 of
# the 31 minutes).
#
# A difference that involves a timeout is run again, plain and in that mode, once: it counts
# only when it comes back (a loaded machine stretches tests that wait on timers). A plain failure
# is run again once before it becomes the baseline: the baseline is liburing without pollwise,
# and its own flake under load (connect.t failed plain once while every mode passed) says
# nothing of the preload. A failure or crash under the preload is never run again, except in
# the tests known to fail plain now and then (below): there it is run again three times in that
# mode, and counts as the test's own flake only when all three end as plain did. Every
# difference prints the first lines the test wrote, so a log names its cause. Known differences
# in timing alone are allowed by scripts/liburing_suite.allow: lines of "TEST MODE
# PLAIN_OUTCOME PRELOAD_OUTCOME reason" (MODE may be *). Any other difference fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
modes=${MODES:-"interrupt poll hybrid adaptive auto khybrid dpas"}
timeout_s=${TEST_TIMEOUT:-60}
allow="$root/scripts/liburing_suite.allow"
# Tests that hang plain on Linux 6.x, each waiting for a CQE the kernel no longer posts
# (io_uring_register.t polls a ring's own fd in test_poll_ringfd; multicqes_drain.t drains behind
# a multishot poll in test_simple_drain): they run with a short timeout, and must time out under
# the preload too.
hangs=" io_uring_register.t multicqes_drain.t "
hang_timeout_s=${HANG_TIMEOUT:-10}
# Each run gets a network namespace of its own, with only its loopback up (as root, with
# iproute2): no run meets the sockets an earlier one left. connect.t binds 127.0.0.1 at a port it
# draws from its pid, without SO_REUSEADDR, and the accept tests just before it leave over a
# thousand sockets in TIME_WAIT for 60 s on some 400 ports: sharing the machine's network, its
# bind failed ("Address already in use") in 8 plain runs of 1,000 after the accept tests' eight
# rounds, none in 26,000 alone, and once each in CI plain, under auto and under dpas; in a
# namespace of its own, none in 300 after them. accept-test.t binds the abstract socket
# "\0sock2" and leaves an accept in flight at exit, which the kernel frees asynchronously: back
# to back on the machine's network 9 runs of 10 failed, each in its own namespace none of 10.
# All 147 tests end plain the same way in a namespace as without one.
netns=()
if unshare -n ip link set lo up 2>/dev/null; then
	netns=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh)
fi
# Without namespaces (not root): accept-test.t's runs wait a second first (with that pause, none
# of 10 failed), and connect.t is listed as failing plain now and then.
fixed_names=" accept-test.t "
fixed_name_pause_s=1
# Tests that fail plain now and then, for reasons of their own (connect.t, above).
flaky=" connect.t "
flaky_reruns=3
if [ ${#netns[@]} -gt 0 ]; then
	fixed_names=""
	flaky=""
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

say() { echo "liburing_suite: $*" >&2; }

# What the build needs, installed with apt-get when missing (as root; otherwise it fails naming
# them): nothing is skipped for want of a package.
need=()
dpkg-query -W -f='${Status}' liburing-dev 2>/dev/null | grep -q "install ok installed" || need+=(liburing-dev)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v ar >/dev/null || need+=(binutils)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		say "missing ${need[*]}: install them (apt-get install ${need[*]}) or run as root"
		exit 1
	fi
	say "installing ${need[*]}"
	apt-get update >/dev/null
	apt-get install -y "${need[@]}" >/dev/null
fi
version=$(dpkg-query -W -f='${source:Upstream-Version}' liburing-dev)
cache=${CACHE:-"${XDG_CACHE_HOME:-$HOME/.cache}/pollwise/liburing-$version"}
src="$cache/liburing-$version"

# The build's recipe: a cache built by another recipe is built again.
recipe="unexported-shim-1"
if [ "$(cat "$cache/built" 2>/dev/null)" != "$recipe" ]; then
	mkdir -p "$cache"
	rm -f "$cache/built"
	if [ ! -d "$src" ]; then
		if ! (cd "$cache" && apt-get source --download-only "liburing=$(dpkg-query -W -f='${Version}' liburing-dev)" >/dev/null 2>&1); then
			list=/etc/apt/sources.list.d/pollwise-deb-src.sources
			codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
			say "adding the deb-src line $list for $codename"
			cat >"$list" <<EOF
# Source packages, for building liburing's own test suite (scripts/liburing_suite.sh).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
			apt-get update >/dev/null
		fi
		(cd "$cache" && apt-get source "liburing=$(dpkg-query -W -f='${Version}' liburing-dev)" >/dev/null 2>&1)
	fi
	say "building liburing $version's tests in $src"
	(cd "$src" && ./configure >/dev/null)
	# The tests link -L../src -luring: a link to the installed shared library there (preferred
	# over the static one), and an empty archive for make's dependency on liburing.a.
	ln -sf "$(ls /usr/lib/*/liburing.so | head -1)" "$src/src/liburing.so"
	rm -f "$src/src/liburing.a" && ar rcs "$src/src/liburing.a"
	# liburing 2.3's liburing.map leaves out three functions its own tests call (2.4 exports
	# them): io_uring_enable_rings and io_uring_register_restrictions (defer-taskrun,
	# register-restrictions, single-issuer) and __io_uring_flush_sq (iopoll,
	# io_uring_passthrough). The tests get them from an object of their own, with liburing
	# 2.3's bodies; it defines nothing the shared library exports, so every function the
	# preload interposes is still the shared library's.
	cat >"$src/test/unexported.c" <<'EOF'
/* liburing 2.3's functions that its liburing.map does not export (src/register.c, src/queue.c). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "liburing.h"

static int register_op(struct io_uring *ring, unsigned op, void *arg, unsigned nr)
{
	int ret = syscall(__NR_io_uring_register, ring->ring_fd, op, arg, nr);
	return ret < 0 ? -errno : ret;
}

int io_uring_register_restrictions(struct io_uring *ring, struct io_uring_restriction *res,
				   unsigned int nr_res)
{
	int ret = register_op(ring, IORING_REGISTER_RESTRICTIONS, res, nr_res);
	return ret < 0 ? ret : 0;
}

int io_uring_enable_rings(struct io_uring *ring)
{
	return register_op(ring, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
}

unsigned __io_uring_flush_sq(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	unsigned tail = sq->sqe_tail;

	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		if (!(ring->flags & IORING_SETUP_SQPOLL))
			IO_URING_WRITE_ONCE(*sq->ktail, tail);
		else
			io_uring_smp_store_release(sq->ktail, tail);
	}
	return tail - *sq->khead;
}
EOF
	make -C "$src/test" unexported.o >"$cache/build.log" 2>&1 || {
		cat "$cache/build.log" >&2
		say "the functions liburing $version does not export did not build"
		exit 1
	}
	make -C "$src/test" clean >/dev/null
	if ! make -C "$src/test" -j"$(nproc)" helpers="helpers.o unexported.o" all >>"$cache/build.log" 2>&1; then
		grep -B3 "Error [0-9]" "$cache/build.log" | tail -30 >&2
		say "liburing $version's tests did not all build against the installed library ($cache/build.log)"
		exit 1
	fi
	echo "$recipe" >"$cache/built"
fi

# The preload as the tree is now (a no-op when it is up to date; a stale one would test old code).
if [ -z "${PRELOAD:-}" ]; then
	(cd "$root" && cargo build -q -p pollwise-preload)
fi
target=${CARGO_TARGET_DIR:-target}
[[ "$target" == /* ]] || target="$root/$target"
preload=${PRELOAD:-"$target/debug/libpollwise_preload.so"}
[ -f "$preload" ] || { say "no preload library at $preload"; exit 1; }

cd "$src/test"
if [ $# -gt 0 ]; then tests=("$@"); else mapfile -t tests < <(ls ./*.t | sed 's|^\./||' | sort); fi

# pass, skip (exit 77), timeout or fail. $limit: seconds.
outcome() {
	local rc=0
	[[ "$fixed_names" == *" ${1#./} "* ]] && sleep "$fixed_name_pause_s"
	timeout -k 5 "$limit" "${netns[@]}" "$@" >"$logs/run" 2>&1 </dev/null || rc=$?
	case $rc in
	0) echo pass ;;
	77) echo skip ;;
	124 | 137) echo timeout ;;
	*) echo "fail" ;;
	esac
}

# The first lines the run under the preload wrote, on one line.
said() { head -c 240 "$logs/got" | tr '\n\t' '| '; }

allowed() { # TEST MODE PLAIN GOT
	[ -f "$allow" ] && awk -v t="$1" -v m="$2" -v p="$3" -v g="$4" \
		'!/^#/ && $1 == t && ($2 == m || $2 == "*") && $3 == p && $4 == g { f = 1 } END { exit !f }' "$allow"
}

differ=0
flakes=0
for t in "${tests[@]}"; do
	limit=$timeout_s
	[[ "$hangs" == *" $t "* ]] && limit=$hang_timeout_s
	plain=$(outcome "./$t")
	line="$t plain=$plain"
	if [ "$plain" = fail ]; then
		plain=$(outcome "./$t")
		line+=",then-$plain"
	fi
	for m in $modes; do
		want=$plain
		got=$(LD_PRELOAD="$preload" POLLWISE_MODE="$m" outcome "./$t")
		cp "$logs/run" "$logs/got"
		if [ "$got" = fail ] && [ "$want" != fail ] && [[ "$flaky" == *" $t "* ]]; then
			reruns="" same=1
			for _ in $(seq "$flaky_reruns"); do
				again=$(LD_PRELOAD="$preload" POLLWISE_MODE="$m" outcome "./$t")
				reruns+=",then-$again"
				[ "$again" = "$want" ] || same=0
			done
			if [ "$same" = 1 ]; then
				line+=" $m=fail$reruns(flake: $(said))"
				flakes=$((flakes + 1))
				continue
			fi
		fi
		if [ "$got" != "$want" ] && { [ "$got" = timeout ] || [ "$want" = timeout ]; }; then
			want=$(outcome "./$t")
			again=$(LD_PRELOAD="$preload" POLLWISE_MODE="$m" outcome "./$t")
			if [ "$again" = "$want" ]; then
				line+=" $m=$got,then-$again(timing)"
				continue
			fi
			got=$again
			cp "$logs/run" "$logs/got"
		fi
		if [ "$got" != "$want" ]; then
			if allowed "$t" "$m" "$want" "$got"; then
				line+=" $m=$got(allowed)"
			else
				line+=" $m=$got(DIFFERS:plain=$want: $(said))"
				differ=$((differ + 1))
			fi
		fi
	done
	echo "$line"
done
if [ "$differ" -gt 0 ]; then
	say "$differ outcome(s) under the preload differ from plain (${SECONDS} s)"
	exit 1
fi
[ "$flakes" -gt 0 ] && say "$flakes failure(s) of a test that fails plain now and then ended as plain in three runs again"
where="each run in a network namespace of its own"
[ ${#netns[@]} -gt 0 ] || where="sharing this machine's network (not root, or no iproute2)"
say "every test ended as it does plain, in each mode ($modes), $where, in ${SECONDS} s"
