#!/usr/bin/env bash
# Bad input, probed end to end: each case builds a hostile input (a file, a folder or a flag) and
# runs a binary on it. Every case must end with exit 1 (never 0, never a signal), print its expected
# words, stay under an address-space ceiling (prlimit --as; the CUDA libraries the binaries link map
# about 1 GB of it, so a few bytes that ask for gigabytes fail the case) and leave the files that
# were there untouched.
#   bad_input_probe.sh BUILD_DIR WORK_DIR [--list]   (--list: print each case's exit code and output)
set -u
build=$1 work=$2 list=${3:-}
source=$(cd "$(dirname "$0")/../.." && pwd)
gnn=$build/examples/train_gnn/train_gnn gpt=$build/examples/train_gpt bert=$build/examples/train_bert/train_bert
plan=$build/tools/strata_plan shards=$build/tools/strata_text_to_shards
ceiling=$((3 * 1024 * 1024 * 1024))
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
export OMP_NUM_THREADS=1

# ---- inputs ----
w=$PWD
printf '' > empty.txt
printf 'src dst\n' > header_only.txt
printf '0\n1\n' > one_column.txt
printf '0 -1\n' > negative_id.txt
printf 'a b\nc d\n' > words.txt
printf '0 50000000\n' > far_id.txt
printf '0 1073741823\n' > far_id_2.txt
printf '0.5 1\n1 2\n' > float_first.txt
printf '0x1 0x2\n1 2\n' > hex_first.txt
printf '0 99999999999999999999\n' > overflow_id.txt
# 4096 bytes of a fixed linear congruential sequence: the same garbage on every run.
garbage() {
  local x=7 i oct
  for ((i = 0; i < 4096; i++)); do
    x=$(((x * 1103515245 + 12345) & 0x7fffffff))
    printf -v oct '%03o' $(((x >> 16) & 255))
    printf "\\$oct"
  done
}
garbage > garbage.txt
printf '0 1\n1 2\n2 0\n2 3\n3 0\n' > edges.txt
mkdir -p a_folder
printf '0,0,1.0\n1,1,2.0\n2,0,3.0\n3,1,4.0\n' > nodes.txt
printf 'id,label,f0\n' > nodes_header_only.txt
printf '0,0,1.0\n1,999999999,2.0\n2,0,3.0\n3,1,4.0\n' > nodes_huge_label.txt
printf '0,0,1.0\n1,1,nan\n2,0,3.0\n3,1,4.0\n' > nodes_nan.txt
printf '0,0,1.0\n1,1,inf\n2,0,3.0\n3,1,4.0\n' > nodes_inf.txt
printf '0,0,1.0\n1,1,2.0,5.0\n2,0,3.0\n3,1,4.0\n' > nodes_ragged.txt
printf '0,0,1.0\n1,0,2.0\n2,0,3.0\n3,0,4.0\n' > nodes_one_class.txt
printf '0,0,1.0\n1,1,2.0\n2,0,3.0\n1073741823,1,4.0\n' > nodes_far_id_2.txt
printf 'xyz' > bad_magic.gt
printf '\xe2\x9b\xbe\x20\x67\x74' > truncated.gt
head -c 20000000 /dev/zero | gzip -c > zeros.gt.gz
printf 'not gzip' > not_gzip.gt.gz
# OGB raw folders: a valid one, then one thing wrong in each copy.
make_ogb() {
  mkdir -p "$1/raw" "$1/split/random"
  printf '0,1\n1,2\n2,3\n3,0\n' > "$1/raw/edge.csv"
  printf '4\n' > "$1/raw/num-node-list.csv"
  printf '4\n' > "$1/raw/num-edge-list.csv"
  printf '0.5,1.0\n0.1,0.2\n0.3,0.4\n0.6,0.7\n' > "$1/raw/node-feat.csv"
  printf '0\n1\n0\n1\n' > "$1/raw/node-label.csv"
  printf '0\n1\n' > "$1/split/random/train.csv"
  printf '2\n' > "$1/split/random/valid.csv"
  printf '3\n' > "$1/split/random/test.csv"
}
make_ogb ogb_ok
make_ogb ogb_huge && printf '1073741824\n' > ogb_huge/raw/num-node-list.csv
make_ogb ogb_nan && printf '0.5,1.0\n0.1,nan\n0.3,0.4\n0.6,0.7\n' > ogb_nan/raw/node-feat.csv
make_ogb ogb_two_columns && printf '0,1\n1,0\n0,1\n1,0\n' > ogb_two_columns/raw/node-label.csv
make_ogb ogb_bad_edge && printf '0,1\n1,x\n' > ogb_bad_edge/raw/edge.csv
make_ogb ogb_split_overlap && printf '2\n3\n' > ogb_split_overlap/split/random/train.csv && printf '2\n3\n' > ogb_split_overlap/split/random/test.csv
make_ogb ogb_split_far && printf '0\n99\n' > ogb_split_far/split/random/train.csv
make_ogb ogb_no_raw && rm -rf ogb_no_raw/raw
mkdir -p planetoid
printf 'p0\t1\t0\tA\np1\t0\t1\tB\np2\t1\t1\tA\n' > planetoid/tiny.content
mkdir -p planetoid_nan && printf 'p0\tnan\t0\tA\np1\t0\t1\tB\n' > planetoid_nan/tiny.content && printf 'p0\tp1\n' > planetoid_nan/tiny.cites
mkdir -p kg_missing kg_two_columns kg_empty
printf 'a\tr\n' > kg_two_columns/train.txt && cp kg_two_columns/train.txt kg_two_columns/valid.txt && cp kg_two_columns/train.txt kg_two_columns/test.txt
: > kg_empty/train.txt && : > kg_empty/valid.txt && : > kg_empty/test.txt
mkfifo a_fifo
printf 'keep me\n' > keep.txt
mkdir -p old_run/checkpoint && printf 'not an index' > old_run/checkpoint/index.pb
printf 'this is not a config {' > broken.cfg
printf 'some text for shards\n' > text.txt
mkdir -p shards_there && printf 'x' > shards_there/train_000000.bin
# An llm.c model file's header (magic 20240326, version 3), cut short.
printf '\xc6\xd7\x34\x01\x03\x00\x00\x00' > gpt2.bin
"$gpt" --preset tiny --max-steps 1 --eval-every 0 --sample-tokens 0 -o "$w/out/hf_source" --export-hf "$w/hf_dir" > /dev/null 2>&1 ||
  { echo "could not make a Hugging Face folder to probe with"; exit 2; }
