#include "strata/io/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "io/checkpoint/checkpoint.pb.h"
#include "io/file_io.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/crc32c.h"
#include "strata/core/storage_pager.h"

namespace strata::io {
namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little, "checkpoints store little-endian bytes");

namespace {

constexpr const char* kModelGroup = "model";
constexpr const char* kOptimizerGroup = "optimizer";
constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16,
                                DType::i32, DType::i64, DType::u8,   DType::boolean};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// "a/b/" -> "a/b": the directory's own name, so siblings are "a/b.tmp...".
std::string normalized_dir(const std::string& dir) {
  STRATA_CHECK(!dir.empty(), IoError, "checkpoint: empty directory path");
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

std::string parent_of(const std::string& dir) {
  fs::path p = fs::path(dir).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

std::string describe(const CheckpointTensorInfo& t) {
  return detail::concat(t.group, " tensor '", t.name, "' (", dtype_name(t.dtype), shape_str(t.shape), ")");
}

// A dense CPU copy (or the tensor itself when it already is one) whose bytes can be written.
Tensor host_contiguous(const Tensor& t, const std::string& what) {
  STRATA_CHECK(t.defined(), ValueError, "save_checkpoint: ", what, " is an undefined tensor");
  STRATA_CHECK(!t.device().is_meta(), ValueError, "save_checkpoint: ", what, " is a meta tensor (no data)");
  NoGradGuard no_grad;
  Tensor h = t.detach();
  if (!h.device().is_cpu()) h = h.to(kCPU);
  return h.contiguous();
}

// Removes a directory tree, ignoring errors (cleanup after a failure or of the old copy).
void remove_tree_quietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

// After a successful save: removes `<dir>.tmp.<pid>.<tid>` and `<dir>.old.<pid>.<tid>` siblings
// left by writers that were killed (their pid no longer runs; the new checkpoint supersedes an
// old copy). A live writer's directories are left alone.
void remove_leftovers_of_dead_writers(const std::string& dir) {
  const std::string name = fs::path(dir).filename().string();
  std::error_code ec;
  std::vector<std::string> dead;
  for (fs::directory_iterator it(parent_of(dir), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string sibling = it->path().filename().string();
    for (const char* kind : {".tmp.", ".old."}) {
      const std::string prefix = name + kind;
      if (sibling.rfind(prefix, 0) != 0) continue;
      const std::string rest = sibling.substr(prefix.size());  // "<pid>.<tid>"
      const size_t dot = rest.find('.');
      if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789.") != std::string::npos)
        continue;
      const pid_t pid = pid_t(std::stoll(rest.substr(0, dot)));
      if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) dead.push_back(it->path().string());
    }
  }
  for (const std::string& path : dead) remove_tree_quietly(path);
}

// An existing `dir` may be replaced only if it is (or was meant to be) a checkpoint.
void check_replaceable(const std::string& dir) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return;
  STRATA_CHECK(fs::is_directory(st), IoError, "save_checkpoint: '", dir,
               "' exists and is not a directory; refusing to replace it");
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    STRATA_CHECK(name == kCheckpointIndexFile || name == kCheckpointTensorsFile, IoError,
                 "save_checkpoint: '", dir, "' holds '", name,
                 "', so it is not a checkpoint directory; refusing to replace it");
  }
  STRATA_CHECK(!ec, IoError, "save_checkpoint: cannot list '", dir, "' (", ec.message(), ")");
}

// Two entries are one tensor saved once (tied weights: lm_head.weight and wte.weight).
bool same_bytes_entry(const CheckpointTensorInfo& a, const CheckpointTensorInfo& b) {
  return a.offset == b.offset && a.nbytes == b.nbytes && a.dtype == b.dtype && a.shape == b.shape &&
         a.crc32c == b.crc32c;
}

