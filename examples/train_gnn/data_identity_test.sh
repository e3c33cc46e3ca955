#!/usr/bin/env bash
# A checkpoint knows the data it was trained on: resuming on other data is refused (the checkpoint
# untouched) unless --allow-other-data says so, and resuming on the same data says nothing of it.
#   data_identity_test.sh TRAIN_GNN WORK_DIR
set -u
gnn=$1
source "$(dirname "$0")/../common/test_helpers.sh"
fresh_work "$2"
small=(--hidden 16 --eval-every 0 --log-every 1 -o "$work/run")

"$gnn" "${small[@]}" --max-steps 2 --dcsbm-nodes 400 > "$work/first.log" 2>&1 || fail "the first run failed: $(tail -3 "$work/first.log")"
before=$(md5sum < "$work/run/checkpoint/index.pb")

"$gnn" "${small[@]}" --max-steps 3 --resume --dcsbm-nodes 500 > "$work/other.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "resuming on 500 nodes exited $rc: $(tail -3 "$work/other.log")"
grep -q "was trained on dcsbm.*this run's data is dcsbm.*--allow-other-data" "$work/other.log" ||
  fail "no data names in: $(cat "$work/other.log")"
[ "$(md5sum < "$work/run/checkpoint/index.pb")" = "$before" ] || fail "the refused resume changed the checkpoint"

"$gnn" "${small[@]}" --max-steps 3 --resume --dcsbm-nodes 500 --allow-other-data > "$work/allowed.log" 2>&1 ||
  fail "--allow-other-data did not resume: $(tail -3 "$work/allowed.log")"
grep -q "warning: resuming on other data (--allow-other-data)" "$work/allowed.log" || fail "no warning in the allowed run"
grep -q "resumed from .* at step 2" "$work/allowed.log" || fail "the allowed run did not resume at step 2"

# The checkpoint now records the 500-node data: the same data resumes without a word about it.
"$gnn" "${small[@]}" --max-steps 4 --resume --dcsbm-nodes 500 > "$work/same.log" 2>&1 ||
  fail "resuming on the same data failed: $(tail -3 "$work/same.log")"
grep -q "other data\|was trained on" "$work/same.log" && fail "a warning on the same data: $(cat "$work/same.log")"
grep -q "final: step 4" "$work/same.log" || fail "no final step 4"
echo "other data refused, allowed with a warning, the same data resumed"
