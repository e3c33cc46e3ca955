// Planetoid's raw LINQS text: <name>.content ("id f_0 ... f_k class") and <name>.cites
// ("cited citing").
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/text_lines.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_formats.h"

namespace strata::io {

GraphDataset load_planetoid_raw(const std::string& dir, const std::string& name, PlanetoidInfo* info) {
  namespace fs = std::filesystem;
  const std::string content_path = (fs::path(dir) / (name + ".content")).string();
  const std::string cites_path = (fs::path(dir) / (name + ".cites")).string();

  std::vector<std::string> ids, class_of;
  std::unordered_map<std::string, int64_t> index, first_line;
  std::vector<float> features;
  int64_t width = -1;
  {
    LineReader in(content_path);
    std::string_view line;
    std::vector<std::string_view> f;
    while (in.next(&line)) {
      if (is_comment_or_blank(line)) continue;
      split_fields(line, FieldSeparator::kWhitespace, &f);
      if (width < 0) width = int64_t(f.size()) - 2;
      if (f.size() < 2 || int64_t(f.size()) != width + 2)
        in.fail(detail::concat("expected ", std::max<int64_t>(width + 2, 2),
                               " fields (paper id, features, class label), found ", f.size()));
      std::string id(f.front());
      auto [it, fresh] = index.emplace(id, int64_t(ids.size()));
      if (!fresh)
        in.fail(detail::concat("paper '", id, "' is listed twice (first at line ", first_line[id], ")"));
      first_line[id] = in.line_number();
      if (int64_t(ids.size()) >= kMaxGraphNodes) in.fail("more than 2^30 papers");
      ids.push_back(std::move(id));
      for (size_t k = 1; k + 1 < f.size(); ++k) features.push_back(float(in.parse_double(f[k], "feature")));
      class_of.emplace_back(f.back());
    }
  }
  STRATA_CHECK(!ids.empty(), IoError, content_path, ": no papers");
  const int64_t n = int64_t(ids.size());

  std::vector<std::pair<int64_t, int64_t>> pairs;
  int64_t skipped = 0;
  {
    LineReader in(cites_path);
    std::string_view line;
    std::vector<std::string_view> f;
    while (in.next(&line)) {
      if (is_comment_or_blank(line)) continue;
      split_fields(line, FieldSeparator::kWhitespace, &f);
      if (f.size() != 2)
        in.fail(detail::concat("expected 2 fields (cited paper, citing paper), found ", f.size()));
      auto cited = index.find(std::string(f[0]));
      auto citing = index.find(std::string(f[1]));
      if (cited == index.end() || citing == index.end()) {
        ++skipped;
        continue;
      }
      pairs.emplace_back(citing->second, cited->second);
      pairs.emplace_back(cited->second, citing->second);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<int64_t> src(pairs.size()), dst(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) std::tie(src[i], dst[i]) = pairs[i];

  GraphDataset data;
  data.graph = Graph::from_edges(n, host_tensor(src), host_tensor(dst));
  data.features = host_tensor(features, {n, width});
  check_finite_features(data.features, content_path);
  std::vector<std::string> classes;
  std::vector<int64_t> labels = class_ids_of(class_of, &classes);
  data.labels = host_tensor(labels);
  data.num_classes = int64_t(classes.size());
  data.name = name;
  if (info != nullptr) {
    info->paper_ids = std::move(ids);
    info->class_names = std::move(classes);
    info->skipped_citations = skipped;
  }
  return data;
}

}  // namespace strata::io
