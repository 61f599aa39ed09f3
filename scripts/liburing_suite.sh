#!/usr/bin/env bash
# liburing's own test suite, plain and under the preload library in every mode: each test must
# end the same way under the preload as it does plain (pass, skip, fail or time out alike).
#
# The suite is built from Debian's liburing source package at the installed version, against the
# installed shared library (the preload interposes on liburing.so, so the tests must use it), and
# cached in $CACHE (default ~/.cache/pollwise/liburing-VERSION). Needs liburing-dev, a C compiler
# and a deb-src line for the distribution (added, if missing, under /etc/apt/sources.list.d when
# run as root).
#
#   scripts/liburing_suite.sh [TEST.t ...]
#
# Environment: MODES (default: every mode), PRELOAD (default: target/debug/libpollwise_preload.so,
# built if missing), TEST_TIMEOUT (seconds per run, default 60), CACHE.
#
# Differences in timing alone are allowed by scripts/liburing_suite.allow: lines of
# "TEST MODE PLAIN_OUTCOME PRELOAD_OUTCOME reason" (MODE may be *). Any other difference fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
modes=${MODES:-"interrupt poll hybrid adaptive auto khybrid dpas"}
timeout_s=${TEST_TIMEOUT:-60}
allow="$root/scripts/liburing_suite.allow"

say() { echo "liburing_suite: $*" >&2; }

if ! dpkg-query -W -f='${Status}' liburing-dev 2>/dev/null | grep -q "install ok installed"; then
	say "installing liburing-dev"
	apt-get install -y liburing-dev >/dev/null
fi
version=$(dpkg-query -W -f='${source:Upstream-Version}' liburing-dev)
cache=${CACHE:-"${XDG_CACHE_HOME:-$HOME/.cache}/pollwise/liburing-$version"}
src="$cache/liburing-$version"

if [ ! -f "$cache/built" ]; then
	mkdir -p "$cache"
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
	# -k: a test that uses a function the installed library does not export (liburing 2.3's
	# defer-taskrun.c calls io_uring_enable_rings) does not link; the rest are run.
	make -k -C "$src/test" -j"$(nproc)" all >"$cache/build.log" 2>&1 || true
	grep -o "Makefile:[0-9]*: [^]]*\.t\]" "$cache/build.log" | sed 's/.*: //; s/]//' | sort -u >"$cache/unbuilt" || true
	[ -s "$cache/unbuilt" ] && say "not built against the installed library: $(tr '\n' ' ' <"$cache/unbuilt")"
	ls "$src"/test/*.t >/dev/null 2>&1 || {
		tail -20 "$cache/build.log" >&2
		say "the build failed ($cache/build.log)"
		exit 1
	}
	touch "$cache/built"
fi

preload=${PRELOAD:-"$root/target/debug/libpollwise_preload.so"}
if [ ! -f "$preload" ]; then
	(cd "$root" && cargo build -p pollwise-preload)
fi

cd "$src/test"
if [ $# -gt 0 ]; then tests=("$@"); else mapfile -t tests < <(ls ./*.t | sed 's|^\./||' | sort); fi

# pass, skip (exit 77), timeout or fail(N).
outcome() {
	local rc=0
	timeout -k 5 "$timeout_s" "$@" >/dev/null 2>&1 </dev/null || rc=$?
	case $rc in
	0) echo pass ;;
	77) echo skip ;;
	124 | 137) echo timeout ;;
	*) echo "fail" ;;
	esac
}

allowed() { # TEST MODE PLAIN GOT
	[ -f "$allow" ] && awk -v t="$1" -v m="$2" -v p="$3" -v g="$4" \
		'!/^#/ && $1 == t && ($2 == m || $2 == "*") && $3 == p && $4 == g { f = 1 } END { exit !f }' "$allow"
}

differ=0
for t in "${tests[@]}"; do
	plain=$(outcome "./$t")
	line="$t plain=$plain"
	for m in $modes; do
		got=$(LD_PRELOAD="$preload" POLLWISE_MODE="$m" outcome "./$t")
		if [ "$got" != "$plain" ]; then
			if allowed "$t" "$m" "$plain" "$got"; then
				line+=" $m=$got(allowed)"
			else
				line+=" $m=$got(DIFFERS)"
				differ=$((differ + 1))
			fi
		fi
	done
	echo "$line"
done
if [ "$differ" -gt 0 ]; then
	say "$differ outcome(s) under the preload differ from plain"
	exit 1
fi
say "every test ended as it does plain, in every mode ($modes)"
