#!/bin/sh
# /init of the rxe test guest (tests/rxe/run.sh packs it into the initramfs).
# Sets up one Soft-RoCE device, runs /rh/cmd/* in order and reports
# "@@RESULT PASS" only if every command exited 0; then powers off.
export PATH=/rh/bin:/usr/sbin:/usr/bin
export HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# /tmp stays on the initramfs (already RAM): build dirs may live under it.
mount -t tmpfs tmpfs /run
. /rh/env

up() { cut -d' ' -f1 /proc/uptime; }
finish() {
	echo "@@RESULT $1 (guest uptime $(up)s)"
	sync
	poweroff -f
}
echo "@@BOOTED uptime=$(up)s"

# busybox's ash prefers its own applets: the real iproute2 is called by path.
IP=/usr/sbin/ip
modprobe -a crc32_generic rdma_rxe ib_uverbs rdma_ucm dummy || finish "FAIL (modprobe)"
$IP link set lo up
# One rxe device on a dummy netdev, shared by both ends of every test: rxe
# delivers packets addressed to its own MAC locally (two rxe devices over a
# veth pair did not pass traffic on 6.1). MTU 4200 gives an IB MTU of 4096.
$IP link add rd0 type dummy
$IP link set rd0 mtu 4200
$IP addr add 10.77.0.1/24 dev rd0
$IP link set rd0 up
rdma link add rxe0 type rxe netdev rd0 || finish "FAIL (rdma link add)"
# The IPv4-mapped RoCE v2 GID appears shortly after the address is up.
gid=
for try in 1 2 3 4 5 6 7 8 9 10; do
	for i in 0 1 2 3; do
		case $(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null) in
		0000:0000:0000:0000:0000:ffff:*) gid=$i; break 2 ;;
		esac
	done
	sleep 0.2
done
[ -n "$gid" ] || finish "FAIL (no IPv4 GID on rxe0)"
export RH_RXE_DEV=rxe0 RH_RXE_ADDR=10.77.0.1 RH_RXE_GID=$gid
ulimit -l unlimited
echo "@@READY rxe0 addr=$RH_RXE_ADDR gid_index=$gid uptime=$(up)s"

cd "$RH_WORKDIR" 2>/dev/null || cd /tmp
fail=0
for f in /rh/cmd/*; do
	n=${f##*/}
	echo "@@CMD $n: $(cat $f)"
	t0=$(up)
	timeout "$RH_CMD_TIMEOUT" sh "$f"
	rc=$?
	t=$(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.1f", b - a }')
	[ $rc = 143 ] && echo "@@TIMEOUT $n after ${RH_CMD_TIMEOUT}s"
	echo "@@RC $n $rc (${t}s)"
	[ $rc = 0 ] || fail=1
done
if [ $fail = 0 ]; then finish PASS; else
	dmesg | tail -20
	finish FAIL
fi
