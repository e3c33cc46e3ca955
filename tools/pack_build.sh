#!/usr/bin/env bash
# tools/pack_build.sh: packs what gpu_check.sh and gpu_bench.sh run from a build into one archive, for a GPU
# machine that has the CUDA toolkit, cuDNN and NCCL but not this project's other dependencies.
#
#   tools/pack_build.sh build strata-gpu.tar.xz
#   # there:  mkdir -p g && tar -xJf strata-gpu.tar.xz -C g && export LD_LIBRARY_PATH=$PWD/g/lib:$LD_LIBRARY_PATH
#   #         tools/gpu_check.sh --no-build --build-dir g/build && tools/gpu_bench.sh --build-dir g/build
#
# The archive holds build/ with the layout both scripts expect (tests/strata_tests, examples/*/, tools/,
# tools/bench/, include/strata/config.h), libstrata, and lib/ with every shared library those programs load
# except the C and C++ runtimes (a GPU machine's are as new or newer), zlib and the CUDA libraries (the driver, cudart, cuBLAS(Lt), cuDNN, NCCL, cuFile), which
# must come from the GPU machine's own CUDA install of the same major version.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,12p' "$0"; exit 2; }
build=$1 archive=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
programs=(tests/strata_tests examples/train_gpt/train_gpt examples/train_bert/train_bert
          examples/train_resnet/train_resnet examples/train_gnn/train_gnn tools/strata_calibrate
          tools/bench/strata_plan_bench tools/bench/strata_gpt_bench tools/bench/strata_bert_bench
          tools/bench/strata_resnet_bench tools/bench/strata_cache_bench tools/bench/strata_rgnn_bench)
mkdir -p "$stage/build/include/strata" "$stage/lib"
cp "$build/include/strata/config.h" "$stage/build/include/strata/"
# The commit built (tools/gpu_bench.sh names it in its table), "+" when the tree had changes.
(cd "$(dirname "$0")/.." && echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . && echo || echo +)") \
  > "$stage/build/COMMIT"
found=()
for p in "${programs[@]}"; do
  # A trainer is examples/NAME/NAME, or examples/NAME where its target writes there.
  [ -f "$build/$p" ] || [ ! -f "$build/$(dirname "$p")" ] || p=$(dirname "$p")
  [ -f "$build/$p" ] || { echo "pack_build: $build/$p is missing (build it first)"; exit 1; }
  mkdir -p "$stage/build/$(dirname "$p")"
  cp "$build/$p" "$stage/build/$p"
  strip --strip-debug "$stage/build/$p" 2>/dev/null || true
  found+=("$p")
done
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libstdc\+\+|libgcc_s|libz\.|libpthread|libdl\.|librt\.|libcuda\.|libcudart|libcublas|libcudnn|libnccl|libcufile|libnvidia|libnvrtc|libnvJitLink)'
for p in "${found[@]}"; do
  ldd "$build/$p" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$stage/lib/$name"
done
tar -C "$stage" -cJf "$archive" build lib
echo "pack_build: $archive, $(du -h "$archive" | cut -f1) ($(ls "$stage/lib" | wc -l) libraries)"
