#!/usr/bin/env bash
# train_bert --classify-data learns a keyword task, from scratch and from a pretrained encoder:
#   classify_test.sh TRAIN_BERT WORKDIR
# 400 generated lines "<label>\t<words>": label 0 sentences hold one of five positive words, label 1
# one of five negative words, among filler words. 300 steps of the tiny preset must reach 80%
# held-out accuracy (chance: 50%). Then the same from --init-from a masked-LM export (2 steps of
# train_bert --export-hf): the encoder loads and the run learns too.
set -euo pipefail
source "$(dirname "$0")/../common/test_helpers.sh"
train_bert=$1
fresh_work "$2"
awk 'BEGIN { srand(7); split("good great lovely fine superb", pos); split("bad awful dull poor terrible", neg)
  split("the film was a plot and cast of this one truly felt", fill)
  for (i = 0; i < 400; i++) {
    lab = int(rand() * 2); s = ""
    for (j = 0; j < 6; j++) s = s fill[int(rand() * 12) + 1] " "
    s = s (lab ? neg[int(rand() * 5) + 1] : pos[int(rand() * 5) + 1])
    for (j = 0; j < 3; j++) s = s " " fill[int(rand() * 12) + 1]
    print lab "\t" s } }' > "$work/data.tsv"
args=(--preset tiny --classify-data "$work/data.tsv" --batch-size 32 --seq-len 64 --max-steps 300 --log-every 100
      --lr 3e-3 --warmup-steps 20 --dropout 0)
accuracy() { sed -n 's/.*held-out accuracy \([0-9.]*\)%.*/\1/p' "$1"; }

"$train_bert" "${args[@]}" -o "$work/scratch" > "$work/scratch.log" 2>&1 || { cat "$work/scratch.log"; fail "from scratch"; }
a=$(accuracy "$work/scratch.log")
awk -v a="$a" 'BEGIN { exit !(a >= 80) }' || fail "held-out accuracy ${a}% from scratch (want >= 80%): $(cat "$work/scratch.log")"
echo "from scratch: held-out accuracy ${a}%"

"$train_bert" --preset tiny --max-steps 2 --batch-size 4 --seq-len 32 --eval-every 0 -o "$work/mlm" \
  --export-hf "$work/mlm_hf" > "$work/mlm.log" 2>&1 || { cat "$work/mlm.log"; fail "the masked-LM export"; }
"$train_bert" "${args[@]}" --init-from "$work/mlm_hf" -o "$work/pretrained" > "$work/pretrained.log" 2>&1 ||
  { cat "$work/pretrained.log"; fail "from the pretrained encoder"; }
grep -q "encoder from $work/mlm_hf" "$work/pretrained.log" || fail "the encoder was not loaded"
a=$(accuracy "$work/pretrained.log")
awk -v a="$a" 'BEGIN { exit !(a >= 80) }' || fail "held-out accuracy ${a}% from the encoder (want >= 80%)"
echo "from a pretrained encoder: held-out accuracy ${a}%"

if "$train_bert" --preset tiny --classify-data "$work/mlm.log" --max-steps 1 -o "$work/bad" > "$work/bad.log" 2>&1; then
  fail "a file that is no classification data was accepted"
fi
grep -q "line 1: expected '<label>\\\\t<text>'" "$work/bad.log" || fail "the bad-line message: $(cat "$work/bad.log")"
echo "a malformed line is refused naming the file and line"
