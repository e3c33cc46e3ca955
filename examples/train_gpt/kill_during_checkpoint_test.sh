#!/usr/bin/env bash
# Kills train_gpt with SIGKILL at random moments of a run that checkpoints every step (so many
# kills land inside a checkpoint write), resumes after each kill, and checks that every resume
# found a loadable checkpoint and that the losses logged across all the pieces are the losses of
# one uninterrupted run, step for step.
#   kill_during_checkpoint_test.sh TRAIN_GPT WORK_DIR [KILLS]
set -u
train_gpt=$1 work=$2 kills=${3:-25}
steps=300
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
args=(--preset tiny --max-steps $steps --seq-len 32 --batch-size 4 --eval-every 0 --sample-tokens 0
      --log-every 1 --ckpt-every 1 --seed 7)
losses() { sed -n 's/.*step *\([0-9]*\) | loss \([0-9.]*\) .*/\1 \2/p' "$@"; }

"$train_gpt" "${args[@]}" -o "$work/reference" > "$work/reference.log" 2>&1 || { cat "$work/reference.log"; exit 1; }
losses "$work/reference.log" > "$work/reference.losses"
[ "$(wc -l < "$work/reference.losses")" -eq $steps ] || { echo "the reference run logged no $steps steps"; exit 1; }

RANDOM=11  # the kill times are the same on every run of the test
killed=0 resumed=0 piece=0
while :; do
  piece=$((piece + 1))
  if [ -e "$work/run/checkpoint/index.pb" ]; then mode=--resume; else mode=--overwrite; fi
  "$train_gpt" "${args[@]}" $mode -o "$work/run" > "$work/piece_$piece.log" 2>&1 &
  pid=$!
  if [ $killed -lt "$kills" ]; then
    sleep "0.$(printf "%03d" $((RANDOM % 250 + 50)))"
    if kill -9 $pid 2> /dev/null; then killed=$((killed + 1)); fi
  fi
  wait $pid
  rc=$?
  if [ "$mode" = --resume ] && grep -q "^resumed from" "$work/piece_$piece.log"; then
    resumed=$((resumed + 1))
  elif [ "$mode" = --resume ] && [ $rc -ne 137 ]; then  # not killed, so it had to load
    echo "piece $piece could not resume:"; cat "$work/piece_$piece.log"; exit 1
  fi
  [ $rc -eq 0 ] && break
  # A kill that lands after the last step's checkpoint is written leaves a finished run: the
  # resume that follows refuses to train no step, which ends the run as well.
  if [ "$mode" = --resume ] && [ $rc -eq 1 ] &&
     grep -q "is not past the checkpoint's step $steps" "$work/piece_$piece.log"; then break; fi
  [ $rc -eq 137 ] || { echo "piece $piece failed (exit $rc):"; cat "$work/piece_$piece.log"; exit 1; }
  [ $piece -lt 500 ] || { echo "no end after 500 pieces"; exit 1; }
done

# The last loss logged for each step across the pieces (a killed piece's later steps are re-run
# by the next one from its checkpoint) must be the uninterrupted run's.
for f in $(ls "$work"/piece_*.log | sort -t_ -k2 -n); do losses "$f"; done |
  awk '{ last[$1] = $2 } END { for (s in last) print s, last[s] }' | sort -n > "$work/run.losses"
if ! diff "$work/reference.losses" "$work/run.losses" > "$work/diff.txt"; then
  echo "the pieced-together run's losses differ from the uninterrupted run's:"; cat "$work/diff.txt"; exit 1
fi
leftovers=$(ls -d "$work"/run/checkpoint.tmp.* "$work"/run/checkpoint.old.* 2> /dev/null | wc -l)
[ "$leftovers" -eq 0 ] || { echo "$leftovers killed writers' temporary directories were not removed"; exit 1; }
# A loaded machine may finish the run before every kill lands; fewer than half is a broken test.
[ $((killed * 2)) -ge "$kills" ] || { echo "only $killed of $kills kills landed before the run ended"; exit 1; }
echo "killed $killed times, resumed $resumed times from a loadable checkpoint, $piece pieces;" \
     "losses of all $steps steps equal the uninterrupted run's; no temporary directory left"
rm -rf "$work"