// Identity of a view for deduplication: same storage, offset, shape, strides and dtype.
struct ViewKey {
  const void* storage;
  int64_t offset;
  Shape shape, strides;
  DType dtype;
  bool operator<(const ViewKey& o) const {
    return std::tie(storage, offset, shape, strides, dtype) <
           std::tie(o.storage, o.offset, o.shape, o.strides, o.dtype);
  }
};

// The index's checksum is field 11 (fixed32), appended after the serialized fields it covers: a
// field's bytes appended to a message's serialization are that message with the field set.
constexpr unsigned char kIndexCrcTag = (11 << 3) | 5;  // field 11, wire type 32-bit
constexpr size_t kIndexCrcBytes = 5;

void write_index_file(const std::string& path, proto::CheckpointIndex index, bool atomic) {
  index.clear_index_crc32c();
  std::string bytes;
  STRATA_CHECK(index.SerializeToString(&bytes), IoError, "checkpoint: serializing the index for '", path,
               "' failed (", index.ByteSizeLong(), " bytes; protobuf messages are capped at 2 GB)");
  const uint32_t crc = crc32c(bytes.data(), bytes.size());
  bytes.push_back(char(kIndexCrcTag));
  for (int i = 0; i < 4; ++i) bytes.push_back(char((crc >> (8 * i)) & 0xFF));
  OutputFile f(path, atomic);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

proto::CheckpointIndex to_proto(const CheckpointIndexInfo& info) {
  proto::CheckpointIndex index;
  index.set_format_version(info.format_version);
  index.set_config(info.config);
  index.set_step(info.step);
  index.mutable_rng()->set_seed(info.rng.seed);
  index.mutable_rng()->set_offset(info.rng.offset);
  index.mutable_data()->set_epoch(info.data.epoch);
  index.mutable_data()->set_shard(info.data.shard);
  index.mutable_data()->set_sample(info.data.sample);
  if (info.data_identity.recorded() || !info.data_identity.description.empty()) {
    index.mutable_data_identity()->set_description(info.data_identity.description);
    index.mutable_data_identity()->set_digest(info.data_identity.digest);
  }
  for (const auto& [k, v] : info.metadata) {
    proto::MetadataEntry* m = index.add_metadata();
    m->set_key(k);
    m->set_value(v);
  }
  for (const CheckpointTensorInfo& t : info.tensors) {
    proto::TensorEntry* e = index.add_tensors();
    e->set_group(t.group);
    e->set_name(t.name);
    e->set_dtype(dtype_name(t.dtype));
    for (int64_t d : t.shape) e->add_shape(d);
    e->set_offset(t.offset);
    e->set_nbytes(t.nbytes);
    e->set_crc32c(t.crc32c);
  }
  index.set_tensors_file(kCheckpointTensorsFile);
  index.set_tensors_file_bytes(info.tensors_file_bytes);
  index.set_alignment(uint32_t(kCheckpointAlignment));
  return index;
}

// Parses and validates index.pb: everything that can be checked without tensors.bin.
CheckpointIndexInfo parse_index(const std::string& dir) {
  const std::string path = dir + "/" + kCheckpointIndexFile;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    // A crash between the two renames of the fallback swap leaves the old copy aside.
    std::string hint;
    const std::string name = fs::path(dir).filename().string();
    fs::directory_iterator it(parent_of(dir), ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string sibling = it->path().filename().string();
      if (sibling.rfind(name + ".old.", 0) == 0 || sibling.rfind(name + ".tmp.", 0) == 0)
        hint = detail::concat(" ('", it->path().string(), "' is left from an interrupted save)");
    }
    throw IoError(detail::concat("checkpoint '", dir, "' does not exist or is not a directory", hint));
  }
  std::string bytes;
  {
    STRATA_CHECK(fs::exists(path, ec), IoError, "checkpoint '", dir, "': missing '", path, "'");
    InputFile f(path);
    bytes = f.read_all();
  }
  proto::CheckpointIndex index;
  STRATA_CHECK(index.ParseFromString(bytes), IoError, "checkpoint index '", path, "' (", bytes.size(),
               " bytes) is not a valid strata.io.proto.CheckpointIndex (corrupt or not a checkpoint)");
  auto bad = [&](auto&&... what) {
    return IoError(detail::concat("checkpoint index '", path, "': ", what...));
  };
  if (index.has_index_crc32c()) {
    // A parsed fixed32 field takes 5 bytes, so the file has them.
    const size_t n = bytes.size() - kIndexCrcBytes;
    uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= uint32_t(uint8_t(bytes[n + 1 + size_t(i)])) << (8 * i);
    if (uint8_t(bytes[n]) != kIndexCrcTag || stored != index.index_crc32c())
      throw bad("its checksum is not where the writer puts it (the file is corrupt)");
    const uint32_t actual = crc32c(bytes.data(), n);
    if (actual != stored)
      throw bad("CRC-32C mismatch over its first ", n, " bytes (stored ", stored, ", computed ", actual,
                "): the index is corrupt (step, RNG state or data position cannot be trusted)");
  } else if (index.format_version() >= 2) {
    throw bad("format version ", index.format_version(), " but no checksum (the file is corrupt)");
  }
  if (index.format_version() == 0) throw bad("no format version (not a Strata checkpoint index)");
  if (index.format_version() > kCheckpointFormatVersion)
    throw bad("format version ", index.format_version(), " is newer than this Strata reads (",
              kCheckpointFormatVersion, ")");
  if (index.tensors_file() != kCheckpointTensorsFile)
    throw bad("tensors file '", index.tensors_file(), "' (expected '", kCheckpointTensorsFile, "')");
  const uint64_t alignment = index.alignment();
  if (alignment == 0 || !std::has_single_bit(alignment))
    throw bad("alignment ", alignment, " is not a power of two");

  CheckpointIndexInfo info;
  info.format_version = index.format_version();
  info.config = index.config();
  info.step = index.step();
  info.rng = {index.rng().seed(), index.rng().offset()};
  info.data = {index.data().epoch(), index.data().shard(), index.data().sample()};
  info.data_identity = {index.data_identity().description(), index.data_identity().digest()};
  for (const proto::MetadataEntry& m : index.metadata())
    if (!info.metadata.emplace(m.key(), m.value()).second)
      throw bad("duplicate metadata key '", m.key(), "'");
  info.tensors_file_bytes = index.tensors_file_bytes();

  std::set<std::pair<std::string, std::string>> seen;
  info.tensors.reserve(size_t(index.tensors_size()));
  for (int i = 0; i < index.tensors_size(); ++i) {
    const proto::TensorEntry& e = index.tensors(i);
    CheckpointTensorInfo t;
    t.group = e.group();
    t.name = e.name();
    t.offset = e.offset();
    t.nbytes = e.nbytes();
    t.crc32c = e.crc32c();
    const std::string who = detail::concat("tensor #", i, " '", t.name, "'");
    if (t.group != kModelGroup && t.group != kOptimizerGroup)
      throw bad(who, ": unknown group '", t.group, "' (expected 'model' or 'optimizer')");
    if (!seen.emplace(t.group, t.name).second) throw bad(who, ": duplicate name in group '", t.group, "'");
    bool known = false;
    for (DType d : kAllDTypes)
      if (e.dtype() == dtype_name(d)) {
        t.dtype = d;
        known = true;
      }
    if (!known) throw bad(who, ": unknown dtype '", e.dtype(), "'");
    // numel * element size, guarding against overflow of hostile dimensions.
    uint64_t expect = element_size(t.dtype);
    bool overflow = false;
    for (int64_t d : e.shape()) {
      if (d < 0) throw bad(who, ": negative dimension ", d);
      t.shape.push_back(d);
      if (d != 0 && expect > std::numeric_limits<uint64_t>::max() / uint64_t(d)) overflow = true;
      expect *= uint64_t(d);
    }
    if (overflow) throw bad(who, ": shape ", shape_str(t.shape), " overflows");
    if (expect != t.nbytes)
      throw bad(who, ": shape ", dtype_name(t.dtype), shape_str(t.shape), " needs ", expect,
                " bytes but nbytes is ", t.nbytes);
    if (t.offset % alignment != 0) throw bad(who, ": offset ", t.offset, " is not a multiple of ", alignment);
    if (t.offset > info.tensors_file_bytes || t.nbytes > info.tensors_file_bytes - t.offset)
      throw bad(who, ": its ", t.nbytes, " bytes at offset ", t.offset, " lie outside ",
                kCheckpointTensorsFile, "'s ", info.tensors_file_bytes,
                " bytes");  // (offset + nbytes may not fit 64 bits)
    info.tensors.push_back(std::move(t));
  }
  // No two tensors may share bytes, except a tensor saved once under two names (an alias).
  std::vector<const CheckpointTensorInfo*> by_offset;
  for (const CheckpointTensorInfo& t : info.tensors)
    if (t.nbytes > 0) by_offset.push_back(&t);
  std::stable_sort(
      by_offset.begin(), by_offset.end(),
      [](const CheckpointTensorInfo* a, const CheckpointTensorInfo* b) { return a->offset < b->offset; });
  const CheckpointTensorInfo* prev = nullptr;
  for (const CheckpointTensorInfo* t : by_offset) {
    if (prev && same_bytes_entry(*prev, *t)) continue;
    if (prev && prev->offset + prev->nbytes > t->offset)
      throw bad(describe(*t), " at offset ", t->offset, " overlaps ", describe(*prev), " at offset ",
                prev->offset);
    prev = t;
  }
  return info;
}

