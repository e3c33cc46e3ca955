#!/usr/bin/env bash
# train_bert on WordPiece ids:
#   wordpiece_test.sh TRAIN_BERT VOCAB_TXT CORPUS WORKDIR
# 1. Masked-LM with --vocab on CORPUS: the model's vocabulary is the file's, the batches its ids
#    (the run says so) and the held-out loss is per token; --export-hf writes the weights.
# 2. Classification from that export, its folder holding vocab.txt: the tokenizer comes from
#    --init-from alone. 240 generated lines "<label>\t<words>" of whole words of the vocabulary, the
#    label given by which of two keyword sets a line holds; 60 steps must reach 90% held-out accuracy,
#    above a byte-level run's: the same encoder, pretrained and exported the same way on the same
#    text, fine-tuned for as many steps on the same lines (each keyword is one WordPiece token).
# 3. Byte-level weights (260 rows) with a 1500-token vocabulary, and a vocabulary without [MASK],
#    are refused naming both figures / the missing token.
set -euo pipefail
source "$(dirname "$0")/../common/test_helpers.sh"
train_bert=$1 vocab=$2 corpus=$3
fresh_work "$4"
common=(--preset tiny --seq-len 32 --eval-batches 2 --dropout 0 --overwrite)

for i in 1 2 3 4 5 6 7 8 9 10; do cat "$corpus"; done > "$work/corpus.txt"  # enough for a held-out batch
"$train_bert" "${common[@]}" --vocab "$vocab" --text "$work/corpus.txt" --batch-size 8 --max-steps 4 --eval-every 0 \
  --export-hf "$work/hf" -o "$work/mlm" > "$work/mlm.log" 2>&1 || { cat "$work/mlm.log"; fail "masked-LM"; }
grep -q "WordPiece 1500 tokens" "$work/mlm.log" || fail "no WordPiece vocabulary: $(cat "$work/mlm.log")"
grep -q "final: step 4, .* nats/token" "$work/mlm.log" || fail "no per-token held-out loss: $(cat "$work/mlm.log")"
echo "masked-LM: $(grep final: "$work/mlm.log")"

cp "$vocab" "$work/hf/vocab.txt"
words=($(grep -E '^[a-z]{4,8}$' "$vocab" | head -30))
awk -v w="${words[*]}" 'BEGIN { srand(11); n = split(w, v)
  for (i = 0; i < 240; i++) {
    lab = int(rand() * 2); s = ""
    for (j = 0; j < 5; j++) s = s v[11 + int(rand() * (n - 10))] " "
    s = s v[1 + lab * 5 + int(rand() * 5)]
    for (j = 0; j < 3; j++) s = s " " v[11 + int(rand() * (n - 10))]
    print lab "\t" s } }' > "$work/data.tsv"
"$train_bert" "${common[@]}" --init-from "$work/hf" --classify-data "$work/data.tsv" --batch-size 32 \
  --max-steps 60 --log-every 20 --lr 3e-3 --warmup-steps 5 -o "$work/classify" > "$work/classify.log" 2>&1 \
  || { cat "$work/classify.log"; fail "classification"; }
grep -q "WordPiece 1500 tokens" "$work/classify.log" || fail "the --init-from folder's vocab.txt was not used"
a=$(sed -n 's/.*held-out accuracy \([0-9.]*\)%.*/\1/p' "$work/classify.log")
awk -v a="$a" 'BEGIN { exit !(a >= 90) }' || fail "held-out accuracy ${a}% (want >= 90%): $(cat "$work/classify.log")"
"$train_bert" "${common[@]}" --text "$work/corpus.txt" --batch-size 8 --max-steps 4 --eval-every 0 \
  --export-hf "$work/hf_bytes" -o "$work/mlm_bytes" > "$work/mlm_bytes.log" 2>&1 || fail "byte-level masked-LM"
"$train_bert" "${common[@]}" --init-from "$work/hf_bytes" --classify-data "$work/data.tsv" --batch-size 32 \
  --max-steps 60 --log-every 20 --lr 3e-3 --warmup-steps 5 -o "$work/classify_bytes" > "$work/classify_bytes.log" 2>&1 \
  || { cat "$work/classify_bytes.log"; fail "byte-level classification"; }
b=$(sed -n 's/.*held-out accuracy \([0-9.]*\)%.*/\1/p' "$work/classify_bytes.log")
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > b) }' || fail "WordPiece ${a}% is not above byte-level ${b}%"
echo "classification from the export: held-out accuracy ${a}% (byte-level, the same encoder and steps: ${b}%)"

"$train_bert" --preset tiny --max-steps 1 --batch-size 2 --seq-len 16 --eval-every 0 --export-hf "$work/bytes" \
  -o "$work/bytes_run" > /dev/null 2>&1 || fail "byte-level export"
if "$train_bert" "${common[@]}" --init-from "$work/bytes" --vocab "$vocab" --batch-size 2 --max-steps 1 -o "$work/mismatch" \
  > "$work/mismatch.log" 2>&1; then fail "260-row weights trained with a 1500-token vocabulary"; fi
grep -q "word_embeddings.weight has 260 rows, the vocabulary 1500 tokens" "$work/mismatch.log" \
  || fail "unclear refusal: $(cat "$work/mismatch.log")"
grep -v '^\[MASK\]$' "$vocab" > "$work/no_mask.txt"
if "$train_bert" "${common[@]}" --vocab "$work/no_mask.txt" --batch-size 2 --max-steps 1 -o "$work/no_mask" > "$work/no_mask.log" 2>&1; then
  fail "a vocabulary without [MASK] was taken"
fi
grep -q "has no \[MASK\] token" "$work/no_mask.log" || fail "unclear refusal: $(cat "$work/no_mask.log")"
echo "refused: $(tail -1 "$work/mismatch.log")"
