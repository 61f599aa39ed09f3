#!/usr/bin/env bash
# Inside the guest (scripts/guest/test.sh boots it): kernel polled I/O works in pollwise.
# Function, not speed: every figure here comes from an emulator (TCG) and means nothing.
#
#   kernel-polling.sh PATH-TO-POLLWISE [RING_MODES_DIR]
#
# Checks, each one line "ok ..." or "FAIL ...": the emulated NVMe has poll queues; on an IOPOLL
# ring and on a HYBRID_IOPOLL ring, under every wait mode, pollwise writes a region with
# verification headers and reads it back verified (reads counted, errors 0); a block zeroed behind
# its back is caught on both rings; compare runs the kernel variants (iopoll, hybrid_iopoll) beside
# user-space modes and names them; advise models kernel polling among its candidates; polled I/O
# is still refused where there are no poll queues; with RING_MODES_DIR (ring_modes_capi,
# ring_modes and libpollwise_preload.so, made by test.sh), the Waiter reads checked data on an
# IOPOLL ring through the C ABI and the preload library.
set -uo pipefail
P=${1:?usage: kernel-polling.sh PATH-TO-POLLWISE}
DEV=/dev/nvme0n1
failures=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failures=$((failures + 1)); }

# A field of the first job of pollwise's JSON report.
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; print(eval(sys.argv[2], {}, {'j': j}))" "$1" "$2"; }

[ "$(cat /sys/block/nvme0n1/queue/io_poll 2>/dev/null)" = 1 ] && ok "$DEV has poll queues (io_poll=1)" \
  || bad "$DEV has no poll queues: is nvme.poll_queues on the kernel command line?"

common=(--filename=$DEV --bs=4k --direct=1 --output-format=json)
for ring in hipri hybrid_iopoll; do
  ringopts=(--hipri=1)
  [ $ring = hybrid_iopoll ] && ringopts+=(--hybrid_iopoll=1)
  for mode in interrupt poll hybrid adaptive auto khybrid dpas; do
    off=$(( (RANDOM % 64) * 1048576 ))
    what="$ring $mode (offset $off)"
    if "$P" run "${common[@]}" "${ringopts[@]}" --mode=$mode --offset=$off --size=512k --rw=write \
        --verify=crc32c --iodepth=4 --output=/tmp/w.json 2>/tmp/w.err; then
      w=$(field /tmp/w.json "j['write']['total_ios']")
      [ "$w" = 128 ] && ok "$what: wrote 128 blocks with headers" || bad "$what: wrote $w blocks, not 128"
    else
      bad "$what: write failed: $(head -c 300 /tmp/w.err)"; continue
    fi
    if "$P" run "${common[@]}" "${ringopts[@]}" --mode=$mode --offset=$off --size=512k --rw=read \
        --verify=crc32c --iodepth=4 --output=/tmp/r.json 2>/tmp/r.err; then
      r=$(field /tmp/r.json "j['read']['total_ios']"); e=$(field /tmp/r.json "j['error']")
      [ "$r" = 128 ] && [ "$e" = 0 ] && ok "$what: read back 128 blocks verified" \
        || bad "$what: read $r blocks, error $e"
    else
      bad "$what: verified read failed: $(head -c 300 /tmp/r.err)"
    fi
    # Zero one block behind pollwise's back: the verified read must fail (once per ring).
    [ $mode = auto ] || continue
    dd if=/dev/zero of=$DEV bs=4096 count=1 seek=$(( off / 4096 + 100 )) oflag=direct conv=notrunc status=none
    if "$P" run "${common[@]}" "${ringopts[@]}" --mode=$mode --offset=$off --size=512k --rw=read \
        --verify=crc32c --output=/tmp/c.json 2>/tmp/c.err; then
      bad "$what: a zeroed block read back as verified"
    else
      ok "$what: the zeroed block is caught ($(head -c 160 /tmp/c.err | tr '\n' ' '))"
    fi
  done
done

# compare runs the kernel's polled I/O beside user-space modes (and the kernel's rule and DPAS's
# as user-space policies), and names each variant and its ring.
if "$P" compare --filename=$DEV --size=64M --modes=poll,khybrid,dpas,iopoll,hybrid_iopoll \
    --runtime=2500ms --rounds=1 --warmup=0 --output-format=json --output=/tmp/k.json 2>/tmp/k.err; then
  got=$(python3 -c "
import json; jobs = json.load(open('/tmp/k.json'))['jobs']
print(' '.join('%s:%s:%s' % (j['jobname'], j['read']['total_ios'], j['pollwise'].get('ring', 'plain')) for j in jobs))")
  case "$got" in
    *"iopoll:"*":IOPOLL "*"hybrid_iopoll:"*":IOPOLL|HYBRID_IOPOLL"*) ;;
    *) bad "compare with kernel variants: $got"; got= ;;
  esac
  if [ -n "$got" ] && ! grep -q ":0:" <<< "$got "; then ok "compare ran and named every variant: $got"
  elif [ -n "$got" ]; then bad "compare: a variant did no I/O: $got"; fi
