#!/usr/bin/env bash
# Runs one command in a guest whose block devices have poll queues, and returns its output and
# status: the place where kernel IOPOLL and HYBRID_IOPOLL run on a machine without them.
#
#   bash scripts/guest/boot.sh 'cat /sys/block/nvme0n1/queue/io_poll'      # one string: shell text
#   bash scripts/guest/boot.sh fio --name=t --filename=/dev/nvme0n1 ...     # several words: a command
#
# The guest: Debian's cloud kernel (the newest with HYBRID_IOPOLL, 6.13 or later) under QEMU with
# TCG (KVM is not required), the host's root filesystem shared read-only over virtiofs with a tmpfs
# overlay on top (guest writes never reach the host), an emulated NVMe with `nvme.poll_queues`
# (/dev/nvme0n1, backed by a sparse file of the run's own, so data reads back), and null_blk with
# poll queues (/dev/nullb0: completes at the first poll, a functional target only). The command runs as root in /, with the caller's working directory
# reachable read-only at the same path.
#
# Rules and reasons:
# - Nothing of the host's apt changes: the kernel packages come from trixie-backports through an
#   apt state of our own under the cache directory, checked with the keys bookworm ships.
# - Nothing is left running or mounted on the host: virtiofsd exports a read-only bind made in a
#   private mount namespace (the host's mount table never sees it), and every process started
#   here is killed on exit, signals included.
# - Guests always end: QEMU runs under `timeout` (GUEST_TIMEOUT, 900 s).
#
# Settings (environment): GUEST_CACHE (kernel, initramfs; default ${XDG_CACHE_HOME:-~/.cache}/pollwise-guest)
#   GUEST_KERNEL (a version such as 7.3.4+deb13-cloud-amd64, or "latest", the default)
#   GUEST_SMP (2) GUEST_MEM (2G) GUEST_TIMEOUT (900) GUEST_POLL_QUEUES (1) GUEST_NVME_SIZE (1G)
#   GUEST_APPEND (kernel args)
# Exit status: the command's, or 124 when the guest timed out, 125 when it could not run.
set -euo pipefail

CACHE=${GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pollwise-guest}
KVER=${GUEST_KERNEL:-latest}
SMP=${GUEST_SMP:-2}
MEM=${GUEST_MEM:-2G}
TIMEOUT=${GUEST_TIMEOUT:-900}
POLLQ=${GUEST_POLL_QUEUES:-1}
VIRTIOFSD=/usr/lib/qemu/virtiofsd
SUITE=trixie-backports
START=$(date +%s%N)

say() { printf '[guest %5.1fs] %s\n' "$(( ($(date +%s%N) - START) / 1000000 ))e-3" "$*" >&2; }
fail() { echo "guest: $*" >&2; exit 125; }

[ "$(id -u)" = 0 ] || fail "needs root (QEMU's virtiofsd exports the root filesystem): run it with sudo"
[ -e /dev/kvm ] || true # TCG works without KVM; nothing to check
mkdir -p "$CACHE"

# 1. Host tools: QEMU with virtiofsd, a static busybox for the initramfs, zstd and xz for the kernel.
need=()
{ command -v qemu-system-x86_64 >/dev/null && [ -x "$VIRTIOFSD" ]; } || need+=(qemu-system-x86)
for p in busybox-static zstd xz-utils; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -x "$VIRTIOFSD" ] || fail "$VIRTIOFSD is missing after installing qemu-system-x86"

# 2. The kernel, from a private apt state.
APT=$CACHE/apt
aptopts=(-o "Dir::Etc::sourcelist=$APT/sources.list" -o Dir::Etc::sourceparts=/dev/null
  -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache" -o Dir::State::status=/dev/null
  -o APT::Sandbox::User=root)
apt_ready=0
apt_private() {
  [ $apt_ready = 1 ] && return
  mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial"
  echo "deb http://deb.debian.org/debian $SUITE main" > "$APT/sources.list"
  apt-get "${aptopts[@]}" update -qq >/dev/null || fail "apt-get update of $SUITE failed (network?)"
  apt_ready=1
}
if [ "$KVER" = latest ]; then
  # Reuse what is cached when the network is not needed: the newest kernel already unpacked.
  KVER=$(ls "$CACHE"/k 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$KVER" ] || [ "${GUEST_REFRESH:-0}" = 1 ]; then
    apt_private
    KVER=$(apt-cache "${aptopts[@]}" depends linux-image-cloud-amd64 \
      | sed -n 's/.*Depends: linux-image-//p' | sort -V | tail -1)
    [ -n "$KVER" ] || fail "no cloud kernel found in $SUITE"
  fi
fi
case "$KVER" in
  [0-5].*|6.[0-9].*|6.1[0-2].*) fail "kernel $KVER predates HYBRID_IOPOLL (6.13): set GUEST_KERNEL=latest" ;;
