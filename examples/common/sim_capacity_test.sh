#!/usr/bin/env bash
# The product's point on a device with too little memory, shown on the sim device:
#   sim_capacity_test.sh TRAINER WORKDIR FRACTION TRAINER_ARGS...
# A run keeping every activation on an unbounded sim device measures the device's step peak; the
# sim device then gets FRACTION of it as its capacity. Keeping everything there must stop with the out-of-memory error, which names
# --memory-budget; --memory-budget <capacity> must train, with the CPU run's losses and a
# byte-identical checkpoint (the budget's plan recomputes, which gives the same bits).
set -euo pipefail
source "$(dirname "$0")/test_helpers.sh"
trainer=$1 fraction=$3
fresh_work "$2"
shift 3
args=("$@" --log-every 1)

"$trainer" "${args[@]}" --device cpu -o "$work/cpu" > "$work/cpu.log" 2>&1 || { cat "$work/cpu.log"; fail "the cpu run failed"; }
"$trainer" "${args[@]}" --device sim -o "$work/sim" > "$work/sim.log" 2>&1 || { cat "$work/sim.log"; fail "the sim run failed"; }
peak_mb=$(grep -o 'step peak *[0-9.]* MB' "$work/sim.log" | awk '{ if ($3 > m) m = $3 } END { print m }')
capacity=$(awk -v p="$peak_mb" -v f="$fraction" 'BEGIN { printf "%.0f", p * 1e6 * f }')
budget=$(awk -v c="$capacity" -v f="${BUDGET_OF_CAPACITY:-1}" 'BEGIN { printf "%.0f", c * f }')
echo "keep-all step peak on sim ${peak_mb} MB; sim capacity ${capacity} bytes, budget ${budget} bytes"

if "$trainer" "${args[@]}" --device sim --sim-memory "$capacity" -o "$work/keep" > "$work/keep.log" 2>&1; then
  fail "keeping every activation fit a sim device of ${capacity} bytes: $(tail -3 "$work/keep.log")"
fi
grep -q "sim:0 out of memory: cannot allocate" "$work/keep.log" || fail "no out-of-memory error: $(tail -3 "$work/keep.log")"
grep -q -- "--memory-budget" "$work/keep.log" || fail "the error does not suggest --memory-budget"
grep "out of memory" "$work/keep.log"

"$trainer" "${args[@]}" --device sim --sim-memory "$capacity" --memory-budget "$budget" -o "$work/budget" \
  > "$work/budget.log" 2>&1 || { cat "$work/budget.log"; fail "the budget run failed"; }
grep -q "plan: budget" "$work/budget.log" || fail "no plan was made: $(cat "$work/budget.log")"
if [ -n "${BUDGET_LOG_SHOWS:-}" ]; then
  grep -E "$BUDGET_LOG_SHOWS" "$work/budget.log" || fail "the budget run's log does not show '$BUDGET_LOG_SHOWS'"
fi
[ "$(losses cpu)" = "$(losses budget)" ] || fail "losses differ: cpu $(losses cpu) vs budget $(losses budget)"
cmp "$work/cpu/checkpoint/tensors.bin" "$work/budget/checkpoint/tensors.bin" || fail "the checkpoints differ"
echo "--memory-budget $budget on sim: the cpu keep-all run's losses and checkpoint, bit for bit"
grep -o 'step peak *[0-9.]* MB' "$work/budget.log" | tail -1
