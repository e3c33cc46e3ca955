#!/usr/bin/env bash
# A trainer's model state placed off the device (--optimizer-state, --weights, --gradients) on the
# sim device:
#   model_state_test.sh TRAINER WORKDIR TRAINER_ARGS...
# 1. Three steps with the optimizer state on the device, in host memory and in a spill file, with
#    the blocks' weights and gradients in host memory, and with everything on NVMe, log the same
#    losses and write byte-identical checkpoints.
# 2. Checkpoints resume across placements (NVMe -> host, device -> NVMe, everything on NVMe ->
#    weights and gradients in host memory): each ends byte-identical to four steps on the device.
# 3. A placement on NVMe without --spill-dir is refused in one line.
# TRAINER_ARGS must fix the learning-rate schedule's length (--lr-decay-steps).
set -euo pipefail
source "$(dirname "$0")/test_helpers.sh"
trainer=$1
fresh_work "$2"
mkdir -p "$work/spill"
shift 2
args=("$@")

train() {  # train NAME STEPS [placement and other flags]: runs into $work/NAME on sim, log in $work/NAME.log
  local name=$1 steps=$2
  shift 2
  "$trainer" "${args[@]}" --device sim --spill-dir "$work/spill" \
    --max-steps "$steps" --log-every 1 -o "$work/$name" "$@" >> "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name: $trainer exited non-zero"; }
}
same_run() {  # same_run NAME: NAME's losses and checkpoint are device3's
  [ "$(losses device3)" = "$(losses "$1")" ] || fail "losses differ: device $(losses device3) vs $1 $(losses "$1")"
  same_checkpoint device3 "$1"
}

train device3 3
[ "$(losses device3 | wc -l)" -eq 3 ] || fail "expected 3 logged losses: $(cat "$work/device3.log")"
for where in host nvme; do
  train "${where}3" 3 --optimizer-state "$where"
  grep -q "optimizer state: $where" "$work/${where}3.log" || fail "$where: no placement line: $(cat "$work/${where}3.log")"
  same_run "${where}3"
done
grep -q "optimizer state: .* read, .* written" "$work/nvme3.log" || fail "no NVMe traffic line: $(cat "$work/nvme3.log")"
echo "3 steps: losses and checkpoints equal with the optimizer state on the device, the host and NVMe"
losses nvme3

train paged_host3 3 --weights host --gradients host
grep -q "model state: weights host, gradients host: [1-9]" "$work/paged_host3.log" ||
  fail "no paging line: $(cat "$work/paged_host3.log")"
same_run paged_host3
train all_nvme3 3 --weights nvme --gradients nvme --optimizer-state nvme
grep -q "model state: weights [0-9.]* [KMG]*i*B in" "$work/all_nvme3.log" || fail "no paging traffic line: $(cat "$work/all_nvme3.log")"
same_run all_nvme3
echo "3 steps: losses and checkpoints equal with the weights and gradients in host memory, and with everything on NVMe"
grep "model state: weights [0-9]" "$work/all_nvme3.log"

train device4 4
train nvme_to_host 2 --optimizer-state nvme
train nvme_to_host 4 --optimizer-state host --resume
train device_to_nvme 2
train device_to_nvme 4 --optimizer-state nvme --resume
train all_nvme_to_host 2 --weights nvme --gradients nvme --optimizer-state nvme
train all_nvme_to_host 4 --weights host --gradients host --resume
same_checkpoint device4 nvme_to_host
same_checkpoint device4 device_to_nvme
same_checkpoint device4 all_nvme_to_host
echo "checkpoints cross placements: nvme -> host, device -> nvme and everything on nvme -> weights and gradients on the host resumed at step 2 equal 4 steps on the device"

for flag in --optimizer-state --weights; do
  if "$trainer" "${args[@]}" --device sim "$flag" nvme --max-steps 1 -o "$work/no_dir" > "$work/no_dir.log" 2>&1; then
    fail "$flag nvme without --spill-dir trained"
  fi
  grep -q -- "$flag nvme needs --spill-dir" "$work/no_dir.log" || fail "no reason given: $(cat "$work/no_dir.log")"
done
echo "refused without a spill directory: $(grep -m1 'needs --spill-dir' "$work/no_dir.log")"
