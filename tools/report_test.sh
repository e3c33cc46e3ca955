#!/usr/bin/env bash
# train_gpt --report under a --memory-budget with a --hardware profile, resumed once:
#   report_test.sh TRAIN_GPT STRATA_REPORT WORKDIR PROFILE (see tools/CMakeLists.txt).
set -euo pipefail
train_gpt=$1 report=$2 work=$3 profile=$4
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=2
args=(--preset tiny --seq-len 32 --batch-size 4 --eval-every 0 --sample-tokens 0 --log-every 1 --report "$work/report"
      --memory-budget 64M --hardware "$profile")
"$train_gpt" "${args[@]}" --max-steps 3 -o "$work/run" > "$work/first.log"
"$train_gpt" "${args[@]}" --max-steps 5 --resume -o "$work/run" > "$work/second.log"
fail() { echo "FAIL: $*"; exit 1; }
n=$(ls "$work/report" | grep -c '^events.out.tfevents\.') || true
[ "$n" -eq 2 ] || fail "$n event files, not one per run: $(ls "$work/report")"
head -1 "$work/report/metrics.csv" | grep -qx 'step,wall_time,tag,value' || fail "no CSV header"
[ "$(grep -c '^step,' "$work/report/metrics.csv")" -eq 1 ] || fail "the resumed run wrote a second header"
awk -F, '$3 == "train/loss" { printf "%d %.4f\n", $1, $4 }' "$work/report/metrics.csv" > "$work/csv.losses"
"$report" "$work/report" --scalars | awk '$1 == "train/loss" { printf "%d %.4f\n", $2, $3 }' > "$work/events.losses"
cat "$work/first.log" "$work/second.log" | sed -n 's/.* step *\([0-9]*\) | loss \([0-9.]*\) .*/\1 \2/p' > "$work/log.losses"
[ "$(cut -d' ' -f1 "$work/csv.losses" | tr '\n' ' ')" = "1 2 3 4 5 " ] || fail "CSV steps: $(cat "$work/csv.losses")"
cmp -s "$work/csv.losses" "$work/events.losses" || fail "CSV and event files differ: $(paste "$work/csv.losses" "$work/events.losses")"
cmp -s "$work/csv.losses" "$work/log.losses" || fail "CSV and step lines differ: $(paste "$work/csv.losses" "$work/log.losses")"
for tag in train/lr train/grad_norm time/step_seconds memory/saved_activations_peak_mb memory/step_peak_mb \
           memory/host_pool_peak_mb \
           train/tokens_per_s; do
  [ "$("$report" "$work/report" --scalars | grep -c "^$tag ")" -eq 5 ] || fail "$tag is not in every step's events"
done

# MFU = tokens/s x (6 N + 6 L C T) / the profile's f32 matmul peak, N from the step log, L2 C64 T32.
params=$(sed -n 's/^ *\([0-9]*\) parameters,.*/\1/p' "$work/first.log")
peak=$(grep -A1 '^matmul_flops_fp32' "$profile" | sed -n 's/.*value: *\([0-9.e+]*\).*/\1/p')
[ -n "$params" ] && [ -n "$peak" ] || fail "no parameter count ($params) or peak ($peak)"
awk -F, -v f=$((6 * params + 6 * 2 * 64 * 32)) -v peak="$peak" '
  $3 == "train/tokens_per_s" { tok[$1] = $4 } $3 == "train/mfu" { mfu[$1] = $4 }
  END { n = 0; for (s in mfu) { want = tok[s] * f / peak; d = mfu[s] - want; if (d < 0) d = -d
                                 if (d > 1e-6 * want) { print "step " s ": mfu " mfu[s] ", want " want; exit 1 }; n++ }
        if (n != 5) { print n " steps with train/mfu"; exit 1 } }' "$work/report/metrics.csv" || fail "MFU"
grep -q '| MFU [0-9.]*% |' "$work/second.log" || fail "no MFU on the step lines"

# The page: every plot present and holding data, the budget's plan drawn block by block.
"$report" "$work/report" > "$work/html.log" || fail "strata_report: $(cat "$work/html.log")"
html="$work/report/report.html"
for id in loss step_time throughput mfu learning_rate memory_by_category memory_by_tier cache_traffic cache_time; do
  grep -q "<figure class=\"plot\" id=\"$id\" data-series=\"[1-9][0-9]*\" data-points=\"[1-9][0-9]*\"" "$html" ||
    fail "plot $id missing or empty"
done
[ "$(grep -c '<polyline class="series"' "$html")" -ge 20 ] || fail "fewer than 20 curves drawn"
[ "$(grep -o 'data-points="5"' "$html" | wc -l)" -ge 1 ] || fail "no plot holds the 5 steps"
grep -q '<section id="plan" data-blocks="2"' "$html" || fail "the plan's 2 blocks are not drawn"
[ "$(grep -c '<rect class="block"' "$html")" -eq 2 ] || fail "not one cell per block"
! grep -q '<script\|src="http\|href="http' "$html" || fail "the page is not self-contained"
echo "$n event files, 5 losses agree (CSV, events, step lines), MFU agrees, the page holds every plot"