// Writes `src` at the next aligned offset after `end` (moved past it) through a one-piece buffer.
CheckpointTensorInfo write_streamed(OutputFile& bin, const std::string& name, const TensorSource& src,
                                    uint64_t& end) {
  CheckpointTensorInfo t;
  t.group = kOptimizerGroup;
  t.name = name;
  t.dtype = src.dtype;
  t.shape = src.shape;
  const int64_t numel = shape_numel(src.shape);
  const size_t esize = element_size(src.dtype);
  t.nbytes = uint64_t(numel) * esize;
  t.offset = align_up(end, kCheckpointAlignment);
  STRATA_CHECK(src.piece > 0 || numel == 0, ValueError, "save_checkpoint: optimizer tensor '", name,
               "' streams in pieces of ", src.piece, " elements");
  std::vector<char> buf(size_t(std::min<int64_t>(numel, std::max<int64_t>(src.piece, 1))) * esize);
  for (int64_t begin = 0; begin < numel; begin += src.piece) {
    const int64_t stop = std::min(numel, begin + src.piece);
    const size_t n = size_t(stop - begin) * esize;
    src.fill(begin, stop, buf.data());
    t.crc32c = crc32c(buf.data(), n, t.crc32c);
    bin.write_at(buf.data(), n, t.offset + uint64_t(begin) * esize);
  }
  if (t.nbytes > 0) end = t.offset + t.nbytes;
  return t;
}

}  // namespace

