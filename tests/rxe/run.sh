#!/bin/bash
# Run commands inside a QEMU guest that has one Soft-RoCE (rdma_rxe) device.
#
#   tests/rxe/run.sh [options] -- 'COMMAND' ['COMMAND'...]
#
# Each COMMAND is one guest shell command line; they run in order, each under
# its own time limit, and the script exits 0 only if every one exits 0. The
# guest's console is streamed to stdout. See tests/rxe/README.md and
# docs/rxe.md.
#
# The guest is a Debian kernel (downloaded with apt-get, cached) plus an
# initramfs assembled here from: busybox, the host's rdma-core / perftest
# tools, every ELF executable and shared library of the meson build dir
# (placed at the same absolute path, so RUNPATHs keep working), and the
# ldd closure of all of those plus the libraries loaded at run time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${RXE_WORK:-$HERE/work}
BUILD=
TIMEOUT=${RXE_TIMEOUT:-290}    # whole VM, seconds (hard limit)
CMD_TIMEOUT=${RXE_CMD_TIMEOUT:-240}
MEM=${RXE_MEM:-1536}
SMP=${RXE_SMP:-2}
ACCEL=${RXE_ACCEL:-auto}
EXTRA_BINS=()
GUEST_ENV=()
CMDS=()

usage() {
	cat <<EOF
usage: $0 [options] -- 'COMMAND' ['COMMAND'...]
  --build DIR        meson build dir to make available in the guest (its
                     executables are also on PATH by name; the guest starts in DIR)
  --bin FILE         extra host executable to put on the guest's PATH (repeatable)
  --env NAME=VALUE   environment variable for the guest commands (repeatable)
  --timeout SEC      hard limit for the whole VM run (default $TIMEOUT)
  --cmd-timeout SEC  limit for each command (default $CMD_TIMEOUT)
  --work DIR         cache directory (default $WORK)
  --mem MB, --smp N  guest size (default $MEM MB, $SMP CPUs)
  --accel kvm|tcg|auto
Exit status: 0 only if every command exited 0 inside the guest.
EOF
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd); shift 2 ;;
	--bin) EXTRA_BINS+=("$2"); shift 2 ;;
	--env) GUEST_ENV+=("$2"); shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--cmd-timeout) CMD_TIMEOUT=$2; shift 2 ;;
	--work) WORK=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--smp) SMP=$2; shift 2 ;;
	--accel) ACCEL=$2; shift 2 ;;
	--) shift; CMDS=("$@"); break ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown option '$1'" >&2; usage ;;
	esac
