#include "examples/common/shared_flags.h"

#include "examples/common/config_flags.h"
#include "examples/common/trainer_common.pb.h"

// A flag's name is its field's with '-' for '_' unless given; help texts are what --help prints.
namespace strata::examples {

void add_run_flags(ConfigFlags& f, RunConfig* run) {
  f.option(run, "batch_size", "-b,--batch-size");
  f.option(run, "max_steps");
  f.option(run, "max_seconds", "", "stop after this much training time (0: no limit)");
  f.option(run, "seed");
  f.option(run, "eval_every");
  f.option(run, "eval_batches");
  f.option(run, "ckpt_every", "", "checkpoint every N steps (0: only at the end)");
  f.option(run, "out_dir", "-o,--out-dir");
  f.flag(run, "resume", "", "continue from <out-dir>/checkpoint");
  f.flag(run, "overwrite", "", "start over although <out-dir>/checkpoint exists (its next save replaces it)");
  f.flag(run, "allow_other_data", "",
         "with --resume: continue although the checkpoint was trained on other data (e.g. to fine-tune)");
  f.option(run, "log_every");
  f.option(run, "grad_accum", "",
           "micro-batches per optimizer step, their gradients summed (a step sees grad-accum x batch-size "
           "samples per rank)");
  f.option(run, "report", "",
           "write per-step metrics into this folder: TensorBoard event files (tensorboard --logdir DIR) and "
           "metrics.csv (loss, lr, grad norm, step time, memory by category, cache traffic, evaluations); a "
           "resumed run appends");
  f.option(
      run, "hardware", "",
      "a hardware profile (tools/hardware/*.textproto): train_gpt's and train_bert's step lines show MFU, "
      "the model's FLOPs per second over the profile's matmul peak for the run's precision");
  f.option(run, "device", "",
           "cpu (default), cuda, cuda:N, sim, sim:N (the simulated device: host memory with a capacity, "
           "the CPU's kernels); under mpirun cuda and sim take the rank's local index");
  f.option(run, "sim_memory", "",
           "the sim device's memory capacity, e.g. 2G (default: STRATA_SIM_MEMORY, else RAM)");
}

void add_profile_flag(ConfigFlags& f, RunConfig* run) {
  f.flag(run, "profile", "",
         "time every op kind (forward ops, backward nodes, optimizer) from step 3 on, on a GPU each op "
         "waiting for its kernels; prints a table at the end and writes <out-dir>/profile_trace.json "
         "(chrome://tracing)");
}

void add_lr_schedule_flags(ConfigFlags& f, LrScheduleConfig* schedule) {
  f.option(schedule, "lr");
  f.option(schedule, "min_lr");
  f.option(schedule, "warmup_steps");
  f.option(schedule, "lr_decay_steps", "", "schedule length (0: max steps, or estimated from step time)");
}

void add_optimizer_flags(ConfigFlags& f, OptimizerConfig* optim) {
  f.option(optim, "weight_decay");
  f.option(optim, "grad_clip");
  f.option(
      optim, "optimizer_state", "",
      "where the optimizer's moments live: device (default; under --memory-budget the budget's choice), "
      "host (updated on the host, as ZeRO-Offload does) or nvme (a spill file in --spill-dir, streamed a "
      "chunk at a time)");
  f.option(
      optim, "weights", "",
      "where the blocks' weights live between uses: device (default; under --memory-budget the budget's "
      "choice), host or nvme (in --spill-dir); each block's come onto the device ahead of its forward and "
      "backward");
  f.option(optim, "gradients", "",
           "where the blocks' gradients go once backward has accumulated them: device (default; under "
           "--memory-budget the budget's choice), host or nvme");
}

void add_adamw_beta_flags(ConfigFlags& f, OptimizerConfig* optim) {
  f.option(optim, "beta1");
  f.option(optim, "beta2");
}

void add_text_data_flags(ConfigFlags& f, TextDataConfig* data) {
  f.option(data, "train_data", "", "glob of llm.c .bin token shards");
  f.option(data, "val_data", "", "glob of held-out shards");
  f.option(data, "text", "", "a text file to train on byte by byte (every 10th 8 KiB chunk held out)");
  f.option(data, "seq_len", "-t,--seq-len");
  f.option(data, "shuffle");
}

void add_bf16_flag(ConfigFlags& f, PrecisionConfig* precision) {
  f.flag(precision, "bf16", "--bf16{true},--autocast{true}",
         "bf16 mixed precision: linear and LM-head GEMMs in bf16 (oneDNN, AVX512-BF16), f32 master weights, "
         "activations and reductions (as torch.autocast(cpu, bfloat16))");
}

void add_tf32_flag(ConfigFlags& f, PrecisionConfig* precision) {
  f.flag(precision, "tf32", "",
         "CUDA: f32 GEMMs and convolutions on TF32 Tensor Cores over forward and backward (as "
         "torch.backends.cuda.matmul.allow_tf32); the CPU ignores it");
}

void add_data_parallel_flags(ConfigFlags& f, DataParallelConfig* data_parallel) {
  f.option(data_parallel, "zero_stage", "",
           "under mpirun: 1 shards the optimizer's state across ranks, 2 the gradients too (reduce-scattered "
           "during backward), 3 the parameters too (gathered per layer; train_gpt), 0 none (ZeRO stages)");
  f.flag(data_parallel, "zero1", "", "the same as --zero-stage 1");
  f.option(
      data_parallel, "bucket_mb", "",
      "under mpirun: gradient all-reduce bucket size in MB (--zero-stage 2: the most gradient MB in flight)");
  f.option(data_parallel, "collective_timeout", "",
           "under mpirun: seconds a collective waits for the other ranks before failing, naming the rank");
}

void add_tensor_cache_flags(ConfigFlags& f, TensorCacheConfig* cache, const std::string& unit,
                            const std::string& policy_note) {
  f.option(cache, "cache_policy", "",
           "saved activations: keep (default), recompute, nvme, host, adaptive[:host], "
           "rules:<glob>[@op][>=size]=<action>;..., or plan:<file>" +
               policy_note);
  f.option(cache, "memory_budget", "",
           "keep the step's peak memory under this (e.g. 1.5G), model state included: optimizer state, "
           "gradients and weights without a flag of their own leave the device as far as the budget needs "
           "(host memory beside a GPU or sim device, else NVMe in --spill-dir); step 1 profiles with every " +
               unit + " recomputed, then a plan is made (NVMe when --spill-dir is given, else recompute)");
  f.option(cache, "spill_dir", "", "directory for the NVMe tier's spill file (unlinked, O_DIRECT)");
  f.option(cache, "spill_arena", "", "size of the spill file (default 8G)");
  f.option(cache, "host_pool", "", "size of the host tier's pool (default 0: none)");
  f.option(cache, "cache_min", "", "tensors smaller than this are always kept (default 1M)");
  f.option(cache, "save_plan", "", "write the --memory-budget plan to this file");
  f.option(cache, "host_memory", "",
           "the most model state --memory-budget may place in host memory (default: what the machine has "
           "available at start); beyond it, NVMe in --spill-dir");
}

}  // namespace strata::examples