"$bert" --preset tiny --max-steps 1 --eval-every 0 -o "$w/out/bert_source" --export-hf "$w/out/bert_hf" > /dev/null 2>&1 ||
  { echo "could not make a Hugging Face BERT folder to probe with"; exit 2; }
# A train_gnn checkpoint and a feature file, both of the default data with seed 1337.
"$gnn" --max-steps 1 --eval-every 0 --fanouts 5,5 --feature-store file --feature-file "$w/features_1337.npy" \
  -o "$w/gnn_run" > /dev/null 2>&1 || { echo "could not train a GNN to probe with"; exit 2; }

# ---- cases: name, expected words (an extended regex), command ----
# Every file that was there before the case (runs write only under out/), and the FIFO still a FIFO.
inputs_digest() {
  { find "$w" -path "$w/out" -prune -o -type f -print0 | sort -z | xargs -0 md5sum; [ -p "$w/a_fifo" ] && echo fifo; } |
    md5sum
}
cases=0 failed=0
run_case() {
  local name=$1 expect=$2
  shift 2
  cases=$((cases + 1))
  local before after out rc
  before=$(inputs_digest)
  out=$(timeout 60 prlimit --as=$ceiling -- "$@" 2>&1)
  rc=$?
  after=$(inputs_digest)
  if [ -n "$list" ]; then
    printf '%-32s rc=%-3s %s\n' "$name" "$rc" "$(printf '%s' "$out" | grep -v '^  ' | tail -2 | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  local why=""
  if [ $rc -ne 1 ]; then why="exit $rc (want 1)"
  elif ! printf '%s' "$out" | grep -Eq -- "$expect"; then why="no '$expect' in the output"
  elif [ "$before" != "$after" ]; then why="files that were there changed"
  fi
  if [ -n "$why" ]; then
    failed=$((failed + 1))
    printf 'FAIL %s: %s\n  %s\n  output: %s\n' "$name" "$why" "$*" "$(printf '%s' "$out" | tail -5)"
  fi
}
o() { echo "$w/out/$1"; }  # a case's output folder
g() { run_case "$1" "$2" "$gnn" --max-steps 1 --overwrite -o "$(o "$1")" "${@:3}"; }  # train_gnn with flags

