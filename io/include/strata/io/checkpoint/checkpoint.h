// Training checkpoints: a directory holding a protobuf index (index.pb) and the raw bytes of
// every model and optimizer tensor (tensors.bin, each tensor 4096-byte aligned with a CRC-32C).
//
//   io::CheckpointState s;
//   s.config = config_text; s.step = step; s.rng = gen.state(); s.data = loader.cursor();
//   s.model = model->state_dict(); s.optimizer = opt.state_dict();
//   io::save_checkpoint("runs/gpt/ckpt", s);        // atomic: old or new, never half of one
//   io::CheckpointState r = io::load_checkpoint("runs/gpt/ckpt");
//   model->load_state_dict(r.model); opt.load_state_dict(r.optimizer);
//
// Layout of <dir>/:
//   index.pb     binary strata.io.proto.CheckpointIndex (io/checkpoint/checkpoint.proto): format
//                version, config text, step, RNG state, data cursor, data identity, metadata, and per tensor
//                group ("model"/"optimizer"), name, dtype, shape, offset, nbytes, crc32c
//   tensors.bin  each tensor's C-contiguous little-endian bytes at its (4096-aligned) offset
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/core/generator.h"
#include "strata/core/tensor_source.h"
#include "strata/io/data_cursor.h"
#include "strata/io/data_identity.h"
#include "strata/nn/module.h"

namespace strata::io {

// 2: index.pb carries a CRC-32C of itself (version-1 checkpoints, without it, still load).
// 3: index.pb records the identity of the data the run trained on (older ones load without it).
inline constexpr uint32_t kCheckpointFormatVersion = 3;
inline constexpr uint64_t kCheckpointAlignment = 4096;
inline constexpr const char* kCheckpointIndexFile = "index.pb";
inline constexpr const char* kCheckpointTensorsFile = "tensors.bin";

// Everything a training run needs to resume.
struct CheckpointState {
  std::string config;  // the model/run config as text (protobuf text format or anything)
  int64_t step = 0;
  RngState rng;
  DataCursor data;
  DataIdentity data_identity;                   // what the run trained on; unrecorded before version 3
  std::map<std::string, std::string> metadata;  // free-form (git hash, wall time, loss, ...)
  nn::StateDict model;                          // Module::state_dict()
  nn::StateDict optimizer;                      // Optimizer::state_dict()
  // Optimizer tensors written a piece at a time (Optimizer::state_dict(sources): state in a spill
  // file): each stands for the undefined tensor of `optimizer` under its name.
  TensorSources optimizer_sources;
};

// Where one tensor lives in tensors.bin.
struct CheckpointTensorInfo {
  std::string group;  // "model" or "optimizer"
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  uint32_t crc32c = 0;
};

// The index alone (no tensor bytes): cheap to read, e.g. to list checkpoints by step.
struct CheckpointIndexInfo {
  uint32_t format_version = kCheckpointFormatVersion;
  std::string config;
  int64_t step = 0;
  RngState rng;
  DataCursor data;
  DataIdentity data_identity;
  std::map<std::string, std::string> metadata;
  std::vector<CheckpointTensorInfo> tensors;  // model tensors first, then optimizer
  uint64_t tensors_file_bytes = 0;
};

// Writes `state` as the checkpoint directory `dir`, atomically: everything goes into a
// sibling temporary directory (`<dir>.tmp.<pid>`), files and directory are fsynced, then it
// is swapped into place (one renameat2(RENAME_EXCHANGE) where the file system supports it,
// else rename the old one aside, rename the new one in) and the old one is removed. A crash
// leaves either the old checkpoint or the new one at `dir`, never a partial one (with the
// two-rename fallback, a crash between the renames leaves `dir` absent and the old
// checkpoint at `<dir>.old.<pid>`). An existing `dir` is only replaced if it is a checkpoint
// (holds nothing but index.pb and tensors.bin) or empty; anything else is an IoError.
// Missing parent directories are created. Tensors on other devices are copied to the CPU;
// views are written contiguously; one view listed under several names (tied weights such as
// lm_head.weight and transformer.wte.weight) is stored once and loads as one shared tensor.
// A streamed optimizer tensor is written through a buffer of one piece, never held whole.
// Throws IoError naming the file and call on any I/O failure (the old checkpoint stays
// intact), ValueError for an undefined or meta tensor.
void save_checkpoint(const std::string& dir, const CheckpointState& state);

// Reads and validates a checkpoint; every tensor is a fresh contiguous CPU tensor of its
// saved dtype. Throws IoError naming the file (and tensor and offset where one is at
// fault) for: a missing directory or file, an unparsable index, an unknown format version,
// group or dtype, a shape inconsistent with nbytes, a misaligned or overlapping range, a
// truncated tensors.bin, a CRC-32C mismatch.
CheckpointState load_checkpoint(const std::string& dir);

// Reads and validates index.pb only (tensors.bin is not read; its size is not checked).
CheckpointIndexInfo read_checkpoint_index(const std::string& dir);

// Replaces <dir>/index.pb atomically with `index` (tensors.bin is left alone), e.g. to edit
// metadata or config in place. No validation beyond what serialization needs: a wrong
// offset, shape or checksum is reported by the next load_checkpoint.
void write_checkpoint_index(const std::string& dir, const CheckpointIndexInfo& index);

}  // namespace strata::io
