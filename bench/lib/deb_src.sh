# Sourced by the bench scripts that build peers from Debian's source packages.
#
# deb_src_ensure CODENAME: makes apt know CODENAME's source packages. Debian's images ship
# binary lines only; a private file keeps ours apart from the system's. It is written in the
# system's own form: a deb822 entry carrying the same Signed-By as the system's entries for
# deb.debian.org, or a one-line entry where the system has none. apt refuses every list when
# two entries for one archive and suite disagree on Signed-By ("Conflicting values set for
# option Signed-By"), so a line of the other form breaks apt for the whole machine.
deb_src_ensure() {
	local codename=$1 dir=/etc/apt/sources.list.d
	# An earlier one-line file of ours conflicts with deb822 entries that carry Signed-By.
	rm -f "$dir/pollwise-deb-src.list"
	if grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list "$dir"/; then
		return 0
	fi
	local signed
	signed=$(grep -hsm1 '^Signed-By:' "$dir"/*.sources | head -1 || true)
	if [ -n "$signed" ]; then
		echo "== adding $dir/pollwise-deb-src.sources (deb-src $codename main)" >&2
		cat >"$dir/pollwise-deb-src.sources" <<EOS
# Source packages, for building peers from Debian's sources (bench/*.sh).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
$signed
EOS
	else
		echo "== adding $dir/pollwise-deb-src.list (deb-src $codename main)" >&2
		echo "deb-src http://deb.debian.org/debian $codename main" >"$dir/pollwise-deb-src.list"
	fi
}
