#!/usr/bin/env bash
# Install rheap's Debian dependencies and build it into ./build.
# Usage: scripts/setup.sh [extra meson setup args]
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  meson ninja-build pkg-config gcc clang clang-format
  libjansson-dev      # config files and the type table (JSON)
  libunwind-dev       # walking mutator stacks for conservative/precise roots
  libsodium-dev       # keyed-hash challenge-response in the transport handshake
  libisal-dev         # ISA-L: CRC32C of evicted pages (swap/integrity.c)
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers  # the verbs provider
  libgc-dev           # bdwgc: comparison benchmarks only, never linked into librheap
  openjdk-17-jdk-headless  # the JVM: benchmarks/run-jvm-compare's target only, never linked into or needed by rheap
  python3-matplotlib  # the benchmark suite's plots (benchmarks/suite/plot.py); without it the runs still work, unplotted
  libclang-rt-14-dev  # sanitizer and libFuzzer runtimes for clang builds
  iproute2            # ip netns / veth: the multi-host fault tests (tests/netns)
  groff-base          # renders the man pages (man(1) and the manpages test)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ -d build ]; then
  # Default options apply only to a new build directory: an older one
  # gets the relocatable rheap.pc (meson.build says why) here.
  meson setup --reconfigure build -Dpkgconfig.relocatable=true "$@"
else
  meson setup build "$@"
fi
ninja -C build
