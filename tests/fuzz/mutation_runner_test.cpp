// The deterministic mutation runner: every fuzz target on its committed seed corpus
// (tests/fuzz/corpus/<target>/) and on seeded mutations of it (bit flips, interesting bytes and
// integers, truncation, duplicated and inserted runs). Every run must end in a value or a
// strata::Error; a crash fails the whole test binary. STRATA_FUZZ_MUTATIONS sets the mutations
// per target (default 3000). libFuzzer explores further by hand (libfuzzer_main.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "tests/fuzz/fuzz_targets.h"

using namespace strata;

namespace {

std::vector<std::string> corpus(const std::string& target) {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(STRATA_TEST_DATA_DIR) / "fuzz" / "corpus" / target;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// One to four edits of `s`, chosen by `g`.
std::string mutate(std::string s, std::mt19937_64& g) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(g() % n); };
  const int edits = 1 + int(g() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (g() % 7) {
      case 0:  // flip one bit
        if (!s.empty()) s[pick(s.size())] ^= char(1u << (g() % 8));
        break;
      case 1: {  // an interesting byte
        static const unsigned char bytes[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, '"', '{', '}', '\n'};
        if (!s.empty()) s[pick(s.size())] = char(bytes[pick(sizeof bytes)]);
        break;
      }
      case 2: {  // an interesting 32- or 64-bit integer, little-endian
        static const uint64_t ints[] = {
            0,    1,     0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull,
            4096, 65535, 1ull << 40};
        const uint64_t v = ints[pick(sizeof ints / sizeof ints[0])];
        const size_t w = g() % 2 ? 4 : 8;
        if (s.size() >= w) std::memcpy(&s[pick(s.size() - w + 1)], &v, w);
        break;
      }
      case 3:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 4: {  // duplicate a run
        if (s.empty()) break;
        const size_t a = pick(s.size()), n = 1 + pick(std::min<size_t>(64, s.size() - a));
        s.insert(pick(s.size() + 1), s.substr(a, n));
        break;
      }
      case 5: {  // insert random bytes
        std::string r(1 + pick(16), '\0');
        for (char& c : r) c = char(g());
        s.insert(pick(s.size() + 1), r);
        break;
      }
      case 6:  // erase a run
        if (!s.empty()) {
          const size_t a = pick(s.size());
          s.erase(a, 1 + pick(std::min<size_t>(32, s.size() - a)));
        }
        break;
    }
  }
  return s;
}

// Runs `input` through `t`: "" when it ended in a value or a strata::Error, else what escaped.
std::string outcome(const fuzz::Target& t, const std::string& input) {
  try {
    t.run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  } catch (const Error&) {
  } catch (const std::exception& e) {
    return std::string("a non-strata exception: ") + e.what();
  }
  return "";
}

class MutationRunner : public ::testing::TestWithParam<fuzz::Target> {};

}  // namespace

TEST_P(MutationRunner, EveryInputEndsInAValueOrAStrataError) {
  const fuzz::Target& t = GetParam();
  const std::vector<std::string> seeds = corpus(t.name);
  ASSERT_FALSE(seeds.empty()) << "no seed corpus for " << t.name;
  for (size_t i = 0; i < seeds.size(); ++i) EXPECT_EQ(outcome(t, seeds[i]), "") << t.name << " seed " << i;
  const char* env = std::getenv("STRATA_FUZZ_MUTATIONS");
  const int mutations = env ? std::atoi(env) : 3000;
  std::mt19937_64 g(std::hash<std::string>{}(t.name));
  int failures = 0;
  for (int k = 0; k < mutations && failures < 5; ++k) {
    const size_t seed = size_t(g() % seeds.size());
    const std::string input = mutate(seeds[seed], g);
    const std::string what = outcome(t, input);
    if (!what.empty()) {
      ++failures;
      ADD_FAILURE() << t.name << ", mutation " << k << " of seed " << seed << " (" << input.size()
                    << " bytes): " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Loaders, MutationRunner, ::testing::ValuesIn(fuzz::targets()),
                         [](const auto& info) { return std::string(info.param.name); });
