#!/usr/bin/env bash
# train_gpt's pretrained weights in and out, on the repository's GPT-2 fixture (weights a PyTorch
# script wrote in Hugging Face's layout and in llm.c's format):
#   weights_round_trip_test.sh TRAIN_GPT FIXTURE_DIR WORKDIR
# 1. --init-from the HF safetensors, --export-llmc: byte-identical to the fixture's llm.c file.
# 2. Export, import, export again, through either format: byte-identical files.
# 3. --sample-only from the weights gives the same text on cpu and sim.
# 4. A size flag that disagrees with the file names the tensor and both shapes.
set -euo pipefail
source "$(dirname "$0")/../common/test_helpers.sh"
train_gpt=$1 fixtures=$2
fresh_work "$3"
gpt() { "$train_gpt" "$@" -o "$work/run" 2>&1; }

gpt --init-from "$fixtures/gpt2_tiny.safetensors" --n-head 4 --export-only --export-hf "$work/hf1" \
  --export-llmc "$work/a.bin" > "$work/1.log" || { cat "$work/1.log"; fail "export from the HF fixture"; }
cmp "$work/a.bin" "$fixtures/gpt2_tiny_f32.bin" || fail "the llm.c export differs from the fixture's llm.c file"
echo "HF fixture -> llm.c export: byte-identical to the fixture's llm.c file"

gpt --init-from "$work/hf1" --export-only --export-hf "$work/hf2" --export-llmc "$work/b.bin" > "$work/2.log" ||
  { cat "$work/2.log"; fail "import of the HF export"; }
gpt --init-from "$work/a.bin" --export-only --export-hf "$work/hf3" --export-llmc "$work/c.bin" > "$work/3.log" ||
  { cat "$work/3.log"; fail "import of the llm.c export"; }
for f in hf2/model.safetensors hf3/model.safetensors; do
  cmp "$work/hf1/model.safetensors" "$work/$f" || fail "$f differs from the first HF export"
done
for f in b.bin c.bin; do cmp "$work/a.bin" "$work/$f" || fail "$f differs from the first llm.c export"; done
grep -q '"n_head": 4' "$work/hf1/config.json" || fail "config.json lacks n_head: $(cat "$work/hf1/config.json")"
echo "export -> import -> export through HF and llm.c: byte-identical"

sample=(--init-from "$work/a.bin" --sample-only --sample-tokens 6 --prompt "0123" --seed 7)
gpt "${sample[@]}" --device cpu > "$work/cpu.log" || { cat "$work/cpu.log"; fail "sampling on cpu"; }
gpt "${sample[@]}" --device sim > "$work/sim.log" || { cat "$work/sim.log"; fail "sampling on sim"; }
[ "$(sed -n '/^sample:/,$p' "$work/cpu.log")" = "$(sed -n '/^sample:/,$p' "$work/sim.log")" ] ||
  fail "the samples differ: $(cat "$work/cpu.log") vs $(cat "$work/sim.log")"
echo "--sample-only: the same text on cpu and sim"

if gpt --init-from "$work/a.bin" --n-embd 32 --max-steps 1 > "$work/bad.log"; then fail "--n-embd 32 was accepted"; fi
grep -q "transformer.wte.weight is \[97, 20\] in the file, \[97, 32\] with --n-embd 32" "$work/bad.log" ||
  fail "the mismatch message: $(cat "$work/bad.log")"
echo "a disagreeing --n-embd names transformer.wte.weight and both shapes"
