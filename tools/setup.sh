#!/usr/bin/env bash
# Installs every Debian package Strata's build needs, then configures and builds it.
# Idempotent: on a machine that has everything it only (re)builds. Run as root (or with sudo).
#   tools/setup.sh               # install + build into ./build
#   STRATA_SKIP_BUILD=1 tools/setup.sh   # install only
#   STRATA_GRAPH_DATA=1 tools/setup.sh   # also fetch graph-tool's graph collection into data/graphs
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libopenblas-openmp-dev    # GEMM (the OpenMP build: one thread pool with our kernels)
  libeigen3-dev             # maps, reductions, small fixed-size math
  libdnnl-dev               # oneDNN: f32/bf16 GEMM with kernels chosen by CPU features
  libprotobuf-dev protobuf-compiler   # checkpoint index, configs, plans
  libgtest-dev libgmock-dev libbenchmark-dev
  liburing-dev              # NVMe tier: io_uring + O_DIRECT
  libopenmpi-dev openmpi-bin          # data-parallel runs under mpirun
  nlohmann-json3-dev        # golden fixtures, benchmark reports
  libcli11-dev              # trainer command lines
  libpng-dev libjpeg-dev    # io/images: PNG and JPEG image folders
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# Graph data, on request: the .gt.gz collection that Debian's python3-graph-tool package ships
# (polblogs, football, polbooks, cond-mat-2005, pgp-strong-2009, email-Enron, ...), taken out of
# the downloaded .deb into data/graphs/ (gitignored); the package itself is not installed.
if [ "${STRATA_GRAPH_DATA:-0}" = "1" ]; then
  graph_dir=data/graphs
  if compgen -G "$graph_dir/*.gt.gz" > /dev/null; then
    echo "setup: graph data already in $graph_dir"
  else
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    apt-cache show python3-graph-tool > /dev/null 2>&1 || $SUDO apt-get update -q
    deb_dir=$(mktemp -d)
    (cd "$deb_dir" && apt-get download -q python3-graph-tool)
    dpkg-deb -x "$deb_dir"/python3-graph-tool_*.deb "$deb_dir/root"
    mkdir -p "$graph_dir"
    find "$deb_dir/root" -path '*/graph_tool/collection/*.gt.gz' -exec cp {} "$graph_dir"/ \;
    rm -rf "$deb_dir"
    echo "setup: graph data: $(ls "$graph_dir"/*.gt.gz | wc -l) graphs in $graph_dir"
  fi
fi

[ "${STRATA_SKIP_BUILD:-0}" = "1" ] && exit 0

build_dir=${STRATA_BUILD_DIR:-build}
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
# CUDA is built when the toolkit is present (nvcc or $CUDA_HOME); CI forces it on.
if [ -n "${STRATA_CMAKE_ARGS:-}" ]; then
  read -r -a extra <<< "$STRATA_CMAKE_ARGS"
  cmake_args+=("${extra[@]}")
fi
cmake -S . -B "$build_dir" "${cmake_args[@]}"
cmake --build "$build_dir" -j"$(nproc)"
