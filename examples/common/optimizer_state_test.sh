#!/usr/bin/env bash
# A trainer's optimizer state placed off the device (--optimizer-state) on the sim device:
#   optimizer_state_test.sh TRAINER WORKDIR TRAINER_ARGS...
# 1. Three steps with the state on the device, in host memory and in a spill file log the same
#    losses and write byte-identical checkpoints.
# 2. A checkpoint written with the state on NVMe resumes with it in host memory, and one written
#    with it on the device resumes onto NVMe: both end byte-identical to four steps on the device.
# 3. --optimizer-state nvme without --spill-dir is refused in one line.
# TRAINER_ARGS must fix the learning-rate schedule's length (--lr-decay-steps).
set -euo pipefail
trainer=$1 work=$2
shift 2
args=("$@")
rm -rf "$work"
mkdir -p "$work/spill"
export OMP_NUM_THREADS=2

fail() { echo "FAIL: $*"; exit 1; }
train() {  # train NAME PLACEMENT STEPS [more flags]: runs into $work/NAME on sim, log in $work/NAME.log
  local name=$1 where=$2 steps=$3
  shift 3
  "$trainer" "${args[@]}" --device sim --optimizer-state "$where" --spill-dir "$work/spill" \
    --max-steps "$steps" --log-every 1 -o "$work/$name" "$@" >> "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name: $trainer exited non-zero"; }
}
losses() { grep -o 'step *[0-9]* |.* loss [0-9.]*' "$work/$1.log" | sed 's/ | epoch [0-9]*//'; }
same_checkpoint() {
  cmp "$work/$1/checkpoint/tensors.bin" "$work/$2/checkpoint/tensors.bin" ||
    fail "the checkpoints of $1 and $2 differ"
}

train device3 device 3
[ "$(losses device3 | wc -l)" -eq 3 ] || fail "expected 3 logged losses: $(cat "$work/device3.log")"
for where in host nvme; do
  train "${where}3" "$where" 3
  grep -q "optimizer state: $where" "$work/${where}3.log" || fail "$where: no placement line: $(cat "$work/${where}3.log")"
  [ "$(losses device3)" = "$(losses "${where}3")" ] ||
    fail "losses differ: device $(losses device3) vs $where $(losses "${where}3")"
  same_checkpoint device3 "${where}3"
done
grep -q "optimizer state: .* read, .* written" "$work/nvme3.log" || fail "no NVMe traffic line: $(cat "$work/nvme3.log")"
echo "3 steps: losses and checkpoints equal with the optimizer state on the device, the host and NVMe"
losses nvme3

train device4 device 4
train nvme_to_host nvme 2
train nvme_to_host host 4 --resume
train device_to_nvme device 2
train device_to_nvme nvme 4 --resume
same_checkpoint device4 nvme_to_host
same_checkpoint device4 device_to_nvme
echo "checkpoints cross placements: nvme -> host and device -> nvme resumed at step 2 equal 4 steps on the device"

if "$trainer" "${args[@]}" --device sim --optimizer-state nvme --max-steps 1 -o "$work/no_dir" > "$work/no_dir.log" 2>&1; then
  fail "--optimizer-state nvme without --spill-dir trained"
fi
grep -q "needs --spill-dir" "$work/no_dir.log" || fail "no reason given: $(cat "$work/no_dir.log")"
echo "refused without a spill directory: $(grep -m1 'needs --spill-dir' "$work/no_dir.log")"