void save_checkpoint(const std::string& dir_in, const CheckpointState& state) {
  const std::string dir = normalized_dir(dir_in);
  check_replaceable(dir);
  const std::string tmp = dir + ".tmp" + unique_temp_suffix();
  remove_tree_quietly(tmp);  // a leftover of a crashed writer that had our pid and tid
  std::error_code ec;
  fs::create_directories(parent_of(dir), ec);
  STRATA_CHECK(!ec, IoError, "save_checkpoint: cannot create '", parent_of(dir), "' (", ec.message(), ")");
  fs::create_directory(tmp, ec);
  STRATA_CHECK(!ec, IoError, "save_checkpoint: cannot create '", tmp, "' (", ec.message(), ")");
  try {
    CheckpointIndexInfo info;
    info.config = state.config;
    info.step = state.step;
    info.rng = state.rng;
    info.data = state.data;
    info.data_identity = state.data_identity;
    info.metadata = state.metadata;
    {
      OutputFile bin(tmp + "/" + kCheckpointTensorsFile, /*atomic=*/false);
      uint64_t end = 0;
      std::map<ViewKey, size_t> written;  // view -> its entry, so tied tensors are stored once
      for (const auto& [group, dict] :
           {std::pair{kModelGroup, &state.model}, std::pair{kOptimizerGroup, &state.optimizer}}) {
        for (const auto& [name, tensor] : *dict) {
          if (tensor.defined() && !tensor.device().is_meta()) {
            ViewKey key{tensor.storage().get(), tensor.storage_offset(), tensor.shape(), tensor.strides(),
                        tensor.dtype()};
            if (auto it = written.find(key); it != written.end()) {
              CheckpointTensorInfo alias = info.tensors[it->second];
              alias.group = group;
              alias.name = name;
              info.tensors.push_back(std::move(alias));
              continue;
            }
            written.emplace(std::move(key), info.tensors.size());
          }
          if (!tensor.defined() && group == std::string(kOptimizerGroup)) {
            if (auto src = state.optimizer_sources.find(name); src != state.optimizer_sources.end()) {
              info.tensors.push_back(write_streamed(bin, name, src->second, end));
              continue;
            }
          }
          Tensor h = host_contiguous(tensor, detail::concat(group, " tensor '", name, "'"));
          CheckpointTensorInfo t;
          t.group = group;
          t.name = name;
          t.dtype = h.dtype();
          t.shape = h.shape();
          t.nbytes = h.nbytes();
          t.offset = align_up(end, kCheckpointAlignment);
          if (t.nbytes > 0) {
            t.crc32c = crc32c(h.data_ptr(), t.nbytes);
            bin.write_at(h.data_ptr(), t.nbytes, t.offset);
            end = t.offset + t.nbytes;
          }
          info.tensors.push_back(std::move(t));
          release_paged(tensor);  // a paged weight goes back where it lives: one on the device at a time
        }
      }
      bin.truncate(end);  // the alignment gaps are holes that read as zeros
      info.tensors_file_bytes = end;
      bin.commit();
    }
    write_index_file(tmp + "/" + kCheckpointIndexFile, to_proto(info), /*atomic=*/false);
    fsync_directory(tmp);
  } catch (...) {
    remove_tree_quietly(tmp);
    throw;
  }

  // Swap the new directory into place.
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    if (::rename(tmp.c_str(), dir.c_str()) != 0) {
      int err = errno;
      remove_tree_quietly(tmp);
      throw IoError(detail::concat("save_checkpoint: renaming '", tmp, "' to '", dir, "' failed (",
                                   std::strerror(err), ")"));
    }
  } else {
    bool swapped = false;
#ifdef RENAME_EXCHANGE
    // One atomic step: `dir` is the new checkpoint and `tmp` the old one.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
      swapped = true;
      fsync_directory(parent_of(dir));
      remove_tree_quietly(tmp);
    } else if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
      int err = errno;
      remove_tree_quietly(tmp);
      throw IoError(detail::concat("save_checkpoint: exchanging '", tmp, "' with '", dir, "' failed (",
                                   std::strerror(err), ")"));
    }
