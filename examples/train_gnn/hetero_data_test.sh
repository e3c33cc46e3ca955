#!/usr/bin/env bash
# train_gnn --save-data on a typed graph writes it per type; --hetero-data reads it back and trains
# to the same losses: hetero_data_test.sh TRAIN_GNN WORKDIR
set -euo pipefail
train_gnn=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=2
args=(--model rgcn --max-steps 4 --log-every 1 --eval-every 0 --overwrite)
"$train_gnn" "${args[@]}" --typed-rmat-edges 3000 --save-data "$work/typed.safetensors" -o "$work/a" > "$work/a.log"
"$train_gnn" "${args[@]}" --hetero-data "$work/typed.safetensors" -o "$work/b" > "$work/b.log"
losses() { sed -n 's/.* step *\([0-9]*\) .*| loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
[ "$(losses "$work/a.log" | wc -l)" -eq 4 ] || { echo "FAIL: no step lines"; cat "$work/a.log"; exit 1; }
cmp -s <(losses "$work/a.log") <(losses "$work/b.log") ||
  { echo "FAIL: losses differ"; paste <(losses "$work/a.log") <(losses "$work/b.log"); exit 1; }
echo "typed graph saved per type and read back: 4 equal losses ($(losses "$work/b.log" | tail -1))"