esac
KROOT=$CACHE/k/$KVER
MODS=$KROOT/usr/lib/modules/$KVER
if [ ! -f "$MODS/modules.dep" ] || [ ! -f "$MODS/vmlinuz" ]; then
  apt_private
  debs=$CACHE/debs; mkdir -p "$debs"
  rm -rf "$KROOT.tmp"; mkdir -p "$KROOT.tmp"
  for p in "linux-binary-$KVER" "linux-modules-$KVER"; do
    f=$(ls "$debs/${p}_"*.deb 2>/dev/null | head -1 || true)
    if [ -z "$f" ]; then
      say "downloading $p"
      (cd "$debs" && apt-get "${aptopts[@]}" download -qq "$p" >/dev/null) || fail "download of $p failed"
      f=$(ls "$debs/${p}_"*.deb | head -1)
    fi
    dpkg -x "$f" "$KROOT.tmp"
  done
  busybox depmod -b "$KROOT.tmp/usr" "$KVER"
  rm -rf "$KROOT"; mv "$KROOT.tmp" "$KROOT"
fi
# Under TCG, decompressing the bzImage's payload costs seconds at every boot: unpack the ELF
# vmlinux once and boot it through its PVH entry point.
KIMG=$MODS/vmlinuz
ELF=$KROOT/vmlinux
if [ ! -s "$ELF" ]; then
  for off in $(LC_ALL=C grep -obaP '\x28\xb5\x2f\xfd' "$KIMG" | cut -d: -f1); do
    tail -c +$((off + 1)) "$KIMG" | zstd -dcq 2>/dev/null > "$ELF.tmp" || true
    if head -c4 "$ELF.tmp" | grep -q ELF; then mv "$ELF.tmp" "$ELF"; break; fi
  done
  rm -f "$ELF.tmp"
fi
[ -s "$ELF" ] && KIMG=$ELF
say "kernel $KVER"

# 3. The initramfs: mount the host's root read-only under a tmpfs overlay, then run the command.
INITRD=$KROOT/initrd.cpio.gz
if [ ! -s "$INITRD" ] || [ "$INITRD" -ot "$0" ]; then
  R=$(mktemp -d "$CACHE/initrd.XXXXXX")
  mkdir -p "$R"/{bin,proc,sys,dev,host,rw,newroot}
  cp "$(command -v busybox)" "$R/bin/busybox"
  xz -dcf "$(ls "$MODS"/kernel/fs/overlayfs/overlay.ko* | head -1)" > "$R/overlay.ko"
  cat > "$R/init" <<'EOF'
#!/bin/busybox sh
B=/bin/busybox
die() { echo "GUEST-FAIL: $*" > /dev/console; $B poweroff -f; }
$B mount -t proc proc /proc; $B mount -t sysfs sysfs /sys; $B mount -t devtmpfs dev /dev
$B insmod /overlay.ko || die "overlay module"
$B mount -t virtiofs -o ro hostroot /host || die "virtiofs"
$B mount -t tmpfs -o mode=755 rw /rw; $B mkdir -p /rw/u /rw/w
$B mount -t overlay ovl -o lowerdir=/host,upperdir=/rw/u,workdir=/rw/w /newroot || die "overlay"
N=/newroot K=$($B uname -r)
$B mkdir -p $N/opt/guest $N/usr/lib/modules $N/usr/sbin
$B cp /bin/busybox /stage2 $N/opt/guest/
$B rm -rf $N/usr/lib/modules/$K
$B ln -s "$gkroot/usr/lib/modules/$K" $N/usr/lib/modules/$K
# The modules.dep in the cache is busybox's: the guest's module tools are busybox's.
for a in modprobe insmod rmmod lsmod depmod modinfo; do $B ln -sf /opt/guest/busybox $N/usr/sbin/$a; done
for d in proc sys dev; do $B mount --move /$d $N/$d; done
exec $B switch_root $N /opt/guest/busybox sh /opt/guest/stage2
EOF
  cat > "$R/stage2" <<'EOF'
