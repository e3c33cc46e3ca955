#include "strata/io/data_identity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/io/graphs/graph_dataset.h"
#include "strata/io/graphs/graph_generators.h"
#include "strata/io/images/synthetic_images.h"
#include "strata/ops/factory.h"
#include "support/loader_files.h"

namespace strata::io {
namespace {

using testing::TempDir;
using testing::write_file;

std::string digest_of(const Tensor& t) { return DataDigest().add(t).str(); }

// Equal data, equal digests; a change of one value, of the shape or of the dtype, another digest.
TEST(DataDigest, FollowsValuesShapeAndDtype) {
  const Tensor a = ops::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(digest_of(a), digest_of(ops::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3})));
  EXPECT_EQ(digest_of(a), digest_of(a.t().contiguous().t())) << "a strided view of the same values";
  EXPECT_NE(digest_of(a), digest_of(ops::from_vector(std::vector<float>{1, 2, 3, 4, 5, 7}, {2, 3})));
  EXPECT_NE(digest_of(a), digest_of(a.reshape({3, 2})));
  EXPECT_NE(digest_of(a), digest_of(a.to(DType::f64)));
  EXPECT_NE(digest_of(a), digest_of(Tensor()));
  // Parts are delimited: "ab" + "c" is not "a" + "bc".
  EXPECT_NE(DataDigest().add("ab").add("c").str(), DataDigest().add("a").add("bc").str());
  EXPECT_EQ(DataDigest().add("ab").str().rfind("crc32c ", 0), 0u) << DataDigest().add("ab").str();
}

// A graph dataset's identity follows its seed (features, edges) and its split.
TEST(DataIdentity, OfAGraphFollowsItsEdgesFeaturesAndSplit) {
  const DcsbmOptions o{.num_nodes = 200, .num_blocks = 3, .feature_dim = 4, .seed = 5};
  GraphDataset a = generate_dcsbm(o), same = generate_dcsbm(o);
  DcsbmOptions other_seed = o;
  other_seed.seed = 6;
  const DataIdentity id = data_identity(a);
  EXPECT_EQ(id.digest, data_identity(same).digest);
  EXPECT_NE(id.digest, data_identity(generate_dcsbm(other_seed)).digest);
  EXPECT_NE(id.description.find("200 nodes"), std::string::npos) << id.description;
  split_nodes(&same, 0.5, 0.25, 1);
  split_nodes(&a, 0.5, 0.25, 2);
  EXPECT_NE(data_identity(a).digest, data_identity(same).digest) << "another split";
}

// Files: a moved copy is the same data; a changed byte within the first or last MiB, or another
// size, is not. A change only in the middle of a file over 2 MiB is not seen (the digest reads
// only the ends of each file).
TEST(DataIdentity, OfFilesReadsTheirEnds) {
  TempDir tmp;
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 2654435761u >> 24);
  write_file(tmp.file("a/shard.bin"), bytes);
  write_file(tmp.file("b/shard.bin"), bytes);
  const std::string base = files_identity("x", {tmp.file("a/shard.bin")}).digest;
  EXPECT_EQ(base, files_identity("y", {tmp.file("b/shard.bin")}).digest);
  for (size_t at : {size_t(0), bytes.size() - 1, size_t(1 << 20) - 1}) {
    std::string changed = bytes;
    changed[at] ^= 1;
    write_file(tmp.file("b/shard.bin"), changed);
    EXPECT_NE(base, files_identity("y", {tmp.file("b/shard.bin")}).digest) << "byte " << at;
  }
  std::string middle = bytes;
  middle[bytes.size() / 2] ^= 1;
  write_file(tmp.file("b/shard.bin"), middle);
  EXPECT_EQ(base, files_identity("y", {tmp.file("b/shard.bin")}).digest);
  write_file(tmp.file("b/shard.bin"), bytes + "x");
  EXPECT_NE(base, files_identity("y", {tmp.file("b/shard.bin")}).digest);
  EXPECT_NE(testing::io_error([&] { files_identity("z", {tmp.file("missing.bin")}); }).find("missing.bin"),
            std::string::npos);
}

TEST(DataIdentity, OfSyntheticImagesFollowsTheirSettings) {
  SyntheticImageOptions o;
  o.size = 16;
  SyntheticImageOptions other = o;
  other.seed = o.seed + 1;
  EXPECT_EQ(SyntheticImageDataset(o).identity().digest, SyntheticImageDataset(o).identity().digest);
  EXPECT_NE(SyntheticImageDataset(o).identity().digest, SyntheticImageDataset(other).identity().digest);
}

}  // namespace
}  // namespace strata::io
