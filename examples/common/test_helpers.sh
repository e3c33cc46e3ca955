# Sourced by the trainers' test scripts: a fresh work folder, failing with a message, a run's logged
# losses and byte-identical checkpoints. The functions read $work.

# fresh_work DIR: DIR empty (created), $work set to it, two OpenMP threads.
fresh_work() {
  work=$1
  rm -rf "$work"
  mkdir -p "$work"
  export OMP_NUM_THREADS=2
}
fail() { echo "FAIL: $*"; exit 1; }
# losses NAME: the "step N | ... loss L" of $work/NAME.log, without the epoch field.
losses() { grep -o 'step *[0-9]* |.* loss [0-9.]*' "$work/$1.log" | sed 's/ | epoch [0-9]*//'; }
# same_checkpoint A B: the runs in $work/A and $work/B wrote byte-identical checkpoint tensors.
same_checkpoint() {
  cmp "$work/$1/checkpoint/tensors.bin" "$work/$2/checkpoint/tensors.bin" ||
    fail "the checkpoints of $1 and $2 differ"
}
