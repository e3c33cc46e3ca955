#!/usr/bin/env bash
# Data-parallel benchmark: the same global batch trained by 2 ranks x 1 thread (mpirun, DDP)
# and by 1 rank x 2 threads (gradient accumulation 2), on the small GPT preset. Prints a
# table of step time and tokens/s (steps 2..N), their ratio, and the share of the all-reduce
# time hidden behind backward. Reproduce:
#   tools/bench/dp_bench.sh [build-dir] [steps] [repeats]
set -euo pipefail
build=${1:-build}
steps=${2:-30}
repeats=${3:-2}
tg=$build/examples/train_gpt
[ -x "$tg" ] || { echo "dp_bench: $tg not built"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
args=(--preset small --batch-size 8 --seq-len 128 --max-steps "$steps" --log-every 1000 --eval-every 0
      --sample-tokens 0 --dropout 0)

declare -A ms tok ar ex hid
run() {  # name, command...: one run; keeps the fastest (other load only slows runs down)
  local name=$1 log=$work/$1.log; shift
  "$@" > "$log" 2>&1 || { cat "$log"; exit 1; }
  local t; t=$(sed -n 's/^timing: \([0-9.]*\) ms\/step.*/\1/p' "$log")
  if [ -z "${ms[$name]:-}" ] || awk -v a="$t" -v b="${ms[$name]}" 'BEGIN{exit !(a < b)}'; then
    ms[$name]=$t
    tok[$name]=$(sed -n 's/^timing: [0-9.]* ms\/step, \([0-9]*\) tok\/s.*/\1/p' "$log")
    ar[$name]=$(sed -n 's/.*all-reduce \([0-9.]*\) ms\/step.*/\1/p' "$log")
    ex[$name]=$(sed -n 's/.*, \([0-9.]*\) ms of it exposed.*/\1/p' "$log")
    hid[$name]=$(sed -n 's/.*(\([0-9]*\)% hidden).*/\1/p' "$log")
  fi
}
dp=("${mpirun[@]}" -x OMP_NUM_THREADS=1 --bind-to core -np 2 "$tg" "${args[@]}")
for r in $(seq "$repeats"); do  # interleaved, so a burst of other load hits every config alike
  OMP_NUM_THREADS=2 run "1x2" "$tg" "${args[@]}" --grad-accum 2 -o "$work/single"
  # Passive OpenMP waiting: on a loaded machine spinning OpenMP threads stall each other.
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive run "1x2-passive" "$tg" "${args[@]}" --grad-accum 2 -o "$work/single"
  OMP_NUM_THREADS=1 run "2x1" "${dp[@]}" -o "$work/dp"
  OMP_NUM_THREADS=1 run "2x1-b4" "${dp[@]}" --bucket-mb 4 -o "$work/dp"
  OMP_NUM_THREADS=1 run "2x1-zero1" "${dp[@]}" --zero1 -o "$work/dp"
done

echo "GPT small (4 layers, C=256, T=128), global batch 16 x 128 tokens/step, $steps steps, best of $repeats"
printf "%-34s %10s %10s %8s %14s %12s %8s\n" config ms/step tok/s ratio all-reduce exposed hidden
for n in 1x2 1x2-passive 2x1 2x1-b4 2x1-zero1; do
  label=$n
  case $n in
    1x2) label="1 rank x 2 threads (grad-accum 2)" ;;
    1x2-passive) label="1 rank x 2 threads, passive wait" ;;
    2x1) label="2 ranks x 1 thread, 25 MB buckets" ;;
    2x1-b4) label="2 ranks x 1 thread, 4 MB buckets" ;;
    2x1-zero1) label="2 ranks x 1 thread, ZeRO-1" ;;
  esac
  ratio=$(awk -v a="${ms[1x2]}" -v b="${ms[$n]}" 'BEGIN{printf "%.2f", a / b}')
  printf "%-34s %10s %10s %8s %11s ms %9s ms %7s%%\n" "$label" "${ms[$n]}" "${tok[$n]}" "$ratio" \
    "${ar[$n]:--}" "${ex[$n]:--}" "${hid[$n]:--}"
done
echo "ratio = (1 rank x 2 threads step time) / (this step time); >1 means faster than 1 x 2."
echo "all-reduce = time on the communication thread per step, waiting for the other rank included;"
echo "exposed = what the step waited for it after backward; hidden = 1 - exposed / all-reduce."
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine inflates the 2-thread rows most)"
echo "command: tools/bench/dp_bench.sh $build $steps $repeats"
# The collective alone, against Open MPI's own MPI_Allreduce speed on the same machine.
"${mpirun[@]}" -x OMP_NUM_THREADS=1 --bind-to core -np 2 "$build/tests/dist/strata_mpi_check" bench 13 20 2>/dev/null || true
