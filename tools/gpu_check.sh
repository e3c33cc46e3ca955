#!/usr/bin/env bash
# tools/gpu_check.sh: everything a device must pass, in one command and one table.
#
#   tools/gpu_check.sh                  # a GPU: --device cuda, builds build-gpu-check with CUDA
#   tools/gpu_check.sh --device sim --build-dir build --no-build   # the simulated device (CI)
#
# 1. build     configures and builds with CUDA (--device cuda: a build without it fails here)
# 2. kernels   the device's conformance rows (every op against the double reference), the
#              relational layers against PyG, the zero-copy feature gather, and the
#              device-to-CPU parity suites; no test may skip
# 3. cache     the tensor cache on the device: host tier, recompute, NVMe staged and direct, the
#              keep-all step's bits; no test may skip
# 4. trainers  train_gpt (f32 and --bf16), train_bert, train_resnet and train_gnn (full-graph SAGE,
#              sampled GAT) 20 steps on the device and on the CPU:
#              sim must log the same losses; cuda within 2% (f32 kernels that sum differently)
# 5. calibrate strata_calibrate --device writes the device's hardware profile
# 6. planner   strata_plan_bench on the device with that profile (small GPT, B=8 T=128; B=32
#              T=512 on CUDA): the plan's predicted step time within 50% and activation peak
#              within 10% of the measured planned step
# Prints one row per check and exits non-zero when any check fails.
set -uo pipefail
device=cuda build=build-gpu-check build_it=1 work= steps=20
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --no-build) build_it=0; shift ;;
    --work) work=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)"; exit 2 ;;
  esac
done
case $device in cuda | cuda:* | sim | sim:*) ;; *) echo "gpu_check: --device is cuda[:N] or sim[:N], not $device"; exit 2 ;; esac
kind=${device%%:*}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${work:-$(mktemp -d /tmp/gpu_check.XXXXXX)}
mkdir -p "$work"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
rows=() failed=0
row() {  # row CHECK RESULT DETAIL
  rows+=("$(printf '| %-9s | %-4s | %s |' "$1" "$2" "$3")")
  [ "$2" = ok ] || failed=1
  echo "gpu_check: $1: $2 ($3)" >&2
}
finish() {
  echo
  echo "gpu_check on $device ($(date -u +%Y-%m-%d), $(uname -n)); logs in $work"
  echo "| check     | ok?  | detail |"
  echo "|-----------|------|--------|"
  printf '%s\n' "${rows[@]}"
  exit $failed
}

# 1. build
if [ $build_it = 1 ]; then
  if cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 &&
     cmake --build "$build" -j"$(nproc)" --target strata_tests train_gpt train_bert train_resnet train_gnn strata_calibrate \
       strata_plan_bench > "$work/build.log" 2>&1; then
    row build ok "$(grep -o 'Strata: CUDA=[A-Z]*' "$work/configure.log" | head -1)"
  else
    row build FAIL "see $work/build.log"; finish
  fi
fi
if [ "$kind" = cuda ] && ! grep -rqs "define STRATA_HAVE_CUDA 1" "$build/include/strata/config.h"; then
  row build FAIL "$build was configured without CUDA (no STRATA_HAVE_CUDA in its config.h)"; finish
fi

# 2-3. GoogleTest suites on the device; a skip is a failure.
gtest() {  # gtest CHECK FILTER
  local log="$work/$1.log"
  timeout 1200 "$build/tests/strata_tests" --gtest_filter="$2" > "$log" 2>&1
  local rc=$? passed skipped
  if [ $rc -eq 124 ]; then row "$1" FAIL "timed out after 1200 s in $(grep '^\[ RUN' "$log" | tail -1), see $log"; return; fi
  if [ $rc -gt 1 ]; then row "$1" FAIL "exit $rc in $(grep '^\[ RUN' "$log" | tail -1 | awk '{ print $NF }'), see $log"; return; fi
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log")
  # gtest lists each failed test twice (where it ran and in the summary); the first has its time.
  if [ $rc -ne 0 ]; then row "$1" FAIL "$(grep -c '^\[  FAILED  \] [A-Za-z].* ([0-9]* ms)$' "$log") failed, see $log"
  elif [ -n "$skipped" ] && [ "$skipped" != 0 ]; then row "$1" FAIL "$skipped skipped (no skips allowed), see $log"
  elif [ -z "$passed" ] || [ "$passed" = 0 ]; then row "$1" FAIL "no test ran for $2"
  else row "$1" ok "$passed tests"; fi
}
if [ "$kind" = sim ]; then
  gtest kernels 'Sim/OpSim.*:SimDevice.*:DeviceUpdates.*'
  gtest cache 'Devices/CacheOnDevice.*sim'
else
  gtest kernels '*_cuda:CudaBackend*:GraphOpsCuda.*:RgnnConvDevices.*Cuda:CudaFeatureGather.*:PinnedFeatureStore.*'
  gtest cache 'Devices/CacheOnDevice.*cuda'
