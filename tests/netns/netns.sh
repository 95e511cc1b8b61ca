#!/usr/bin/env bash
# Multi-host fault tests (docs/faults.md). The CPU servers and the tracers
# run as separate "hosts": Linux network namespaces joined by veth pairs,
# talking over the tcp provider. Each run builds its own namespaces and
# links, named after this shell's pid, and removes them on every exit path.
#
# usage: netns.sh SCENARIO TRACERD WORKLOAD
#   SCENARIO: cut | isolation-cut | isolation-kill | cut-restore |
#             tracer-stopped | cpu-killed | cpu-host-lost |
#             replicate-cut | replicate-cut-restore
# Exit 0 if every check passed, 1 if one failed, 77 (skip) where network
# namespaces cannot be made (not root, no iproute2, no veth support).
#
# Environment: RH_NETNS_TIMEOUT_MS (transport.timeout_ms, default 2000),
# RH_NETNS_MARGIN_MS (slack allowed beyond it, default 1500),
# RH_NETNS_TRACER_EXIT_MS (bound on a tracer's exit, default twice the
# timeout plus the margin),
# RH_NETNS_KEEP=1 keeps the work directory.
set -u

scenario=${1:-}
tracerd=${2:-}
workload=${3:-}
if [ -z "$scenario" ] || [ ! -x "$tracerd" ] || [ ! -x "$workload" ]; then
	echo "usage: $0 SCENARIO TRACERD WORKLOAD" >&2
	exit 2
fi
case $scenario in
cut | isolation-cut | isolation-kill | cut-restore | tracer-stopped | cpu-killed | cpu-host-lost | \
	replicate-cut | replicate-cut-restore) ;;
*)
	echo "$0: unknown scenario '$scenario'" >&2
	exit 2
	;;
esac
TIMEOUT_MS=${RH_NETNS_TIMEOUT_MS:-2000}
MARGIN_MS=${RH_NETNS_MARGIN_MS:-1500}
# Well below the timeout: TCP's retransmissions (200 ms, then 400 ms later)
# cross the link again before either side's silence reaches TIMEOUT_MS.
SHORT_CUT_MS=$((TIMEOUT_MS * 3 / 20))
ID=$$

skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"

passed=0
failed=0
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok: $what"
	else
		failed=$((failed + 1))
		echo "not ok: $what"
		return 1
	fi
}
note() { echo "# $*"; }