# train_gnn: edge lists
g edges_missing "no_such.txt.*(does not exist|cannot open|No such)" --edge-list no_such.txt
g edges_folder "'a_folder' is not a regular file" --edge-list a_folder
g edges_empty "empty.txt" --edge-list empty.txt
g edges_header_only "header_only.txt" --edge-list header_only.txt
g edges_one_column "one_column.txt:1: expected 2 fields" --edge-list one_column.txt
g edges_negative_id "negative_id.txt:1: node id -1 out of range" --edge-list negative_id.txt
g edges_words "words.txt" --edge-list words.txt
g edges_far_id "--max-nodes" --edge-list far_id.txt
g edges_far_id_2 "--max-nodes" --edge-list far_id_2.txt
g edges_float_first "float_first.txt:1: source id '0.5' is not an integer" --edge-list float_first.txt
g edges_hex_first "hex_first.txt:1: source id '0x1' is not an integer" --edge-list hex_first.txt
g edges_overflow_id "overflow_id.txt:1: destination id .* is not an integer" --edge-list overflow_id.txt
g edges_garbage "garbage.txt" --edge-list garbage.txt
# train_gnn: node files
g nodes_missing "no_such_nodes.csv" --edge-list edges.txt --node-file no_such_nodes.csv
g nodes_header_only "nodes_header_only.txt" --edge-list edges.txt --node-file nodes_header_only.txt
g nodes_far_id_2 "--max-nodes" --edge-list edges.txt --node-file nodes_far_id_2.txt
g nodes_huge_label "nodes_huge_label.txt.*999999999" --edge-list edges.txt --node-file nodes_huge_label.txt
g nodes_nan "nodes_nan.txt:2: feature column 0 is nan" --edge-list edges.txt --node-file nodes_nan.txt
g nodes_inf "nodes_inf.txt:2: feature column 0 is inf" --edge-list edges.txt --node-file nodes_inf.txt
g nodes_ragged "nodes_ragged.txt:2: expected 3 fields" --edge-list edges.txt --node-file nodes_ragged.txt
g nodes_one_class "every labelled node is in class 0; a classifier needs two or more classes" --edge-list edges.txt --node-file nodes_one_class.txt
g nodes_without_edges "--node-file" --node-file nodes.txt
# train_gnn: graph-tool files
g gt_missing "no_such.gt" --graph no_such.gt
g gt_empty "empty.txt" --graph empty.txt
g gt_bad_magic "bad_magic.gt" --graph bad_magic.gt
g gt_truncated "truncated.gt" --graph truncated.gt
g gt_gz_zeros "zeros.gt.gz" --graph zeros.gt.gz
g gt_not_gzip "not_gzip.gt.gz" --graph not_gzip.gt.gz
# train_gnn: OGB folders
g ogb_missing "no_such_ogb" --ogb no_such_ogb
g ogb_no_raw "ogb_no_raw" --ogb ogb_no_raw
g ogb_huge "--max-nodes|1073741824" --ogb ogb_huge
g ogb_nan "node-feat.csv: feature row 1, column 1 is nan" --ogb ogb_nan
g ogb_two_columns "its node-label file has 2 columns per node" --ogb ogb_two_columns
g ogb_bad_edge "edge.csv:2: value 'x' is not an integer" --ogb ogb_bad_edge
g ogb_split_overlap "node 2 is in both train and valid" --ogb ogb_split_overlap
g ogb_split_missing "'ogb_ok': no split folder 'ogb_ok/split/nope'" --ogb ogb_ok --ogb-split nope
g ogb_split_without_ogb "--ogb-split needs --ogb" --ogb-split time
g ogb_split_far "train.csv.*99" --ogb ogb_split_far
# train_gnn: Planetoid
g planetoid_missing "no_such" --planetoid planetoid/no_such
g planetoid_no_cites "tiny.cites" --planetoid planetoid/tiny
g planetoid_nan "tiny.content.*(nan|finite)" --planetoid planetoid_nan/tiny
# train_gnn: knowledge graphs
g kg_missing "kg_missing.*train.txt" --task link --kg kg_missing
g kg_two_columns "train.txt:1: expected 3 tab-separated fields" --task link --kg kg_two_columns
g kg_empty "kg_empty.*(no|empty)" --task link --kg kg_empty
g kg_not_given "--kg" --task link
# train_gnn: flags
g hidden_huge "shape \[9223372036854775807, 32\] has more elements than a 64-bit count holds" --hidden 9223372036854775807
g features_huge "random:4611686018427387904|random:D" --rmat-scale 6 --features random:4611686018427387904
g features_zero "random:D needs a positive whole number" --rmat-scale 6 --features random:0
g features_unknown "--features" --rmat-scale 6 --features bogus
g fanouts_word "--fanouts" --fanouts 5,x
g fanouts_negative "--fanouts" --fanouts -2,5
g fanouts_count "--fanouts has 1 entries for 2 layers" --fanouts 5
g dcsbm_nodes_zero "--dcsbm-nodes" --dcsbm-nodes 0
g dcsbm_classes_one "--dcsbm-classes" --dcsbm-classes 1
g dcsbm_degree_negative "--dcsbm-degree -3 must be a positive number" --dcsbm-degree -3
g train_fraction "--train-fraction 1.5 and --val-fraction 0.2 must be fractions in \[0, 1\]" --train-fraction 1.5
g val_fraction "--train-fraction 0.6 and --val-fraction -0.1 must be fractions" --val-fraction -0.1
g model_unknown "--model" --model bogus
g aggr_unknown "--aggr 'bogus' is not one of mean, sum, max, min" --aggr bogus
g heads_zero "--heads 0 must be at least 1" --model gat --heads 0
g layers_zero "--layers 0 must be at least 1" --layers 0
g dropout_above_one "--dropout 1.5 must be in \[0, 1\)" --dropout 1.5
g lr_negative "--lr" --lr -1
run_case max_steps_zero "--max-steps" "$gnn" --max-steps 0 -o "$(o max_steps_zero)"
g batch_size_zero "--batch-size|-b" --fanouts 5,5 --batch-size 0
g seed_negative "--seed: -1 is negative" --seed -1
g max_steps_overflow "--max-steps: 18446744073709551617 is outside" --max-steps 18446744073709551617
g max_steps_text "--max-steps: 12abc is not a whole number" --max-steps 12abc
g feature_store_unknown "--feature-store" --fanouts 5,5 --feature-store bogus
g feature_budget_bad "--feature-budget" --fanouts 5,5 --feature-store file --feature-file "$(o features_budget_bad).npy" --feature-budget 12Q
g sim_memory_bad "--sim-memory" --device sim --sim-memory lots
g device_unknown "--device" --device tpu
g cache_policy_unknown "cache policy: unknown spec 'bogus'" --cache-policy bogus
g memory_budget_bad "--memory-budget" --memory-budget -5
g spill_arena_bad "--spill-arena" --cache-policy nvme --spill-dir "$w" --spill-arena 0
g nvme_missing_dir "--cache-policy nvme: no NVMe tier" --cache-policy nvme --spill-dir "$w/no_such_dir"
g task_unknown "--task" --task bogus
g rmat_scale_huge "--rmat-scale" --rmat-scale 80
g random_labels_one "--random-labels" --rmat-scale 6 --random-labels 1
g typed_rmat_edges_negative "--typed-rmat-edges" --model rgcn --typed-rmat-edges -5
g num_bases_negative "--num-bases" --model rgcn --num-bases -1
g materialization_unknown "--materialization" --model rgcn --materialization bogus
g reorder_unknown "--reorder" --model rgat --reorder bogus
g eval_every_negative "--eval-every" --eval-every -1
g log_every_zero "--log-every" --log-every 0
g config_missing "no_such.cfg" --config no_such.cfg
g config_broken "broken.cfg' is not a valid" --config broken.cfg
g label_property_without_graph "--label-property" --label-property value
g two_sources "give one of --graph, --edge-list" --edge-list edges.txt --rmat-scale 6
g max_nodes_generated "--max-nodes 100 applies to a loaded graph" --rmat-scale 6 --max-nodes 100
g resume_nothing "checkpoint" --resume
run_case over_a_checkpoint "old_run/checkpoint.*(--overwrite|--resume)" "$gnn" --max-steps 1 -o "$w/old_run"
run_case resume_broken_checkpoint "old_run/checkpoint" "$gnn" --max-steps 1 --resume -o "$w/old_run"
# train_gnn: output paths
g save_data_fifo "a_fifo.*(FIFO|fifo|not a regular file)" --save-data "$w/a_fifo"
g save_data_folder "a_folder.*(folder|directory)" --save-data "$w/a_folder"
g save_data_no_parent "no_parent" --save-data "$w/no_parent/data.safetensors"
run_case out_dir_is_a_file "--out-dir: refusing to write the folder .*keep.txt': it is a regular file" "$gnn" --max-steps 1 -o "$w/keep.txt"
g feature_file_folder "a_folder" --fanouts 5,5 --feature-store file --feature-file "$w/a_folder"
g feature_file_not_npy "keep.txt" --fanouts 5,5 --feature-store file --feature-file "$w/keep.txt"
g feature_file_fifo "a_fifo" --fanouts 5,5 --feature-store file --feature-file "$w/a_fifo"
g feature_file_other_seed "features_1337.npy holds other features than this run's data: row 0, column 0" \
  --fanouts 5,5 --feature-store file --feature-file "$w/features_1337.npy" --seed 7