#endif
    if (!swapped) {
      // File systems without RENAME_EXCHANGE: move the old one aside, then the new one in.
      const std::string old = dir + ".old" + unique_temp_suffix();
      remove_tree_quietly(old);
      if (::rename(dir.c_str(), old.c_str()) != 0) {
        int err = errno;
        remove_tree_quietly(tmp);
        throw IoError(detail::concat("save_checkpoint: renaming '", dir, "' to '", old, "' failed (",
                                     std::strerror(err), ")"));
      }
      if (::rename(tmp.c_str(), dir.c_str()) != 0) {
        int err = errno;
        ::rename(old.c_str(), dir.c_str());  // put the old checkpoint back
        remove_tree_quietly(tmp);
        throw IoError(detail::concat("save_checkpoint: renaming '", tmp, "' to '", dir, "' failed (",
                                     std::strerror(err), ")"));
      }
      fsync_directory(parent_of(dir));
      remove_tree_quietly(old);
    }
  }
  remove_leftovers_of_dead_writers(dir);
  fsync_directory(parent_of(dir));
}

CheckpointIndexInfo read_checkpoint_index(const std::string& dir) { return parse_index(normalized_dir(dir)); }

void write_checkpoint_index(const std::string& dir_in, const CheckpointIndexInfo& index) {
  const std::string dir = normalized_dir(dir_in);
  std::error_code ec;
  STRATA_CHECK(fs::is_directory(dir, ec), IoError, "write_checkpoint_index: '", dir, "' is not a directory");
  write_index_file(dir + "/" + kCheckpointIndexFile, to_proto(index), /*atomic=*/true);
  fsync_directory(dir);
}

