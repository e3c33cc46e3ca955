#!/usr/bin/env bash
# tools/gpu_bench.sh: Strata's speed on a device beside PyTorch and PyG on the same device, one table.
#
#   tools/gpu_bench.sh                                   # cuda: GPT, the cache, one graph row, the planner
#   tools/gpu_bench.sh --only gpt,bert,resnet,graphs,rgnn,cache,planner --out /tmp/gb
#   tools/gpu_bench.sh --device sim --quick --build-dir build   # every part but the CUDA-only, tiny shapes (ctest)
#
# Options (the rest go to tools/bench/gpu_bench.py, whose --help lists them):
#   --device cuda[:N]|sim[:N]   where Strata and the references run (default cuda)
#   --build-dir DIR             a build with strata_*_bench, train_gnn and strata_calibrate (default build)
#   --out DIR                   gpu_bench.md, gpu_bench.json, logs/ and profiles/ (default gpu_bench_out)
#   --python PY                 the interpreter with torch and torch_geometric (default python3)
# The references run in the same call (compile time excluded): PyTorch eager with bf16 autocast, flash
# SDPA, fused AdamW and TF32; torch.compile; PyG. Without torch the reference columns stay empty.
# Exits non-zero when a workload failed; the table says which.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case " $* " in *" -h "* | *" --help "*) sed -n '2,16p' "$0"; exec python3 "$root/tools/bench/gpu_bench.py" --help ;; esac
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
exec python3 "$root/tools/bench/gpu_bench.py" "$@"
