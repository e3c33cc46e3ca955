#!/usr/bin/env bash
# Installs every Debian package Strata's build needs, then configures and builds it.
# Idempotent: on a machine that has everything it only (re)builds. Run as root (or with sudo).
#   tools/setup.sh               # install + build into ./build
#   STRATA_SKIP_BUILD=1 tools/setup.sh   # install only
#   STRATA_GRAPH_DATA=1 tools/setup.sh   # also fetch graph-tool's graph collection into data/graphs
#   STRATA_KG_DATA=1 tools/setup.sh      # also fetch PyKEEN's Nations, Kinships, UMLS into data/kg
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
  libicu-dev                # io/text: Unicode categories and NFD for BERT's WordPiece tokenizer
  python3-pip               # fetches cuDNN's header-only frontend (below)
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

# Knowledge graph triples, on request: Nations, Kinships and UMLS as PyKEEN's wheel ships them
# (pykeen/datasets/<name>/{train,valid,test}.txt, "head<TAB>relation<TAB>tail"), taken out of the
# downloaded wheel (pinned version and hash, no dependencies) into data/kg/<name>/ (gitignored);
# the package itself is not installed.
if [ "${STRATA_KG_DATA:-0}" = "1" ]; then
  kg_dir=data/kg
  pykeen_version=1.11.1
  pykeen_sha256=b6cc0ab012fc6ba4f37b58fb7081a409a5c1f04cbbb0e0e9c2256e911757d4ba
  if [ -f "$kg_dir/umls/test.txt" ] && [ -f "$kg_dir/nations/test.txt" ] && [ -f "$kg_dir/kinships/test.txt" ]; then
    echo "setup: knowledge graph data already in $kg_dir"
  else
    if ! python3 -m pip --version > /dev/null 2>&1; then
      SUDO=""
      [ "$(id -u)" -ne 0 ] && SUDO=sudo
      $SUDO apt-get update -q
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-pip
    fi
    wheel_dir=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: "pykeen==$pykeen_version" -d "$wheel_dir"
    wheel="$wheel_dir/pykeen-$pykeen_version-py3-none-any.whl"
    echo "$pykeen_sha256  $wheel" | sha256sum -c --quiet -
    python3 - "$wheel" "$kg_dir" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("nations", "kinships", "umls"):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for split in ("train", "valid", "test"):
            with open(os.path.join(out, name, split + ".txt"), "wb") as f:
                f.write(z.read(f"pykeen/datasets/{name}/{split}.txt"))
PY
    rm -rf "$wheel_dir"
    echo "setup: knowledge graph data: $(cat "$kg_dir"/*/train.txt | wc -l) training triples in $kg_dir"
  fi
fi

# cuDNN's frontend (header-only C++, NVIDIA's graph API wrapper: the fused attention of
# ops/cuda/cuda_cudnn_attention.cpp), where the CUDA toolkit is here: the headers of PyPI's
# nvidia-cudnn-frontend wheel (pinned version and hash, no dependencies) into
# third_party/cudnn_frontend/ (gitignored). Without it the build still works and 16-bit attention
# on CUDA runs Strata's own kernels.
if command -v nvcc > /dev/null 2>&1 || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  fe_dir=third_party/cudnn_frontend
  fe_version=1.32.0
  fe_sha256=c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0
  if [ -f "$fe_dir/include/cudnn_frontend.h" ] && [ "$(cat "$fe_dir/VERSION" 2>/dev/null)" = "$fe_version" ]; then
    echo "setup: cuDNN frontend $fe_version already in $fe_dir"
  else
    wheel_dir=$(mktemp -d)
    if python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
         --python-version 3.11 "nvidia-cudnn-frontend==$fe_version" -d "$wheel_dir" &&
       echo "$fe_sha256  $(ls "$wheel_dir"/*.whl)" | sha256sum -c --quiet -; then
      rm -rf "$fe_dir"
      python3 - "$(ls "$wheel_dir"/*.whl)" "$fe_dir" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/") and not name.endswith("/"):
            path = os.path.join(out, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(z.read(name))
PY
      echo "$fe_version" > "$fe_dir/VERSION"
      echo "setup: cuDNN frontend $fe_version in $fe_dir"
    else
      echo "setup: could not fetch nvidia-cudnn-frontend $fe_version; CUDA attention will run without cuDNN's"
    fi
    rm -rf "$wheel_dir"
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
