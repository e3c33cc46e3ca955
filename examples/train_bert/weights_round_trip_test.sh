#!/usr/bin/env bash
# train_bert's Hugging Face weights in and out:
#   weights_round_trip_test.sh TRAIN_BERT WORKDIR
# 1. Two steps of the tiny preset, --export-hf: a model directory (model.safetensors, config.json).
# 2. --init-from that directory, --export-hf again without training: byte-identical weights, and
#    the shape (heads included, from config.json) taken from the files.
# 3. Continuing masked-LM training from the export starts where the first run ended: its first
#    held-out loss equals the first run's final one.
# 4. A size flag that disagrees with the file names the tensor and both shapes.
set -euo pipefail
source "$(dirname "$0")/../common/test_helpers.sh"
train_bert=$1
fresh_work "$2"
common=(--batch-size 4 --seq-len 32 --eval-batches 2 --dropout 0)

"$train_bert" --preset tiny "${common[@]}" --max-steps 2 --eval-every 0 -o "$work/first" --export-hf "$work/hf1" \
  > "$work/first.log" 2>&1 || { cat "$work/first.log"; fail "the first run"; }
grep -q '"num_attention_heads": 4' "$work/hf1/config.json" || fail "config.json: $(cat "$work/hf1/config.json")"
"$train_bert" --init-from "$work/hf1" --export-only --export-hf "$work/hf2" -o "$work/second" \
  > "$work/second.log" 2>&1 || { cat "$work/second.log"; fail "the import"; }
cmp "$work/hf1/model.safetensors" "$work/hf2/model.safetensors" || fail "export -> import -> export changed the weights"
echo "export -> import -> export: byte-identical model.safetensors"

"$train_bert" --init-from "$work/hf1" "${common[@]}" --max-steps 1 --eval-every 1 --lr 1e-12 --warmup-steps 0 \
  -o "$work/third" > "$work/third.log" 2>&1 || { cat "$work/third.log"; fail "the continued run"; }
held_out() { sed -n 's/.*held-out mlm loss \([0-9.]*\).*/\1/p' "$1" | tail -1; }
first=$(held_out "$work/first.log") third=$(sed -n 's/.* val \([0-9.]*\) .*/\1/p' "$work/third.log" | head -1)
[ -n "$first" ] && [ "$first" = "$third" ] || fail "held-out loss: first run ended at '$first', the continuation starts at '$third'"
echo "continuing from the export: held-out loss $third, where the first run ended"

if "$train_bert" --init-from "$work/hf1" --hidden 32 --max-steps 1 -o "$work/bad" > "$work/bad.log" 2>&1; then
  fail "--hidden 32 was accepted"
fi
grep -q "bert.embeddings.word_embeddings.weight is \[260, 64\] in the file, \[260, 32\] with --hidden 32" "$work/bad.log" ||
  fail "the mismatch message: $(cat "$work/bad.log")"
echo "a disagreeing --hidden names bert.embeddings.word_embeddings.weight and both shapes"
