#!/usr/bin/env bash
# Data-parallel train_gpt against a single process with the same global batch:
#   train_gpt_dp_test.sh MODE TRAIN_GPT WORKDIR MPIRUN...
# MODE ddp | zero1: `mpirun -np 2` (B=4, grad_accum 1) and one process (B=4, grad_accum 2)
#   train 10 steps on the same data; their logged losses must agree to 1e-4 and the final
#   weights and AdamW state (the checkpoints' tensors.bin) must be bit-identical: reductions
#   are summed in rank order and 0.5-scaled micro-batch losses are exact.
# MODE nvme: both runs offload every saved activation to an NVMe spill arena per rank
#   (--cache-policy nvme); the same equalities must hold.
# MODE sim: the two ranks train on sim:0 and sim:1 (--device sim: each rank's local index), their
#   gradients all-reduced over MPI from the sim devices' memory; the single process trains on the
#   CPU. The same equalities must hold.
# MODE zero2: the two ranks train on sim devices with --zero-stage 2 (gradients reduce-scattered
#   and kept as spans, AdamW's state sharded, clipping over every rank's spans); the same
#   equalities must hold.
# MODE zero2_nvme: the same, each rank's shard of AdamW's state in a spill file (ZeRO-2 with
#   ZeRO-Offload's NVMe state); the same equalities must hold.
# MODE zero3: the two ranks train on sim devices with --zero-stage 3 (each rank keeps its span of
#   every weight, gathered per layer in forward and backward, beside ZeRO-2's gradient and state
#   spans; evaluation and checkpoints gather them on every rank); the same equalities must hold.
# MODE zero1_budget: the two ranks train with --zero-stage 1 on sim devices of 26 MiB, where
#   keeping everything runs out of memory, under --memory-budget 26M: the budget's plan moves each
#   rank's shard of AdamW's state to host memory (and recomputes activations); the same equalities
#   must hold.
# MODE resume (resume_zero2): 2 ranks with ZeRO-1 (ZeRO-2) train 5 steps and checkpoint; one
#   process resumes the checkpoint for steps 6-10 and must end bit-identical to the single-process
#   run.
# MODE resume_zero3: the same with ZeRO-3, resumed by the 2 ranks with ZeRO-3 (each loads the
#   whole weights and keeps its span of them).
set -euo pipefail
mode=$1 train_gpt=$2 work=$3
shift 3
mpirun=("$@")
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
model=(--preset tiny --seq-len 32)
if [ "$mode" = zero1_budget ]; then  # model state big enough for the budget to move
  model=(--preset small --n-layer 2 --seq-len 64)
fi
if [ "$mode" = nvme ]; then  # a model whose activations are big enough to reach the arena
  model=(--preset small --n-layer 2 --seq-len 64 --cache-policy nvme --cache-min 0 --spill-dir "$work"
         --spill-arena 64M)
fi
common=("${model[@]}" --batch-size 4 --log-every 1 --eval-every 0 --sample-tokens 0 --dropout 0
        --lr-decay-steps 10 --warmup-steps 2)
"$train_gpt" "${common[@]}" --max-steps 10 --grad-accum 2 -o "$work/single" > "$work/single.log"
case $mode in
  ddp | nvme) "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 -o "$work/dp" > "$work/dp.log" ;;
  sim)
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --device sim -o "$work/dp" > "$work/dp.log"
    grep -q "device sim:0" "$work/dp.log" || { echo "rank 0 did not train on sim:0"; cat "$work/dp.log"; exit 1; }
    ;;
  zero1) "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --zero1 -o "$work/dp" > "$work/dp.log" ;;
  zero2)
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --device sim --zero-stage 2 -o "$work/dp" \
      > "$work/dp.log"
    grep -q "(ZeRO-2)" "$work/dp.log" || { echo "the ranks did not run ZeRO-2"; cat "$work/dp.log"; exit 1; }
    ;;
  zero2_nvme)
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --device sim --zero-stage 2 \
      --optimizer-state nvme --spill-dir "$work" -o "$work/dp" > "$work/dp.log"
    grep -q "(ZeRO-2)" "$work/dp.log" && grep -q "optimizer state: nvme" "$work/dp.log" \
      || { echo "the ranks did not run ZeRO-2 with their shards' state on NVMe"; cat "$work/dp.log"; exit 1; }
    ;;
  zero3)
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --device sim --zero-stage 3 -o "$work/dp" \
      > "$work/dp.log"
    grep -q "(ZeRO-3)" "$work/dp.log" || { echo "the ranks did not run ZeRO-3"; cat "$work/dp.log"; exit 1; }
    ;;
  zero1_budget)
    sim=(--device sim --sim-memory 26M --zero-stage 1)
    if "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 2 "${sim[@]}" -o "$work/keep" > "$work/keep.log" 2>&1; then
      echo "keeping everything fit the 26 MiB sim devices"; exit 1
    fi
    grep -q "out of memory" "$work/keep.log" || { echo "no out-of-memory error"; cat "$work/keep.log"; exit 1; }
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 "${sim[@]}" --memory-budget 26M -o "$work/dp" \
      > "$work/dp.log"
    grep -q "model state: weights device, gradients device, optimizer state host" "$work/dp.log" \
      || { echo "the budget did not move the shards' state to host memory"; cat "$work/dp.log"; exit 1; }
    ;;
  resume_zero3)
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 5 --zero-stage 3 -o "$work/dp" > "$work/dp_first.log"
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 10 --zero-stage 3 --resume -o "$work/dp" \
      > "$work/dp.log"
    ;;
  resume | resume_zero2)
    zero=$([ "$mode" = resume ] && echo --zero1 || echo "--zero-stage 2")
    # shellcheck disable=SC2086
    "${mpirun[@]}" -np 2 "$train_gpt" "${common[@]}" --max-steps 5 $zero -o "$work/dp" > "$work/dp_first.log"
    "$train_gpt" "${common[@]}" --max-steps 10 --grad-accum 2 --resume -o "$work/dp" > "$work/dp.log"
    grep -q "written by 2 rank(s), resuming on 1" "$work/dp.log" || { echo "no world-size note on resume"; exit 1; }
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
case $mode in
  nvme) for log in single dp; do
          grep -Eq "cache: nvme [1-9][0-9]*/[1-9][0-9]* MB out/in" "$work/$log.log" \
            || { echo "the $log run did not offload to NVMe"; cat "$work/$log.log"; exit 1; }
        done
        grep -h "cache: nvme" "$work/dp.log" | head -2 ;;
esac

losses() { sed -n 's/.* step *\([0-9]*\) | loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
first=$([[ "$mode" = resume* ]] && echo 6 || echo 1)
losses "$work/single.log" | awk -v f="$first" '$1 >= f' > "$work/single.losses"
losses "$work/dp.log" > "$work/dp.losses"
n=$(wc -l < "$work/dp.losses")
[ "$n" -eq $((11 - first)) ] || { echo "expected $((11 - first)) logged steps from the data-parallel run, got $n"; cat "$work/dp.log"; exit 1; }
paste "$work/single.losses" "$work/dp.losses" | awk '
  { d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4) { print "step " $1 ": single " $2 ", data parallel " $4; bad = 1 } }
  END { exit bad }'
cmp "$work/single/checkpoint/tensors.bin" "$work/dp/checkpoint/tensors.bin"
echo "$mode: losses of steps $first-10 agree within 1e-4; weights and optimizer state bit-identical"
paste "$work/single.losses" "$work/dp.losses" | head -3