fi

# 4. trainers: the device against the CPU.
losses() { grep -o 'step *[0-9]* |.* loss [0-9.]*' "$1" | sed 's/ | epoch [0-9]*//' | awk '{ print $NF }'; }
trainer() {  # trainer NAME[:VARIANT] ARGS...
  local name=${1/:/-} program=${1%%:*}
  shift
  local bin="$build/examples/$program"
  [ -f "$bin" ] || bin="$build/examples/$program/$program"
  local ok=1
  for dev in cpu "$device"; do
    "$bin" "$@" --max-steps "$steps" --log-every 1 --device "$dev" --overwrite -o "$work/$name-${dev%%:*}" \
      > "$work/$name-${dev%%:*}.log" 2>&1 || ok=0
  done
  if [ $ok = 0 ]; then row "$name" FAIL "a run failed, see $work/$name-*.log"; return; fi
  local cpu_l dev_l
  cpu_l=$(losses "$work/$name-cpu.log")
  dev_l=$(losses "$work/$name-$kind.log")
  if [ "$(echo "$cpu_l" | wc -l)" != "$steps" ]; then row "$name" FAIL "expected $steps logged losses"; return; fi
  local worst
  worst=$(paste <(echo "$cpu_l") <(echo "$dev_l") |
          awk '{ d = $1 - $2; if (d < 0) d = -d; r = d / ($1 > 0 ? $1 : 1); if (r > w) w = r } END { printf "%.2e", w }')
  if [ "$kind" = sim ] && [ "$cpu_l" != "$dev_l" ]; then row "$name" FAIL "losses differ from the cpu's (worst $worst)"
  elif awk -v w="$worst" 'BEGIN { exit !(w > 0.02) }'; then row "$name" FAIL "losses off the cpu's by $worst"
  else row "$name" ok "$steps steps, last loss $(echo "$dev_l" | tail -1) (cpu $(echo "$cpu_l" | tail -1)), worst relative difference $worst"; fi
}
trainer train_gpt --preset tiny --batch-size 4 --seq-len 32 --eval-every 0 --sample-tokens 0
# bf16 autocast: on CUDA the linears' GEMMs and attention run in bf16 (cuBLASLt, the fused kernels).
trainer train_gpt:bf16 --preset tiny --batch-size 4 --seq-len 32 --eval-every 0 --sample-tokens 0 --bf16
trainer train_bert --preset tiny --batch-size 4 --seq-len 32 --eval-every 0
trainer train_resnet --config "$root/examples/train_resnet/configs/tiny.textproto" --ckpt-every 0 --eval-every 0
trainer train_gnn:sage --ckpt-every 0 --eval-every 10
trainer train_gnn:gat --model gat --attention-dropout 0.1 --fanouts 10,10 --batch-size 256 --ckpt-every 0 \
  --eval-every 10

# 5. calibrate
profile="$work/$kind.textproto"
cal=(--device "$device" -o "$profile" --spill-dir "$work")
[ "$kind" = sim ] && cal+=(--memcpy-mib 64 --file-mib 128 --reps 2)
if "$build/tools/strata_calibrate" "${cal[@]}" > "$work/calibrate.log" 2>&1; then
  row calibrate ok "$(grep "^$device\|^${kind}:" "$work/calibrate.log" | head -1 | cut -c1-110); wrote $profile"
else
  row calibrate FAIL "see $work/calibrate.log"; finish
fi

# 6. planner: prediction against a measured planned step. On CUDA the small GPT at B=8 T=128 is a
# 4-8 ms step bound by kernel launches, whose host stores finish at times that vary run to run
# (on an H200, 4 of 8 runs measured 3-9 MB over a 23-27 MB prediction); B=32 T=512 is a ~25 ms
# step bound by the device, the regime the simulator models.
plan_shape=(--batch 8 --seq 128)
[ "$kind" = cuda ] && plan_shape=(--batch 32 --seq 512)
if "$build/tools/bench/strata_plan_bench" --device "$device" --hardware "$profile" --preset small "${plan_shape[@]}" \
     --budget 50% --rounds 5 --trace-steps 2 --only swap > "$work/plan.log" 2>&1; then
  read -r pred meas terr pact mact aerr < <(awk '$1 == "strata" { print $4, $5, $6, $10, $11, $12 }' "$work/plan.log")
  detail="step ${pred} s predicted, ${meas} s measured (${terr}); activation peak ${pact} MB predicted, ${mact} MB measured (${aerr})"
  if [ -z "${aerr:-}" ]; then row planner FAIL "no plan row in $work/plan.log"
  elif awk -v t="${terr%\%}" -v a="${aerr%\%}" 'BEGIN { if (t < 0) t = -t; if (a < 0) a = -a; exit !(t > 50 || a > 10) }'; then
    row planner FAIL "$detail"
  else row planner ok "$detail"; fi
else
  row planner FAIL "see $work/plan.log"
fi
finish