now_ms() {
	local t=${EPOCHREALTIME//[.,]/}
	echo $((10#$t / 1000))
}

# wait_until MS COMMAND...: poll COMMAND until it succeeds; 1 if MS pass.
wait_until() {
	local end=$(($(now_ms) + $1))
	shift
	until "$@"; do
		[ "$(now_ms)" -ge "$end" ] && return 1
		sleep 0.02
	done
	return 0
}

ns() { echo "rhnt-$ID-$1"; }
dev() { echo "rh$ID$1$2"; } # the end of link $1-$2 that lies in $1

dir=$(mktemp -d /tmp/rheap-netns-XXXXXX) || exit 1
# The VMs' live stats go with the work directory: a VM the scenario kills
# cannot remove its file from the user's default state directory.
export RHEAP_STATE_DIR=$dir
declare -A PID # tag -> pid of a process this script started
NAMESPACES=()

dump_logs() {
	for f in "$dir"/*.log "$dir"/*.out "$dir"/*.err; do
		[ -s "$f" ] || continue
		echo "---- ${f##*/}"
		tail -n 25 "$f"
	done
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	for tag in "${!PID[@]}"; do
		local p=${PID[$tag]}
		if kill -0 "$p" 2>/dev/null; then
			kill -KILL "$p" 2>/dev/null
			kill -CONT "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	for n in "${NAMESPACES[@]}"; do
		ip netns del "$n" 2>/dev/null || echo "cleanup: could not delete netns $n" >&2
	done
	[ "$failed" -gt 0 ] || [ "$rc" -ne 0 ] && dump_logs
	if [ "${RH_NETNS_KEEP:-0}" = 1 ]; then
		echo "# kept $dir"
	else
		rm -rf "$dir"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "interrupted"; failed=$((failed + 1)); exit 1' INT TERM HUP

# Namespaces left by runs that were killed outright (their shell's pid is
# gone): deleting them only drops the name, any process inside keeps going.
for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rhnt-[0-9]*-'); do
	owner=${n#rhnt-}
	owner=${owner%%-*}
	kill -0 "$owner" 2>/dev/null || ip netns del "$n" 2>/dev/null
done

add_host() {
	local n
	n=$(ns "$1")
	ip netns add "$n" || skip "cannot create network namespace $n"
	NAMESPACES+=("$n")
	ip -n "$n" link set lo up || skip "cannot configure $n"
}

# add_link A B SUBNET: a veth pair A<->B, 10.77.SUBNET.1 on A, .2 on B.
add_link() {
	local a=$1 b=$2 s=$3
	ip link add "$(dev "$a" "$b")" netns "$(ns "$a")" type veth \
		peer name "$(dev "$b" "$a")" netns "$(ns "$b")" || skip "cannot create veth pairs"
	if ! {
		ip -n "$(ns "$a")" addr add "10.77.$s.1/24" dev "$(dev "$a" "$b")" &&
			ip -n "$(ns "$b")" addr add "10.77.$s.2/24" dev "$(dev "$b" "$a")" &&
			ip -n "$(ns "$a")" link set "$(dev "$a" "$b")" up &&
			ip -n "$(ns "$b")" link set "$(dev "$b" "$a")" up
	}; then
		skip "cannot configure veth pairs"
	fi
}

# A cut takes the CPU server's end down: no packet crosses in either
# direction, and nothing tells either process (no RST, no FIN).
cut() { ip -n "$(ns "$1")" link set "$(dev "$1" "$2")" down; }
restore() { ip -n "$(ns "$1")" link set "$(dev "$1" "$2")" up; }

# Hosts: c1 and c2 are CPU servers, m1 and m2 memory servers.
add_host c1
add_host m1
add_host m2
add_link c1 m1 1
add_link c1 m2 2
case $scenario in
isolation-*)
	add_host c2
	add_link c2 m1 3
	add_link c2 m2 4
	;;
esac

umask 077
head -c 32 /dev/urandom | base64 >"$dir/secret"

# write_config NAME BASE HOST0:PORT HOST1:PORT (with $REDUNDANCY's keys, if
# set, at the top level)
REDUNDANCY=
write_config() {
	local h0=${3%:*} p0=${3##*:} h1=${4%:*} p1=${4##*:}
	cat >"$dir/$1.json" <<EOF
{$REDUNDANCY"heap": {"base": "$2", "size": "64MiB"}, "cache": {"fraction": 0.25},
 "transport": {"provider": "tcp", "timeout_ms": $TIMEOUT_MS},
 "secret_file": "secret",
 "servers": [{"host": "$h0", "port": $p0}, {"host": "$h1", "port": $p1}]}
EOF
}

# start_tracer TAG HOST CONFIG INDEX: listens on the config's host:port.
# --once: how and when a tracer exits is what these scenarios observe of
# its noticing a lost CPU server (a daemon would wait for the next one).
start_tracer() {
	ip netns exec "$(ns "$2")" "$tracerd" --config "$dir/$3.json" --index "$4" \
		--foreground --once --status "$dir/$1.status" --wait-ms 30000 --log-level info \
		>"$dir/$1.log" 2>&1 &
	PID[$1]=$!
}

tracer_state_is() { grep -q "\"state\":\"$2\"" "$dir/$1.status" 2>/dev/null; }
tracer_holds_memory() { grep -Eq '"bytes_held":[1-9]' "$dir/$1.status" 2>/dev/null; }

# start_vm TAG HOST CONFIG
start_vm() {
	ip netns exec "$(ns "$2")" "$workload" "$dir/$3.json" 0 >"$dir/$1.out" 2>"$dir/$1.err" &
	PID[$1]=$!
}

# The last "progress" line's field $2 of VM $1 (0 before the first).
progress() {
	local l
	l=$(grep '^progress' "$dir/$1.out" 2>/dev/null | tail -n 1)
	[[ $l =~ $2=([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}
# In its mutator loop, with pages gone to the tracers and come back: the
# swap path is in use.
vm_faulting() {
	[ "$(progress "$1" iter)" -ge 20 ] && [ "$(progress "$1" faults)" -ge 100 ] &&
		[ "$(progress "$1" evicted)" -gt 0 ]
}
vm_past() { [ "$(progress "$1" "$2")" -gt "$3" ]; }

alive() { kill -0 "${PID[$1]}" 2>/dev/null; }
gone() { ! alive "$1"; }

# watch_exits T0 LIMIT_MS TAG...: wait until every process TAG has ended,
# at most LIMIT_MS after T0, watching them all at once so that each one's
# time is taken when it ends. Sets EXIT_MS[TAG] (ms after T0) and
# EXIT_ST[TAG] (exit status, 128+signal, or "none": still running at the
# limit, and then killed).
declare -A EXIT_MS EXIT_ST
watch_exits() {
	local t0=$1 end=$(($1 + $2)) tag
	shift 2
	local pending=("$@")
	while [ ${#pending[@]} -gt 0 ]; do
		local still=()
		for tag in "${pending[@]}"; do
			if alive "$tag"; then
				still+=("$tag")
				continue
			fi
			EXIT_MS[$tag]=$(($(now_ms) - t0))
			wait "${PID[$tag]}" 2>/dev/null
			EXIT_ST[$tag]=$?
			unset "PID[$tag]"
		done
		pending=("${still[@]}")
		[ ${#pending[@]} -gt 0 ] && [ "$(now_ms)" -ge "$end" ] && break
		[ ${#pending[@]} -gt 0 ] && sleep 0.01
	done
	for tag in "${pending[@]}"; do
		EXIT_MS[$tag]=$(($(now_ms) - t0))
		EXIT_ST[$tag]=none
		kill -KILL "${PID[$tag]}" 2>/dev/null
		kill -CONT "${PID[$tag]}" 2>/dev/null
		wait "${PID[$tag]}" 2>/dev/null
		unset "PID[$tag]"
	done
}

secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# start_cluster NAME CPU BASE M1ADDR M2ADDR: tracers NAME0 on m1 and NAME1
# on m2, then VM NAME on CPU once both tracers wait; returns when the VM
# swaps pages. Fails if it never gets there: what a scenario checks after
# that would only repeat the failure.
start_cluster() {
	write_config "$1" "$3" "$4" "$5"
	start_tracer "${1}0" m1 "$1" 0
	start_tracer "${1}1" m2 "$1" 1
	check "$1: tracers on m1 and m2 ready" wait_until 10000 \
		eval "tracer_state_is ${1}0 waiting && tracer_state_is ${1}1 waiting" || return 1
	start_vm "$1" "$2" "$1"
	wait_until 20000 eval "vm_faulting $1 || gone $1"
	check "$1: VM on $2 swaps pages to the tracers" vm_faulting "$1" &&
		check "$1: VM running when the fault comes" alive "$1"
}

# How long a tracer may take to exit once its CPU server is gone: its
# sends spend only what is left of the silence allowance, so it notices and
# exits within one timeout (and the margin).
TRACER_EXIT_MS=${RH_NETNS_TRACER_EXIT_MS:-$((TIMEOUT_MS + MARGIN_MS))}

# expect_lost VM SERVER ADDR (after watch_exits): the VM ended with status
# 75 within the timeout plus the margin, naming memory server SERVER, and
# was still running when the fault came.
expect_lost() {
	local ms=${EXIT_MS[$1]} st=${EXIT_ST[$1]}
	check "$1: VM exit status 75 (got $st)" [ "$st" = 75 ]
	check "$1: ended within ${TIMEOUT_MS}+${MARGIN_MS} ms of the fault (took $ms ms)" \
		[ "$ms" -le $((TIMEOUT_MS + MARGIN_MS)) ]
	# What follows the name depends on which waiter saw the silence first
	# (the monitor, a page fetch, a FREE): the name is what must be there.
	check "$1: the fatal message names memory server $2 ($3)" \
		grep -q "fatal: memory server $2 ($3)" "$dir/$1.err"
	note "$1: $(grep -m1 'fatal' "$dir/$1.err")"
	note "detection: VM $1 ended $(secs "$ms") s after the fault"
}

# expect_tracer_exit TAG LIMIT_MS PATTERN (after watch_exits): tracer TAG
# exited by itself (status 1: it lost its CPU server) within LIMIT_MS of
# the fault, logging PATTERN; its status file is gone and its process, with
# all the memory it held, with it.
expect_tracer_exit() {
	local ms=${EXIT_MS[$1]} st=${EXIT_ST[$1]}
	check "$1: tracer exited by itself, status 1 (got $st)" [ "$st" = 1 ]
	check "$1: within $2 ms (took $ms ms)" [ "$ms" -le "$2" ]
	check "$1: logged '$3'" grep -q "$3" "$dir/$1.log"
	check "$1: status file removed" [ ! -e "$dir/$1.status" ]
	note "detection: tracer $1 exited $(secs "$ms") s after the fault"
}

# finish_vm TAG: ask VM TAG to finish; it must re-read everything correctly.
finish_vm() {
	kill -USR1 "${PID[$1]}"
	watch_exits "$(now_ms)" 20000 "$1"
	check "$1: VM finished with status 0 (got ${EXIT_ST[$1]})" [ "${EXIT_ST[$1]}" = 0 ]
	check "$1: every array read back intact" grep -q '^result ok' "$dir/$1.out"
	note "$1: $(grep -m1 '^result' "$dir/$1.out")"
}

# expect_clean_exit TAG... (after finish_vm): tracers whose CPU server
# closed the heap exit 0.
expect_clean_exit() {
	watch_exits "$(now_ms)" 5000 "$@"
	local tag
	for tag in "$@"; do
		check "$tag: tracer exited cleanly after its CPU server left (got ${EXIT_ST[$tag]})" \
			[ "${EXIT_ST[$tag]}" = 0 ]
		check "$tag: status file removed" [ ! -e "$dir/$tag.status" ]
	done
}

scenario_cut() {
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	local t0
	t0=$(now_ms)
	cut c1 m1
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) A A0 A1
	expect_lost A 0 10.77.1.2:7400
	# m1 hears nothing more; m2 sees the connection close when the VM exits.
	expect_tracer_exit A1 "$TRACER_EXIT_MS" "CPU server lost"
	expect_tracer_exit A0 "$TRACER_EXIT_MS" "CPU server silent for over $TIMEOUT_MS ms"
}

# Two heaps share the memory hosts: A from c1, B from c2, each with its own
# tracer processes (B's on port 7401 and another base). A fault that takes A
# down must leave B running to a correct result.
scenario_isolation() {
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	start_cluster B c2 0x500000000000 10.77.3.2:7401 10.77.4.2:7401 || return
	local t0 before at_loss
	before=$(progress B iter)
	t0=$(now_ms)
	if [ "$1" = cut ]; then
		cut c1 m1
	else
		kill -KILL "${PID[A0]}"
	fi
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) A A0 A1
	at_loss=$(progress B iter)
	expect_lost A 0 10.77.1.2:7400
	if [ "$1" = cut ]; then
		expect_tracer_exit A0 "$TRACER_EXIT_MS" "CPU server silent for over"
	else
		check "A0: the killed tracer is gone (got ${EXIT_ST[A0]})" [ "${EXIT_ST[A0]}" = 137 ]
	fi
	expect_tracer_exit A1 "$TRACER_EXIT_MS" "CPU server lost"
	check "B: VM still running after A and its tracers are gone" alive B
	# A cut takes the whole timeout to notice: B must not stall meanwhile.
	[ "$1" = cut ] && check "B: kept working while A was failing (iteration $before -> $at_loss)" \
		[ "$at_loss" -gt "$before" ]
	check "B: keeps working afterwards" wait_until 5000 vm_past B iter "$at_loss"
	check "B: tracers still serving" \
		eval "alive B0 && alive B1 && tracer_state_is B0 serving && tracer_state_is B1 serving"
	finish_vm B
	expect_clean_exit B0 B1
}

# short_cut: cut c1-m1 for less than the timeout under VM A, then check
# that it fetches again, and that past the timeout it and its tracers run on
# with nothing reported.
short_cut() {
	local t0 t1 fetched
	t0=$(now_ms)
	cut c1 m1
	sleep "$(secs "$SHORT_CUT_MS")"
	restore c1 m1
	t1=$(now_ms)
	note "cut for $((t1 - t0)) ms (timeout $TIMEOUT_MS ms)"
	fetched=$(progress A fetched)
	check "A: fetches pages from the tracers again after the restore" \
		wait_until "$TIMEOUT_MS" vm_past A fetched "$fetched"
	note "A: fetching again $(secs $(($(now_ms) - t1))) s after the restore"
	# Past the point where a lost tracer would have been declared.
	wait_until $((TIMEOUT_MS + MARGIN_MS)) false
	check "A: VM survived the short cut" alive A
	check "A: tracers survived the short cut" eval "alive A0 && alive A1"
	check "A: no loss reported" [ ! -s "$dir/A.err" ]
}

scenario_cut_restore() {
	# A short cut: TCP retransmits, nobody notices beyond a stall.
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	local t0
	short_cut
	finish_vm A
	expect_clean_exit A0 A1

	# A long cut, restored just after the timeout: the VM is gone by then.
	start_cluster L c1 0x400000000000 10.77.1.2:7402 10.77.2.2:7402 || return
	t0=$(now_ms)
	cut c1 m1
	wait_until $((TIMEOUT_MS + MARGIN_MS / 2)) gone L
	restore c1 m1
	note "long cut lasted $(($(now_ms) - t0)) ms"
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) L L0 L1
	expect_lost L 0 10.77.1.2:7402
	expect_tracer_exit L1 "$TRACER_EXIT_MS" "CPU server lost"
	# With the link back, L0 may see the dead VM's connection reset before
	# its own silence runs out: either way it must go.
	expect_tracer_exit L0 "$TRACER_EXIT_MS" "CPU server"
}

scenario_tracer_stopped() {
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	local t0
	t0=$(now_ms)
	kill -STOP "${PID[A0]}"
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) A A1
	expect_lost A 0 10.77.1.2:7400
	expect_tracer_exit A1 "$TRACER_EXIT_MS" "CPU server lost"
	# Resumed, the hung tracer finds its CPU server gone and exits too.
	t0=$(now_ms)
	kill -CONT "${PID[A0]}"
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) A0
	expect_tracer_exit A0 "$TRACER_EXIT_MS" "CPU server"
}

scenario_cpu_killed() {
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	check "A0, A1: tracers hold memory" wait_until 3000 \
		eval "tracer_holds_memory A0 && tracer_holds_memory A1" || return
	local t0 why="CPU server lost"
	t0=$(now_ms)
	if [ "$1" = host ]; then
		# The whole CPU host goes: its links die with it, so no FIN
		# reaches the tracers and only silence tells them.
		cut c1 m1
		cut c1 m2
		why="CPU server silent for over $TIMEOUT_MS ms"
	fi
	kill -KILL "${PID[A]}"
	watch_exits "$t0" $((TRACER_EXIT_MS + MARGIN_MS)) A A0 A1
	check "A: VM killed (got ${EXIT_ST[A]})" [ "${EXIT_ST[A]}" = 137 ]
	expect_tracer_exit A0 "$TRACER_EXIT_MS" "$why"
	expect_tracer_exit A1 "$TRACER_EXIT_MS" "$why"
}

# With redundancy.mode replicate each tracer keeps the other's partition
# (docs/resilience.md, red.P1): a cut for good costs the VM nothing but
# the copies' use, and a short one nothing at all.
REPLICATE='"redundancy": {"mode": "replicate"}, "gc": {"offload": false},
 '
scenario_replicate_cut() {
	REDUNDANCY=$REPLICATE
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	cut c1 m1
	# Past the point where the loss is declared: the VM runs on.
	wait_until $((TIMEOUT_MS + MARGIN_MS)) gone A
	check "A: VM survived losing m1 for good" alive A
	check "A: the loss was logged, naming m1 and the copy m2 keeps" \
		grep -q "memory server 0 (10.77.1.2:7400) lost.*copy memory server 1" "$dir/A.err"
	note "A: $(grep -m1 'lost' "$dir/A.err")"
	check "A: counted one server lost" wait_until 1000 vm_past A lost 0
	check "A: reads m1's pages from m2's copy" wait_until "$TIMEOUT_MS" vm_past A from_copy 0
	note "A: $(progress A from_copy) pages read from the copy so far"
	finish_vm A
	watch_exits "$(now_ms)" $((TRACER_EXIT_MS + MARGIN_MS)) A0 A1
	check "A1: tracer exited cleanly after its CPU server left (got ${EXIT_ST[A1]})" \
		[ "${EXIT_ST[A1]}" = 0 ]
	# m1 never hears from the CPU server again (red.R5).
	expect_tracer_exit A0 "$TRACER_EXIT_MS" "CPU server silent for over $TIMEOUT_MS ms"
}

scenario_replicate_cut_restore() {
	REDUNDANCY=$REPLICATE
	start_cluster A c1 0x400000000000 10.77.1.2:7400 10.77.2.2:7400 || return
	short_cut
	check "A: no server counted lost, no page read from a copy" \
		eval "[ $(progress A lost) = 0 ] && [ $(progress A from_copy) = 0 ]"
	finish_vm A
	expect_clean_exit A0 A1
}

T_START=$(now_ms)
note "netns $scenario: hosts rhnt-$ID-*, timeout $TIMEOUT_MS ms, margin $MARGIN_MS ms"
# The shell's own notices (a job it saw killed) go to driver.err, shown
# with the other logs if something fails.
run_scenario() {
	case $scenario in
	cut) scenario_cut ;;
	isolation-cut) scenario_isolation cut ;;
	isolation-kill) scenario_isolation kill ;;
	cut-restore) scenario_cut_restore ;;
	tracer-stopped) scenario_tracer_stopped ;;
	cpu-killed) scenario_cpu_killed process ;;
	cpu-host-lost) scenario_cpu_killed host ;;
	replicate-cut) scenario_replicate_cut ;;
	replicate-cut-restore) scenario_replicate_cut_restore ;;
	esac
}
run_scenario 2>>"$dir/driver.err"
# Under ASan/UBSan a tracer's report could hide behind the status 1 it
# exits with anyway.
check "no sanitizer report in any process's output" \
	eval "! grep -qE 'Sanitizer|runtime error:' \"\$dir\"/*.log \"\$dir\"/*.err"
note "wall time $(secs $(($(now_ms) - T_START))) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
