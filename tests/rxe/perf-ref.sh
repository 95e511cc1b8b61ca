#!/bin/sh
# Guest side of bench.sh: one perftest client/server pair over rdma_cm on
# the guest's rxe device, printing "@@REF TOOL SIZE VALUE [TYPICAL]" (t_avg
# and t_typical in us for *_lat, BW average in MB/s (10^6) for *_bw).
# usage: perf-ref.sh TOOL SIZE [perftest options]
tool=$1 size=$2
shift 2
timeout 100 $tool -d "$RH_RXE_DEV" -R -F -s "$size" "$@" >/tmp/ref_s.log 2>&1 &
srv=$!
# The server may need a while to listen on a loaded host: retry the client.
for try in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	timeout 100 $tool -d "$RH_RXE_DEV" -R -F -s "$size" "$@" "$RH_RXE_ADDR" >/tmp/ref_c.log 2>&1
	rc=$?
	grep -q 'Unable to perform rdma_client function\|Failed to create QP\|rdma_connect' \
		/tmp/ref_c.log || break
done
[ $rc = 0 ] || kill $srv 2>/dev/null
wait $srv
grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ ' /tmp/ref_c.log
[ $rc = 0 ] || { cat /tmp/ref_s.log /tmp/ref_c.log; exit $rc; }
# perftest reports MB as 2^20 bytes; the rheap benchmark uses 10^6.
awk -v t="$tool" -v s="$size" '$1 == s && NF >= 5 {
	if (t ~ /_lat$/) printf "@@REF %s %s %.2f %.2f\n", t, s, $6, $5
	else printf "@@REF %s %s %.2f\n", t, s, $4 * 1.048576
	exit }' /tmp/ref_c.log