CheckpointState load_checkpoint(const std::string& dir_in) {
  const std::string dir = normalized_dir(dir_in);
  CheckpointIndexInfo info = parse_index(dir);
  const std::string path = dir + "/" + kCheckpointTensorsFile;
  std::error_code ec;
  STRATA_CHECK(fs::exists(path, ec), IoError, "checkpoint '", dir, "': missing '", path, "'");
  InputFile bin(path);
  if (bin.size() < info.tensors_file_bytes) {
    // Name the first tensor (in file order) whose bytes are cut off.
    const CheckpointTensorInfo* first = nullptr;
    for (const CheckpointTensorInfo& t : info.tensors)
      if (t.offset + t.nbytes > bin.size() && (first == nullptr || t.offset < first->offset)) first = &t;
    throw IoError(detail::concat("'", path, "' is truncated: ", bin.size(), " bytes, the index says ",
                                 info.tensors_file_bytes, first ? "; " : "",
                                 first ? detail::concat(describe(*first), " at offset ", first->offset,
                                                        " needs bytes up to ", first->offset + first->nbytes)
                                       : std::string()));
  }
  STRATA_CHECK(bin.size() == info.tensors_file_bytes, IoError, "'", path, "' has ", bin.size(),
               " bytes but the index says ", info.tensors_file_bytes,
               " (not the file this index was written with)");

  CheckpointState state;
  state.config = std::move(info.config);
  state.step = info.step;
  state.rng = info.rng;
  state.data = info.data;
  state.data_identity = std::move(info.data_identity);
  state.metadata = std::move(info.metadata);
  std::map<uint64_t, std::pair<const CheckpointTensorInfo*, Tensor>> loaded;  // by offset, for aliases
  for (const CheckpointTensorInfo& t : info.tensors) {
    nn::StateDict& dict = t.group == kModelGroup ? state.model : state.optimizer;
    if (auto it = loaded.find(t.offset);
        t.nbytes > 0 && it != loaded.end() && same_bytes_entry(*it->second.first, t)) {
      dict.insert(t.name, it->second.second);  // a tied tensor: one tensor under both names
      continue;
    }
    Tensor out = Tensor::empty(t.shape, t.dtype, kCPU);
    if (t.nbytes > 0) {
      bin.read_at(out.data_ptr(), t.nbytes, t.offset, describe(t));
      uint32_t crc = crc32c(out.data_ptr(), t.nbytes);
      if (crc != t.crc32c) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "stored 0x%08x, computed 0x%08x", t.crc32c, crc);
        throw IoError(detail::concat("'", path, "': checksum mismatch for ", describe(t), " at offset ",
                                     t.offset, " (", t.nbytes, " bytes): CRC-32C ", buf,
                                     " (corrupt checkpoint)"));
      }
    }
    if (t.nbytes > 0) loaded.emplace(t.offset, std::pair{&t, out});
    dict.insert(t.name, std::move(out));
  }
  return state;
}

}  // namespace strata::io