done
[ ${#CMDS[@]} -gt 0 ] || { echo "run.sh: no command given" >&2; usage; }

T_START=$EPOCHREALTIME
say() { awk -v a="$T_START" -v b="$EPOCHREALTIME" -v m="$*" 'BEGIN { printf "[rxe %6.1fs] %s\n", b - a, m }' >&2; }
die() { say "error: $*"; exit 1; }

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# One run at a time per cache dir (meson may start several tests at once).
exec 9>"$WORK/.lock"
flock -w "$TIMEOUT" 9 || die "cache $WORK is locked by another run"

# ---- host packages -------------------------------------------------------
# path that must exist -> Debian package that provides it
HOST_NEEDS="/usr/bin/qemu-system-x86_64:qemu-system-x86
/usr/bin/cpio:cpio
/usr/bin/busybox:busybox-static
/usr/sbin/ip:iproute2
/usr/bin/rdma:iproute2
/usr/bin/ibv_rc_pingpong:ibverbs-utils
/usr/bin/ibv_devinfo:ibverbs-utils
/usr/bin/rping:rdmacm-utils
/usr/bin/ib_read_lat:perftest
/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so:ibverbs-providers
/etc/libibverbs.d/rxe.driver:ibverbs-providers"
missing=$(for l in $HOST_NEEDS; do [ -e "${l%%:*}" ] || echo "${l#*:}"; done | sort -u)
if ! file -L /usr/bin/busybox 2>/dev/null | grep -q 'statically linked'; then
	missing="$missing busybox-static"
fi
if [ -n "$missing" ]; then
	[ "$(id -u)" = 0 ] || die "missing packages (install as root): $missing"
	say "installing: $missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# ---- kernel and module closure (cached per kernel version) ----------------
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
	# No package lists yet: fall back to a cached kernel, or fetch the lists.
	kpkg=$(cat "$WORK/kernel.pkg" 2>/dev/null || true)
	if [ -z "$kpkg" ]; then
		apt-get update -qq || die "apt-get update failed"
		kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	fi
fi
[ -n "$kpkg" ] || die "cannot resolve the kernel package behind linux-image-amd64"
echo "$kpkg" >"$WORK/kernel.pkg"
KVER=${kpkg#linux-image-}
KDIR=$WORK/kernel-$KVER
MODS="rdma_rxe ib_uverbs rdma_ucm dummy crc32_generic"
if [ ! -e "$KDIR/ready" ]; then
	say "fetching $kpkg"
	rm -rf "$KDIR" "$WORK/kx"
	mkdir -p "$KDIR" "$WORK/kx"
	(cd "$WORK" && rm -f "${kpkg}"_*.deb && apt-get download "$kpkg" 2>&1 | grep -v unsandboxed) || true
	deb=$(ls "$WORK/${kpkg}"_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || die "apt-get download $kpkg failed"
	dpkg-deb -x "$deb" "$WORK/kx"
	cp "$WORK/kx/boot/vmlinuz-$KVER" "$KDIR/vmlinuz"
	md=$WORK/kx/lib/modules/$KVER
	# Debian ships the modules without modules.dep.
	[ -e "$md/modules.dep" ] || busybox depmod -b "$WORK/kx" "$KVER"
	# modules.dep lists each module's full dependency set, so one level is enough.
	for m in $MODS; do
		line=$(grep -E "(^|/)$m\.ko(\.[a-z]+)?:" "$md/modules.dep") || die "no module $m in $KVER"
		for f in ${line%%:*} ${line#*:}; do
			install -D -m644 "$md/$f" "$KDIR/modules/lib/modules/$KVER/$f"
		done
	done
	cp "$md"/modules.order "$md"/modules.builtin* "$KDIR/modules/lib/modules/$KVER/"
	busybox depmod -b "$KDIR/modules" "$KVER"
	rm -rf "$WORK/kx" "$deb"
	touch "$KDIR/ready"
	say "kernel $KVER cached in $KDIR"
fi

# ---- guest root ------------------------------------------------------------
R=$WORK/root
rm -rf "$R"
mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib/x86_64-linux-gnu/libibverbs "$R"/usr/lib64 \
	"$R"/etc/libibverbs.d "$R"/proc "$R"/sys "$R"/dev "$R"/tmp "$R"/run "$R"/rh/bin "$R"/rh/cmd
for d in bin sbin lib lib64; do ln -s usr/$d "$R/$d"; done
cp -a "$KDIR/modules/lib/modules" "$R/usr/lib/"
cp /usr/bin/busybox "$R/usr/bin/busybox"

# Guest path for a host file: everything lives under /usr (merged /usr).
guest_path() {
	case $1 in
	/lib/* | /lib64/* | /bin/* | /sbin/*) echo "/usr$1" ;;
	*) echo "$1" ;;
	esac
}
declare -A COPIED=()
put() { # put HOSTFILE [GUESTPATH]: copy (dereferenced) unless already there
	local dst=${2:-$(guest_path "$1")}
	[ -n "${COPIED[$dst]:-}" ] && return 0
	COPIED[$dst]=1
	install -D -m755 "$(readlink -f "$1")" "$R$dst"
}
put_with_libs() { # put an ELF file and its shared-library closure
	local out lib
	put "$1" "${2:-}"
	out=$(ldd "$1" 2>&1) || return 0 # static binaries: nothing more
	if grep -q 'not found' <<<"$out"; then die "ldd $1: unresolved libraries: $out"; fi
	for lib in $(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$out"); do
		put "$lib"
	done
}
put_on_path() { # put_on_path HOSTFILE: put it and link it into /rh/bin by name
	put_with_libs "$1"
	local name=${1##*/}
	if [ -e "$R/rh/bin/$name" ] || [ -L "$R/rh/bin/$name" ]; then
		say "note: two executables named $name; keeping the first"
		return 0
	fi
	ln -s "$(guest_path "$(readlink -f "$1")")" "$R/rh/bin/$name"
}

for b in ibv_devices ibv_devinfo ibv_rc_pingpong rping ib_read_lat ib_read_bw ib_write_lat \
	ib_write_bw ib_atomic_lat ib_atomic_bw; do
	put_with_libs "/usr/bin/$b"
done
put_with_libs /usr/bin/rdma
put_with_libs /usr/sbin/ip
for b in "${EXTRA_BINS[@]}"; do
	[ -x "$b" ] || die "--bin $b: not an executable"
	put_on_path "$(readlink -f "$b")"
done
# Loaded with dlopen, so ldd cannot see them: the rxe verbs provider and its
# driver file, and libgcc_s (glibc needs it to unwind at pthread_exit).
put_with_libs /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
put "$(ldconfig -p | awk '/libgcc_s.so.1 .*x86-64/ {print $NF; exit}')"

nbuild=0
if [ -n "$BUILD" ]; then
	# Executables and shared libraries of the build, skipping meson's own
	# scratch files and object directories.
	while IFS= read -r f; do
		head -c4 "$f" | grep -q $'^\x7fELF' || continue
		case $f in *.so | *.so.*) put_with_libs "$f" "$f" ;; *) put_on_path "$f" ;; esac
		nbuild=$((nbuild + 1))
	done < <(find "$BUILD" \( -name 'meson-*' -o -name '*.p' \) -prune -o -type f \
		\( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print | sort)
	say "build dir $BUILD: $nbuild ELF files"
fi

for a in $(busybox --list); do
	[ -e "$R/usr/bin/$a" ] || [ -e "$R/usr/sbin/$a" ] || ln -s busybox "$R/usr/bin/$a"
done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
printf '127.0.0.1 localhost\n10.77.0.1 rxe-guest\n' >"$R/etc/hosts"

# Commands and their environment, read by the guest's init.
i=0
for c in "${CMDS[@]}"; do
	i=$((i + 1))
	printf '%s\n' "$c" >"$R/rh/cmd/$(printf '%03d' $i)"
done
{
	printf 'RH_CMD_TIMEOUT=%q\n' "$CMD_TIMEOUT"
	printf 'RH_WORKDIR=%q\n' "${BUILD:-/tmp}"
	for e in "${GUEST_ENV[@]}"; do
		[[ $e == *=* ]] || die "--env $e: expected NAME=VALUE"
		printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
	done
} >"$R/rh/env"
install -m755 "$HERE/guest-init.sh" "$R/init"

(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initrd.gz"
say "initramfs $(du -h "$WORK/initrd.gz" | cut -f1) ($i commands)"

# ---- boot ------------------------------------------------------------------
if [ "$ACCEL" = auto ]; then
	# A /dev/kvm served by kvm_pvm (no VT-x/AMD-V) cannot run a stock kernel.
	if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ ! -d /sys/module/kvm_pvm ]; then
		ACCEL=kvm
	else
		ACCEL=tcg
	fi
fi
case $ACCEL in
kvm) QACCEL=(-accel kvm -cpu host) ;;
tcg) QACCEL=(-accel tcg,thread=multi -cpu max) ;;
*) die "--accel: kvm, tcg or auto" ;;
esac

# Under TCG the kernel finds the vCPUs' TSCs unsynchronized and falls back
# to the HPET, which makes every clock_gettime() an emulated MMIO read
# (microseconds): timing code would measure the clock, not the transport.
KCMD="tsc=reliable clocksource=tsc"
LOG=$WORK/guest.log
say "booting $KVER ($ACCEL, ${SMP} cpus, ${MEM} MB), limit ${TIMEOUT}s, log $LOG"
set +e
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 "${QACCEL[@]}" -m "$MEM" -smp "$SMP" \
	-kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 $KCMD" \
	-display none -nodefaults -no-user-config -serial stdio -no-reboot </dev/null 2>&1 |
	sed -u 's/\r$//' | tee "$LOG"
qrc=${PIPESTATUS[0]}
set -e
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	say "TIMEOUT: the VM did not finish within ${TIMEOUT}s"
fi
if grep -q '^@@RESULT PASS' "$LOG"; then
	say "PASS ($i commands)"
	exit 0
fi
say "FAIL (qemu exit $qrc; see $LOG)"
exit 1
