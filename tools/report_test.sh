#!/usr/bin/env bash
# train_gpt --report, resumed once: report_test.sh TRAIN_GPT STRATA_REPORT WORKDIR (see tools/CMakeLists.txt).
set -euo pipefail
train_gpt=$1 report=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=2
args=(--preset tiny --seq-len 32 --batch-size 4 --eval-every 0 --sample-tokens 0 --log-every 1 --report "$work/report")
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
echo "$n event files, 5 losses agree (CSV, events, step lines)"
