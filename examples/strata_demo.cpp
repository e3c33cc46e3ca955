// strata_demo: the built-in default job until the GPT trainer lands. Trains a byte-level
// MLP language model (16 bytes of context -> next byte) on a text file every Debian machine
// has, with AdamW + warmup/cosine, and prints step, loss, lr, tokens/s and memory.
//   strata_demo [--steps N] [--batch B] [--text FILE] [--seed S]
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "strata/strata.h"

using namespace strata;

namespace {

constexpr int64_t kContext = 16, kEmbed = 32, kHidden = 512, kVocab = 256;

class ByteMlp : public nn::Module {
 public:
  ByteMlp() {
    emb = register_module("emb", std::make_shared<nn::Embedding>(kVocab, kEmbed));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(kContext * kEmbed, kHidden));
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(kHidden));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(kHidden, kVocab));
  }
  // idx: [B, kContext] i64 -> logits [B, kVocab]
  Tensor forward(const Tensor& idx) override {
    Tensor e = (*emb)(idx);  // [B, T, C]
    Tensor h = (*fc1)(ops::reshape(e, {idx.size(0), kContext * kEmbed}));
    h = (*ln)(ops::gelu(h, "tanh"));
    return (*fc2)(h);
  }
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::LayerNorm> ln;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("strata_demo: cannot open text file '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A batch of windows starting at random offsets in [lo, hi - kContext - 1).
void make_batch(const std::string& text, int64_t lo, int64_t hi, int64_t B, uint64_t& rng, Tensor* x, Tensor* y) {
  std::vector<int64_t> xs(static_cast<size_t>(B * kContext)), ys(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int64_t start = lo + int64_t((rng >> 33) % uint64_t(hi - lo - kContext - 1));
    for (int64_t t = 0; t < kContext; ++t) xs[size_t(b * kContext + t)] = (unsigned char)text[size_t(start + t)];
    ys[size_t(b)] = (unsigned char)text[size_t(start + kContext)];
  }
  *x = ops::from_vector(xs, {B, kContext});
  *y = ops::from_vector(ys, {B});
}

double rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 600, B = 128;
  uint64_t seed = 1337;
  std::string path = "/usr/share/common-licenses/GPL-3";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--steps") steps = std::atoll(argv[i + 1]);
    else if (a == "--batch") B = std::atoll(argv[i + 1]);
    else if (a == "--text") path = argv[i + 1];
    else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: strata_demo [--steps N] [--batch B] [--text FILE] [--seed S]\n");
      return 2;
    }
  }
  try {
    std::string text = read_file(path);
    const int64_t split = int64_t(double(text.size()) * 0.9);
    if (split < 4 * kContext) throw ValueError("strata_demo: '" + path + "' is too short to train on");
    manual_seed(seed);
    auto model = std::make_shared<ByteMlp>();
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));
    optim::WarmupCosineSchedule sched(3e-3, steps / 20, steps, 3e-4);
    std::printf("strata_demo: byte-level MLP, %ld parameters, %zu bytes of %s, B=%ld, %ld steps\n",
                long(model->num_parameters()), text.size(), path.c_str(), long(B), long(steps));
    uint64_t rng = seed;
    Allocator& alloc = cpu_allocator();
    double tok_s = 0;
    for (int64_t step = 0; step < steps; ++step) {
      auto t0 = std::chrono::steady_clock::now();
      alloc.stats().reset_peaks();
      Tensor x, y;
      make_batch(text, 0, split, B, rng, &x, &y);
      sched.apply(opt, step);
      Tensor loss = ops::cross_entropy((*model)(x), y);
      opt.zero_grad();
      loss.backward();
      optim::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      tok_s = double(B) / secs;
      if (step % 50 == 0 || step == steps - 1) {
        double val = 0;
        {
          NoGradGuard ng;
          model->eval();
          uint64_t vr = 42;
          for (int k = 0; k < 4; ++k) {
            make_batch(text, split, int64_t(text.size()), 256, vr, &x, &y);
            val += ops::cross_entropy((*model)(x), y).item() / 4;
          }
          model->train();
        }
        MemorySnapshot m = alloc.stats().snapshot();
        int bar = int(20.0 * double(step + 1) / double(steps));
        std::printf("[%-20s] step %5ld/%ld  loss %.4f  val %.4f  lr %.2e  %.0f tok/s  step peak %.1f MB  rss %.0f MB\n",
                    std::string(size_t(bar), '#').c_str(), long(step + 1), long(steps), loss.item(), val,
                    sched.lr_at(step), tok_s, double(m.total_peak) / 1e6, rss_mb());
        std::fflush(stdout);
      }
    }
    // Sample: greedy-with-temperature continuation of the first context window.
    NoGradGuard ng;
    model->eval();
    size_t at = text.find("This License");
    if (at == std::string::npos || at + size_t(kContext) > text.size()) at = 0;
    const std::string prompt = text.substr(at, size_t(kContext));
    std::string ctx = prompt, out;
    for (int i = 0; i < 120; ++i) {
      std::vector<int64_t> v;
      for (char c : ctx) v.push_back((unsigned char)c);
      Tensor probs = ops::softmax(ops::mul((*model)(ops::from_vector(v, {1, kContext})), 1.0 / 0.7), -1);
      std::vector<double> p = probs.to_double_vector();
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      double u = double(rng >> 11) / 9007199254740992.0, acc = 0;
      int next = 0;
      for (; next < 255; ++next) {
        acc += p[size_t(next)];
        if (acc >= u) break;
      }
      out.push_back(char(next));
      ctx = ctx.substr(1) + char(next);
    }
    std::printf("sample: %s%s\n", prompt.c_str(), out.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "strata_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
