#!/usr/bin/env bash
# A trainer under mpirun against one process with the same global batch:
#   two_ranks_test.sh WORK CHECKPOINT_DIFF SKIP MPIRUN... -- TRAINER ARGS...
# `mpirun -np 2 TRAINER ARGS` and one process `TRAINER ARGS --grad-accum 2` train on the same
# data. Their logged losses (every step's "loss X") must agree to 1e-4, and their checkpoints'
# weights and optimizer state must be bit-identical (CHECKPOINT_DIFF: strata_checkpoint_diff),
# but for tensors whose names hold one of SKIP's comma-separated substrings ("-": none).
# The environment may change what one process runs and how close the checkpoints must be:
# SINGLE_ARGS (default "--grad-accum 2"), RANKS_ARGS (what only the mpirun run adds) and TOLERANCE
# (strata_checkpoint_diff --tolerance).
set -euo pipefail
work=$1 diff=$2 skip=$3
shift 3
mpirun=()
while [ "$1" != -- ]; do mpirun+=("$1"); shift; done
shift
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
read -r -a single_args <<< "${SINGLE_ARGS:---grad-accum 2}"
read -r -a ranks_args <<< "${RANKS_ARGS:-}"
"$@" "${single_args[@]}" --log-every 1 -o "$work/single" > "$work/single.log"
"${mpirun[@]}" -np 2 "$@" "${ranks_args[@]}" --log-every 1 -o "$work/dp" > "$work/dp.log"
grep -q "data parallel: 2 ranks" "$work/dp.log" || { echo "the mpirun run did not train on 2 ranks"; cat "$work/dp.log"; exit 1; }
if [[ " ${ranks_args[*]} " == *" --zero-stage 2 "* ]]; then
  grep -q "(ZeRO-2)" "$work/dp.log" || { echo "the mpirun run did not shard with ZeRO-2"; cat "$work/dp.log"; exit 1; }
fi

losses() { sed -n 's/.* step *\([0-9]*\) |.* loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
losses "$work/single.log" > "$work/single.losses"
losses "$work/dp.log" > "$work/dp.losses"
n=$(wc -l < "$work/single.losses")
[ "$n" -gt 0 ] && [ "$n" -eq "$(wc -l < "$work/dp.losses")" ] \
  || { echo "logged steps differ: $n in one process"; cat "$work/single.log" "$work/dp.log"; exit 1; }
paste "$work/single.losses" "$work/dp.losses" | awk '
  { d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4) { print "step " $1 ": single " $2 ", data parallel " $4; bad = 1 } }
  END { exit bad }'
skips=()
[ "$skip" = - ] || for s in ${skip//,/ }; do skips+=(--skip "$s"); done
[ -z "${TOLERANCE:-}" ] || skips+=(--tolerance "$TOLERANCE")
"$diff" "$work/single/checkpoint" "$work/dp/checkpoint" "${skips[@]}"
echo "losses of $n steps agree within 1e-4"
paste "$work/single.losses" "$work/dp.losses" | head -3