# train_gnn: resuming on other data
run_case resume_other_graph "gnn_run/checkpoint' was trained on dcsbm.*this run's data is dcsbm.*--allow-other-data" \
  "$gnn" --max-steps 2 --resume --dcsbm-nodes 500 -o "$w/gnn_run"
run_case resume_other_seed "gnn_run/checkpoint' was trained on .*--allow-other-data" \
  "$gnn" --max-steps 2 --resume --seed 7 -o "$w/gnn_run"
# tools
hw=$source/tools/hardware/h100-sxm-pcie5-1xgen4.textproto
run_case plan_seq_past_positions "sequence of 1073741824 tokens exceeds max_position_embeddings 512" "$plan" --model bert-base --hardware "$hw" --seq 1073741824
run_case plan_model_unknown "unknown model 'bogus'" "$plan" --model bogus --hardware "$hw"
run_case plan_without_hardware "strata_plan: --hardware is required" "$plan" --model gpt2
run_case plan_hardware_missing "no_such_hw" "$plan" --model gpt2 --hardware no_such_hw.textproto
run_case plan_hardware_broken "broken.cfg" "$plan" --model gpt2 --hardware broken.cfg
run_case plan_save_fifo "--save-plan: refusing to write .*a_fifo': it is a FIFO" "$plan" --model gpt2 --hardware "$hw" --save-plan "$w/a_fifo"
run_case plan_save_folder "--save-plan: refusing to write .*a_folder': it is a folder" "$plan" --model gpt2 --hardware "$hw" --save-plan "$w/a_folder"
run_case shards_missing_input "no_such_text" "$shards" --input no_such_text.txt --out-dir "$(o shards_missing_input)"
run_case shards_over_shards "shards_there.*--overwrite" "$shards" --input text.txt --out-dir "$w/shards_there"
run_case shards_tokenizer_unknown "strata_text_to_shards: --tokenizer: bogus not in" "$shards" --input text.txt --out-dir "$(o shards_tokenizer)" --tokenizer bogus
# train_gpt and train_bert
run_case gpt_train_data_none "no_such_shards" "$gpt" --max-steps 1 --train-data "no_such_shards_*.bin" -o "$(o gpt_train_data_none)"
run_case gpt_init_missing "no_such_model" "$gpt" --max-steps 1 --init-from no_such_model -o "$(o gpt_init_missing)"
run_case gpt_init_folder_empty "a_folder" "$gpt" --max-steps 1 --init-from "$w/a_folder" -o "$(o gpt_init_folder_empty)"
run_case gpt_export_onto_init "--export-hf .*hf_dir' is the folder --init-from" "$gpt" --max-steps 1 --init-from "$w/hf_dir" --export-hf "$w/hf_dir" -o "$(o gpt_export_onto_init)"
run_case gpt_export_onto_init_file "--export-hf .*hf_dir' is the folder --init-from" "$gpt" --max-steps 1 --init-from "$w/hf_dir/model.safetensors" --export-hf "$w/hf_dir" -o "$(o gpt_export_onto_init_file)"
run_case gpt_export_hf_fifo "--export-hf.*a_fifo" "$gpt" --max-steps 1 --export-hf "$w/a_fifo" -o "$(o gpt_export_hf_fifo)"
run_case gpt_export_llmc_no_parent "--export-llmc.*no_parent" "$gpt" --max-steps 1 --export-llmc "$w/no_parent/m.bin" -o "$(o gpt_export_llmc_no_parent)"
run_case bert_export_onto_init "--export-hf .*bert_hf' is the folder --init-from" "$bert" --max-steps 1 --init-from "$w/out/bert_hf" --export-hf "$w/out/bert_hf" -o "$(o bert_export_onto_init)"
run_case gpt_export_llmc_folder "--export-llmc.*a_folder.*folder" "$gpt" --max-steps 1 --export-llmc "$w/a_folder" -o "$(o gpt_export_llmc_folder)"
run_case gpt_top_k_negative "--top-k -3 is negative" "$gpt" --max-steps 1 --top-k -3 -o "$(o gpt_top_k_negative)"
run_case gpt_temperature_nan "--temperature nan must be" "$gpt" --max-steps 1 --temperature nan -o "$(o gpt_temperature_nan)"
run_case gpt_zero1_alone "--zero1 shards the optimizer's state" "$gpt" --max-steps 1 --zero1 -o "$(o gpt_zero1_alone)"
run_case gpt_preset_unknown "unknown preset 'bogus'" "$gpt" --max-steps 1 --preset bogus -o "$(o gpt_preset_unknown)"
run_case gpt_seq_len_over_block "seq_len 100000 exceeds the model's block_size 64" "$gpt" --max-steps 1 --preset tiny --seq-len 100000 -o "$(o gpt_seq_len_over_block)"
run_case bert_init_llmc "gpt2.bin' is an llm.c GPT-2 model file" "$bert" --max-steps 1 --init-from "$w/gpt2.bin" -o "$(o bert_init_llmc)"
run_case bert_classify_missing "no_such.tsv" "$bert" --max-steps 1 --classify-data no_such.tsv -o "$(o bert_classify_missing)"
run_case bert_classify_bad_line "keep.txt.*line 1" "$bert" --max-steps 1 --classify-data "$w/keep.txt" -o "$(o bert_classify_bad_line)"

if [ -z "$list" ]; then
  echo "$cases cases, $failed failed"
  [ "$failed" -eq 0 ]
fi