else
  bad "compare with kernel variants failed: $(head -c 300 /tmp/k.err)"
fi

# advise counts kernel polling among its candidates on a device with poll queues, and runs it
# for real beside its lowest-latency pick when the model puts it close (the real runs decide).
if "$P" advise --filename=$DEV --size=64M --time=30s --output-format=json --output=/tmp/a.json 2>/tmp/a.err; then
  got=$(python3 -c "
import json; a = json.load(open('/tmp/a.json'))['advise']
modes = {c['mode'] for c in a['cells']}
recs = ', '.join('%s=%s' % (k, v.get('mode', '-')) for k, v in a['recommendations'].items())
real = [c for c in a['cells'] if c['mode'] == 'iopoll' and c['real']]
seen = '; '.join('iopoll qd %d x%d real p50 %.1f us' % (c['iodepth'], c['threads'], c['real']['p50_ns'] / 1e3) for c in real) or 'iopoll not run for real (not within 10% of the pick in the model)'
lowest = [n for n in a['notes'] if n.startswith('lowest latency:')]
print(('iopoll' in modes) and a['platform']['iopoll_ns'] > 0, recs, '|', seen, '|', lowest[0][:300] if lowest else '')")
  case "$got" in
    True*) ok "advise models kernel polling (iopoll) among its candidates; picks: ${got#True }" ;;
    *) bad "advise did not model kernel polling: $got" ;;
  esac
else
  bad "advise failed: $(head -c 300 /tmp/a.err)"
fi

# Where there are no poll queues (a tmpfs file), polled I/O is refused with exit 2 and one line.
head -c 4194304 /dev/zero > /tmp/plain.dat
"$P" run --filename=/tmp/plain.dat --size=4M --hipri=1 --runtime=1 > /tmp/p.out 2> /tmp/p.err
rc=$?
[ $rc = 2 ] && [ "$(wc -l < /tmp/p.err)" -le 2 ] && ok "--hipri refused without poll queues (exit 2): $(head -c 120 /tmp/p.err)" \
  || bad "--hipri on a tmpfs file: exit $rc, $(head -c 300 /tmp/p.err)"
"$P" compare --filename=/tmp/plain.dat --size=4M --modes=poll,iopoll --runtime=1 > /tmp/p.out 2> /tmp/p.err
rc=$?
[ $rc = 2 ] && grep -q -- "--modes=iopoll" /tmp/p.err && ok "compare's iopoll refused without poll queues (exit 2): $(head -c 120 /tmp/p.err)" \
  || bad "compare --modes=iopoll on a tmpfs file: exit $rc, $(head -c 300 /tmp/p.err)"

# The Waiter on an IOPOLL ring, if test.sh built the C test program (second argument: its
# directory): checked reads through the C ABI and, unmodified, through the preload library.
RM=${2:-}
if [ -n "$RM" ]; then
  for mode in interrupt poll hybrid adaptive auto; do
    out=$(RING_MODES_IOPOLL_DEV=$DEV "$RM/ring_modes_capi" capi $mode 64 2>&1)
    echo "$out" | grep -q "^iopoll $mode: 64 reads checked" && ok "C ABI on an IOPOLL ring, $mode: 64 reads checked" \
      || bad "C ABI on an IOPOLL ring, $mode: $(echo "$out" | tail -2 | tr '\n' ' ')"
    out=$(RING_MODES_IOPOLL_DEV=$DEV POLLWISE_MODE=$mode POLLWISE_SUMMARY=/tmp/rm-$mode.json \
      LD_PRELOAD=$RM/libpollwise_preload.so "$RM/ring_modes" liburing 64 2>&1)
    taken=$(python3 -c "import json,sys; print(sum(json.loads(l)['taken'][f] for l in open(sys.argv[1]) for f in json.loads(l)['taken']))" /tmp/rm-$mode.json 2>/dev/null)
    echo "$out" | grep -q "^iopoll liburing: 64 reads checked" && [ "${taken:-0}" -gt 0 ] \
      && ok "unmodified liburing program on an IOPOLL ring under the preload library, $mode: 64 reads checked, $taken waits taken over" \
      || bad "preload on an IOPOLL ring, $mode: taken ${taken:-none}: $(echo "$out" | tail -2 | tr '\n' ' ')"
  done
fi

echo "$failures failure(s)"
[ $failures = 0 ]
