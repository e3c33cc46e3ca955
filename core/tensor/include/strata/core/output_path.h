// Where every writer of files and folders checks its target and puts its temporary name: an
// existing path of another kind (a device node, a FIFO, a socket, a folder where a file goes) is
// refused by name and never written through or renamed over.
#pragma once

#include <cstddef>
#include <string>

namespace strata {

// Throws IoError "<what>: refusing to write '<path>': it is a <kind>, not a regular file" when
// `path` exists (through symbolic links) and is not a regular file. A missing path is fine when its
// folder exists (an IoError naming the folder otherwise).
void check_output_file(const std::string& path, const std::string& what);

// The same for a folder: an existing `path` must be a folder.
void check_output_folder(const std::string& path, const std::string& what);

// The path a write to `path` goes through first: a hidden name in the same folder, unique to this
// process, thread and call ("dir/.name.tmp.<pid>.<tid>.<n>"), so that the rename stays within one
// file system and nothing is left outside the target's folder. A symbolic link at `path` is
// replaced by the rename (the file it pointed to is left as it was).
std::string temporary_beside(const std::string& path);

// Never leaves a partial file at `path`: writes to temporary_beside(path), fsyncs, renames over
// `path`, fsyncs the folder. On any failure the old file (if any) is intact and an IoError names
// the file and the failing call (a full disk, say). Refuses what check_output_file refuses.
void write_file_atomically(const std::string& path, const void* data, size_t bytes, const std::string& what);
inline void write_file_atomically(const std::string& path, const std::string& bytes,
                                  const std::string& what) {
  write_file_atomically(path, bytes.data(), bytes.size(), what);
}

}  // namespace strata