B=/opt/guest/busybox
$B mkdir -p /dev/pts /dev/shm
$B mount -t devpts devpts /dev/pts; $B mount -t tmpfs tmpfs /dev/shm; $B mount -t tmpfs tmpfs /run
# A clean /tmp, unless the command runs from the host's /tmp (a clone there): then the overlay's
# /tmp (the host's, read-only, under the guest's tmpfs) stays, writable and with that clone in it.
case "$gcwd" in /tmp|/tmp/*) ;; *) $B mount -t tmpfs tmpfs /tmp ;; esac
$B modprobe null_blk queue_mode=2 poll_queues=2 irqmode=2 completion_nsec=20000 2>/dev/null
$B hostname guest
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/guest HOME=/root TERM=dumb
$B stty -F /dev/ttyS1 raw -echo
echo "GUEST-START $($B cut -d' ' -f1 /proc/uptime)" > /dev/console
SH=/bin/bash; [ -x $SH ] || SH="$B sh"
cd "$gcwd" 2>/dev/null || cd /
$SH "$grun/cmd.sh" > /dev/ttyS1 2>&1 < /dev/null
echo "GUEST-EXIT $? $($B cut -d' ' -f1 /proc/uptime)" > /dev/console
$B sync; $B poweroff -f
EOF
  chmod +x "$R/init"
  (cd "$R" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$INITRD.tmp")
  mv "$INITRD.tmp" "$INITRD"; rm -rf "$R"
fi

# 4. Run.
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
if [ $# = 1 ]; then printf '%s\n' "$1" > "$RUN/cmd.sh"
elif [ $# -gt 1 ]; then printf '%q ' "$@" > "$RUN/cmd.sh"; echo >> "$RUN/cmd.sh"
else echo 'uname -a' > "$RUN/cmd.sh"; fi
SOCK=$RUN/virtiofs.sock
EXPORT=$RUN/root
mkdir -p "$EXPORT"
# The NVMe's backing store: a sparse file of our own, so that what the guest writes reads back.
truncate -s "${GUEST_NVME_SIZE:-1G}" "$RUN/nvme.img"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
unshare -m --propagation private sh -c "mount --bind / '$EXPORT' && mount -o remount,bind,ro '$EXPORT' &&
  exec $VIRTIOFSD --socket-path='$SOCK' -o source='$EXPORT' -o cache=auto" > "$RUN/virtiofsd.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || { cat "$RUN/virtiofsd.log" >&2; fail "virtiofsd did not start"; }

append="console=ttyS0 quiet panic=-1 grun=$RUN gkroot=$KROOT gcwd=$PWD nvme.poll_queues=$POLLQ ${GUEST_APPEND:-}"
: > "$RUN/out.log"
say "booting (TCG, $SMP CPUs, $MEM)"
timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
  -machine pc -accel tcg,thread=multi -cpu max -smp "$SMP" -m "$MEM" \
  -object memory-backend-memfd,id=mem,size="$MEM",share=on -numa node,memdev=mem \
  -chardev socket,id=vfs,path="$SOCK" -device vhost-user-fs-pci,chardev=vfs,tag=hostroot \
  -blockdev driver=file,filename="$RUN/nvme.img",node-name=nvm0 \
  -device nvme,serial=pollwise0,drive=nvm0 \
  -serial file:"$RUN/console.log" -serial file:"$RUN/out.log" \
  -kernel "$KIMG" -initrd "$INITRD" -append "$append" < /dev/null > "$RUN/qemu.log" 2>&1 &
qemu=$!
pids+=($qemu)
tail -n +1 -s 0.2 -f --pid=$qemu "$RUN/out.log" 2>/dev/null &
tailpid=$!
pids+=($tailpid)
set +e; wait $qemu; qrc=$?; wait $tailpid; set -e
end=$(grep -a -o 'GUEST-EXIT [0-9]* [0-9.]*' "$RUN/console.log" | tail -1 || true)
if [ -z "$end" ]; then
  tail -n 20 "$RUN/console.log" "$RUN/qemu.log" >&2
  [ $qrc = 124 ] && { echo "guest: timed out after ${TIMEOUT}s (GUEST_TIMEOUT)" >&2; exit 124; }
  fail "the guest did not finish (qemu exit $qrc)"
fi
read -r _ rc up <<< "$end"
say "done: status $rc at guest uptime ${up}s"
exit "$rc"
