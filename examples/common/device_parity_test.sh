#!/usr/bin/env bash
# A trainer on another device against the CPU:
#   device_parity_test.sh TRAINER WORKDIR DEVICE TRAINER_ARGS...
# 1. Three steps on the CPU and on DEVICE log the same losses and write byte-identical
#    checkpoints (weights, optimizer state, data position, RNG): the sim device runs the CPU's
#    kernels, so nothing may differ.
# 2. Checkpoints cross devices: two steps on the CPU resumed for two more on DEVICE, and two on
#    DEVICE resumed on the CPU, both end byte-identical to four steps straight on the CPU.
# TRAINER_ARGS must fix the learning-rate schedule's length (--lr-decay-steps) so that runs of
# different lengths share it.
set -euo pipefail
source "$(dirname "$0")/test_helpers.sh"
trainer=$1 device=$3
fresh_work "$2"
shift 3
args=("$@")

train() {  # train NAME DEVICE STEPS [more flags]: runs into $work/NAME, log in $work/NAME.log
  local name=$1 dev=$2 steps=$3
  shift 3
  "$trainer" "${args[@]}" --device "$dev" --max-steps "$steps" --log-every 1 -o "$work/$name" "$@" \
    >> "$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name: $trainer exited non-zero"; }
}

train cpu3 cpu 3
train dev3 "$device" 3
grep -q "device $device" "$work/dev3.log" || fail "the run did not say it trains on $device"
[ "$(losses cpu3 | wc -l)" -eq 3 ] || fail "expected 3 logged losses: $(cat "$work/cpu3.log")"
[ "$(losses cpu3)" = "$(losses dev3)" ] || fail "losses differ: cpu $(losses cpu3) vs $device $(losses dev3)"
same_checkpoint cpu3 dev3
echo "3 steps: losses and checkpoints equal on cpu and $device"
losses dev3

train cpu4 cpu 4
train to_dev cpu 2
train to_dev "$device" 4 --resume
train to_cpu "$device" 2
train to_cpu cpu 4 --resume
grep -q "resumed from .* at step 2" "$work/to_dev.log" || fail "no resume on $device: $(cat "$work/to_dev.log")"
same_checkpoint cpu4 to_dev
same_checkpoint cpu4 to_cpu
echo "checkpoints cross devices: cpu -> $device and $device -> cpu resumed at step 2 equal 4 steps on the cpu"
