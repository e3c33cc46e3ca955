// Module: registration, PyTorch names and order, state_dict round trips and strict-load
// errors, train/eval, zero_grad, in-place to(), and the scope every forward runs in.
#include "strata/nn/module.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/autograd/saved_tensor.h"
#include "strata/autograd/scope.h"
#include "strata/core/allocator.h"
#include "strata/ops.h"
#include "strata/optim/sgd.h"
#include "support/error_of.h"
#include "support/save_recorder.h"

using namespace strata;

namespace {

// y = x W^T + b with W [out, in]: the smallest module with parameters.
class Affine : public nn::Module {
 public:
  Affine(int64_t in, int64_t out, DType dt = DType::f32) {
    weight = register_parameter("weight", ops::randn({out, in}, dt));
    bias = register_parameter("bias", ops::zeros({out}, dt));
  }
  Tensor forward(const Tensor& x) override { return ops::linear(x, weight, bias); }
  Tensor weight, bias;
};

class Attention : public nn::Module {
 public:
  Attention() {
    c_attn = register_module("c_attn", std::make_shared<Affine>(4, 12));
    c_proj = register_module("c_proj", std::make_shared<Affine>(4, 4));
    register_buffer("mask", ops::ones({4, 4}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) override {
    Tensor qkv = (*c_attn)(x);
    return (*c_proj)(ops::narrow(qkv, -1, 0, 4));
  }
  std::shared_ptr<Affine> c_attn, c_proj;
};

// A block with a multi-input forward, called through Module::call.
class Block : public nn::Module {
 public:
  Block() {
    attn = register_module("attn", std::make_shared<Attention>());
    register_buffer("counter", ops::zeros({1}, DType::i64));
    mark_as_block();
  }
  Tensor forward(const Tensor& x, const Tensor& residual_scale) { return x + (*attn)(x) * residual_scale; }
  Tensor operator()(const Tensor& x, const Tensor& s) { return call(&Block::forward, x, s); }
  std::shared_ptr<Attention> attn;
};

// Holds blocks in a plain container module that is never called itself.
class BlockList : public nn::Module {
 public:
  explicit BlockList(int n) {
    for (int i = 0; i < n; ++i) blocks.push_back(register_module(std::to_string(i), std::make_shared<Block>()));
  }
  std::vector<std::shared_ptr<Block>> blocks;
};

class TinyGPT : public nn::Module {
 public:
  explicit TinyGPT(int n_layer = 2) {
    wte = register_parameter("wte", ops::randn({10, 4}));
    h = register_module("h", std::make_shared<BlockList>(n_layer));
    ln_f = register_module("ln_f", std::make_shared<Affine>(4, 4));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    Tensor s = ops::scalar_tensor(0.5);
    for (auto& b : h->blocks) y = (*b)(y, s);
    return (*ln_f)(y);
  }
  Tensor wte;
  std::shared_ptr<BlockList> h;
  std::shared_ptr<Affine> ln_f;
};

using strata::testing::error_of;

const std::vector<std::string> kTinyGptParams = {
    "wte",
    "h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias", "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias",
    "h.1.attn.c_attn.weight", "h.1.attn.c_attn.bias", "h.1.attn.c_proj.weight", "h.1.attn.c_proj.bias",
    "ln_f.weight", "ln_f.bias"};

TEST(Module, NamedParametersUsePyTorchDottedNamesInRegistrationOrder) {
  TinyGPT m;
  EXPECT_EQ(m.named_parameters().keys(), kTinyGptParams);
  EXPECT_EQ(m.named_parameters(/*recurse=*/false).keys(), std::vector<std::string>{"wte"});
  EXPECT_EQ(m.parameters().size(), kTinyGptParams.size());
  EXPECT_EQ(m.named_buffers().keys(),
            (std::vector<std::string>{"h.0.counter", "h.0.attn.mask", "h.1.counter", "h.1.attn.mask"}));
  EXPECT_EQ(m.num_parameters(), 40 + 2 * (48 + 12 + 16 + 4) + 20);
}

TEST(Module, NamedModulesAndChildrenArePreorder) {
  auto m = std::make_shared<TinyGPT>(1);
  EXPECT_EQ(m->named_modules().keys(),
            (std::vector<std::string>{"", "h", "h.0", "h.0.attn", "h.0.attn.c_attn", "h.0.attn.c_proj", "ln_f"}));
  EXPECT_EQ(m->named_modules().at("").get(), m.get());
  EXPECT_EQ(m->named_children().keys(), (std::vector<std::string>{"h", "ln_f"}));
  EXPECT_EQ(m->children()[1].get(), m->ln_f.get());
  EXPECT_EQ(m->h->blocks[0]->attn->name(), "attn");
  EXPECT_EQ(m->h->blocks[0]->type_name(), "Block");
  // A stack-allocated module lists itself too (without owning itself).
  TinyGPT local(1);
  EXPECT_EQ(local.named_modules().at("").get(), &local);
}

TEST(Module, RegisterParameterMarksParameterAndRetagsStorage) {
  Tensor t = ops::randn({64, 64});
  EXPECT_EQ(t.storage()->category(), MemoryCategory::Temporary);
  int64_t before = cpu_allocator().stats().snapshot().current_of(MemoryCategory::Parameter);
  nn::Module m;
  Tensor p = m.register_parameter("w", t);
  EXPECT_EQ(p.impl(), t.impl());
  EXPECT_TRUE(t.is_parameter());
  EXPECT_TRUE(t.requires_grad());
  EXPECT_EQ(t.storage()->category(), MemoryCategory::Parameter);
  EXPECT_EQ(cpu_allocator().stats().snapshot().current_of(MemoryCategory::Parameter) - before, int64_t(t.nbytes()));
  Tensor frozen = m.register_parameter("frozen", ops::zeros({3}), /*requires_grad=*/false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_EQ(m.num_parameters(), 64 * 64 + 3);
  EXPECT_EQ(m.num_parameters(/*trainable_only=*/true), 64 * 64);
}

TEST(Module, RegisterParameterDetachesNonLeaves) {
  Tensor a = ops::ones({3});
  a.set_requires_grad(true);
  nn::Module m;
  Tensor p = m.register_parameter("p", a * 2.0);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
}

TEST(Module, RegisterRejectsBadAndDuplicateNames) {
  nn::Module m;
  m.register_parameter("w", ops::zeros({1}));
  EXPECT_NE(error_of([&] { m.register_buffer("w", ops::zeros({1})); }).find("already taken"), std::string::npos);
  EXPECT_NE(error_of([&] { m.register_module("w", std::make_shared<Affine>(1, 1)); }).find("'w'"), std::string::npos);
  EXPECT_THROW(m.register_parameter("a.b", ops::zeros({1})), ValueError);
  EXPECT_THROW(m.register_parameter("", ops::zeros({1})), ValueError);
  EXPECT_THROW(m.register_parameter("u", Tensor()), ValueError);
  EXPECT_THROW(m.register_module("n", std::shared_ptr<Affine>()), ValueError);
}

TEST(Module, TiedParametersAreListedOnceButSavedUnderEveryName) {
  // GPT-2 ties lm_head.weight to transformer.wte.
  auto model = std::make_shared<nn::Module>();
  auto gpt = model->register_module("transformer", std::make_shared<TinyGPT>(1));
  auto lm_head = model->register_module("lm_head", std::make_shared<nn::Module>());
  lm_head->register_parameter("weight", gpt->wte);
  auto names = model->named_parameters().keys();
  EXPECT_EQ(std::count(names.begin(), names.end(), "lm_head.weight"), 0);
  EXPECT_EQ(names.front(), "transformer.wte");
  EXPECT_EQ(names.size(), kTinyGptParams.size() - 4);
  EXPECT_TRUE(model->state_dict().contains("lm_head.weight"));
  EXPECT_EQ(model->num_parameters(), gpt->num_parameters());
}

TEST(Module, StateDictRoundTripCopiesValues) {
  manual_seed(1);
  TinyGPT a;
  manual_seed(2);
  TinyGPT b;
  nn::StateDict sd = a.state_dict();
  // Parameters and persistent buffers only, in PyTorch's order (own entries first).
  std::vector<std::string> keys = sd.keys();
  EXPECT_EQ(keys[0], "wte");
  EXPECT_EQ(keys[1], "h.0.counter");
  EXPECT_FALSE(sd.contains("h.0.attn.mask"));
  // Entries are detached views of the module's storage.
  EXPECT_EQ(sd.at("wte").storage(), a.wte.storage());
  EXPECT_FALSE(sd.at("wte").requires_grad());

  ASSERT_NE(a.wte.to_double_vector(), b.wte.to_double_vector());
  Tensor b_wte_handle = b.wte;
  b.load_state_dict(sd);
  for (const auto& [name, t] : a.state_dict()) EXPECT_EQ(t.to_double_vector(), b.state_dict().at(name).to_double_vector()) << name;
  EXPECT_EQ(b.wte.impl(), b_wte_handle.impl());  // loaded in place
  EXPECT_NE(b.wte.storage(), a.wte.storage());   // copied, not shared
}

TEST(Module, StrictLoadNamesMissingUnexpectedAndMismatchedKeys) {
  TinyGPT m(1);
  nn::StateDict sd = m.state_dict();
  sd.erase("ln_f.bias");
  sd.erase("h.0.attn.c_proj.weight");
  sd.insert("lm_head.weight", ops::zeros({10, 4}));
  std::string msg = error_of([&] { m.load_state_dict(sd); });
  EXPECT_NE(msg.find("Error(s) in loading state_dict for TinyGPT"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Missing key(s) in state_dict: \"h.0.attn.c_proj.weight\", \"ln_f.bias\"."), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"lm_head.weight\"."), std::string::npos) << msg;
  // Non-strict loads what matches.
  EXPECT_NO_THROW(m.load_state_dict(sd, /*strict=*/false));

  // Shape mismatches are errors even when not strict, and nothing is copied.
  nn::StateDict bad = m.state_dict();
  std::vector<double> before = m.wte.to_double_vector();
  bad.insert_or_assign("wte", ops::zeros({10, 4}));
  bad.insert_or_assign("ln_f.weight", ops::zeros({4, 5}));
  msg = error_of([&] { m.load_state_dict(bad, /*strict=*/false); });
  EXPECT_NE(msg.find("size mismatch for ln_f.weight: copying a param with shape [4, 5] from checkpoint, the shape "
                     "in current model is [4, 4]."),
            std::string::npos)
      << msg;
  EXPECT_EQ(m.wte.to_double_vector(), before);
}

TEST(Module, TrainAndEvalPropagateToEveryDescendant) {
  TinyGPT m;
  for (const auto& [name, mod] : m.named_modules()) EXPECT_TRUE(mod->is_training()) << name;
  m.eval();
  for (const auto& [name, mod] : m.named_modules()) EXPECT_FALSE(mod->is_training()) << name;
  m.h->blocks[1]->train();
  EXPECT_TRUE(m.h->blocks[1]->attn->c_attn->is_training());
  EXPECT_FALSE(m.h->blocks[0]->attn->is_training());
}

TEST(Module, ZeroGradDropsOrZeroFillsEveryGradient) {
  TinyGPT m;
  Tensor x = ops::randn({3, 4});
  m(x).sum().backward();
  for (const Tensor& p : m.parameters()) {
    if (p.impl() == m.wte.impl()) continue;  // unused in forward
    ASSERT_TRUE(p.grad().defined());
  }
  m.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : m.parameters()) {
    if (!p.grad().defined()) continue;
    for (double v : p.grad().to_double_vector()) EXPECT_EQ(v, 0.0);
  }
  m.zero_grad();
  for (const Tensor& p : m.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToDtypeConvertsInPlaceKeepingHandlesAndAutogradState) {
  TinyGPT m(1);
  Tensor handle = m.ln_f->weight;
  std::vector<double> values = handle.to_double_vector();
  Tensor x = ops::randn({2, 4});
  m(x).sum().backward();
  optim::SGD opt(m.parameters(), optim::SGDOptions(0.1));  // built before the conversion
  m.to(DType::f64);
  EXPECT_EQ(handle.dtype(), DType::f64);
  EXPECT_EQ(handle.to_double_vector(), values);
  EXPECT_TRUE(handle.requires_grad());
  EXPECT_TRUE(handle.is_parameter());
  EXPECT_EQ(handle.storage()->category(), MemoryCategory::Parameter);
  EXPECT_EQ(handle.grad().dtype(), DType::f64);
  EXPECT_EQ(m.named_buffers().at("h.0.counter").dtype(), DType::i64);  // integer buffers stay
  EXPECT_EQ(m.named_buffers().at("h.0.attn.mask").dtype(), DType::f64);
  // The optimizer holds the same tensors, so it updates the converted data.
  opt.zero_grad();
  m(ops::randn({2, 4}, DType::f64)).sum().backward();
  opt.step();
  EXPECT_NE(handle.to_double_vector(), values);
  EXPECT_THROW(m.to(DType::i32), TypeError);
}

TEST(Module, ToDeviceKeepsHandles) {
  TinyGPT m(1);
  Tensor handle = m.wte;
  m.to(kMeta);
  EXPECT_TRUE(handle.device().is_meta());
  EXPECT_TRUE(m.named_parameters().at("wte").device().is_meta());
  EXPECT_TRUE(handle.requires_grad());
}

TEST(Module, ForwardWithoutSingleTensorOverloadThrows) {
  nn::Module m;
  EXPECT_THROW(m(ops::zeros({1})), NotImplementedError);
}

// ---- scopes ----

using RecordingPolicy = strata::testing::SaveRecorder;
using SaveRecord = RecordingPolicy::Save;

TEST(ModuleScope, SavedTensorsSeeTheNestedModulePathAndBlock) {
  TinyGPT m(2);
  auto policy = std::make_shared<RecordingPolicy>();
  Tensor x = ops::randn({3, 4});
  x.set_requires_grad(true);
  {
    autograd::SavePolicyGuard guard(policy);
    m(x).sum().backward();
  }
  std::vector<std::string> scopes;
  for (const SaveRecord& r : policy->saves) {
    if (scopes.empty() || scopes.back() != r.scope) scopes.push_back(r.scope);
    if (r.scope.rfind("h.1", 0) == 0) {
      EXPECT_EQ(r.block, "h.1") << r.op << " in " << r.scope;
    }
    if (r.scope == "ln_f") {
      EXPECT_EQ(r.block, "");
    }
  }
  // Every save happened inside a module; the order follows the forward.
  const std::vector<std::string> expected = {"h.0.attn.c_attn", "h.0.attn.c_proj", "h.0",
                                             "h.1.attn.c_attn", "h.1.attn.c_proj", "h.1", "ln_f"};
  std::vector<std::string> filtered;
  for (const std::string& s : scopes)
    if (std::find(expected.begin(), expected.end(), s) != expected.end() &&
        (filtered.empty() || filtered.back() != s))
      filtered.push_back(s);
  EXPECT_EQ(filtered, expected);
  bool saw_c_attn_linear = false;
  for (const SaveRecord& r : policy->saves) saw_c_attn_linear |= r.scope == "h.1.attn.c_attn";
  EXPECT_TRUE(saw_c_attn_linear);

  // Enter/exit events nest properly and the root pushes no scope.
  ASSERT_FALSE(policy->events.empty());
  EXPECT_EQ(policy->events.front(), "enter h.0");
  EXPECT_EQ(policy->events[1], "enter h.0.attn");
  EXPECT_EQ(policy->events[2], "enter h.0.attn.c_attn");
  EXPECT_EQ(policy->events[3], "exit h.0.attn.c_attn");
  EXPECT_EQ(policy->events.back(), "exit ln_f");
  EXPECT_EQ(autograd::current_scope_path(), "");
}

TEST(ModuleScope, ScopeIsPoppedWhenForwardThrows) {
  struct Failing : nn::Module {
    Tensor forward(const Tensor&) override {
      EXPECT_EQ(autograd::current_scope_path(), "outer.bad");
      throw ValueError("boom");
    }
  };
  struct Outer : nn::Module {
    Outer() { bad = register_module("bad", std::make_shared<Failing>()); }
    Tensor forward(const Tensor& x) override { return (*bad)(x); }
    std::shared_ptr<Failing> bad;
  };
  auto root = std::make_shared<nn::Module>();
  auto outer = root->register_module("outer", std::make_shared<Outer>());
  EXPECT_THROW((*outer)(ops::zeros({1})), ValueError);
  EXPECT_EQ(autograd::current_scope_path(), "");
}

TEST(ModuleScope, TheScopeIsTheNamedModulesPathEvenWhenRegisteredLate) {
  // Blocks registered into a plain container before the container gets its name.
  auto list = std::make_shared<BlockList>(4);
  EXPECT_EQ(list->blocks[3]->path(), "3");
  auto root = std::make_shared<nn::Module>();
  root->register_module("layers", list);
  EXPECT_EQ(list->blocks[3]->path(), "layers.3");
  EXPECT_EQ(list->blocks[3]->attn->path(), "layers.3.attn");
  for (const auto& [name, module] : root->named_modules()) EXPECT_EQ(module->path(), name);
  std::string seen;
  {
    nn::ModuleScope scope(*list->blocks[3]->attn);  // called outside its parent: same path
    seen = autograd::current_scope_path();
    EXPECT_EQ(autograd::current_block_path(), "");
  }
  EXPECT_EQ(seen, "layers.3.attn");
  {
    nn::ModuleScope outer(*list->blocks[3]);
    nn::ModuleScope inner(*list->blocks[3]->attn);
    seen = autograd::current_scope_path();
    EXPECT_EQ(autograd::current_block_path(), "layers.3");
  }
  EXPECT_EQ(seen, "layers.3.attn");
}

TEST(ModuleScope, AForwardThatOpensItsOwnScopeEntersItOnce) {
  auto policy = std::make_shared<RecordingPolicy>();
  auto root = std::make_shared<nn::Module>();
  auto list = root->register_module("layers", std::make_shared<BlockList>(1));
  {
    autograd::SavePolicyGuard guard(policy);
    nn::ModuleScope a(*list->blocks[0]);
    nn::ModuleScope again(*list->blocks[0]);  // a public forward's own scope, called through call()
    EXPECT_EQ(autograd::current_scope_path(), "layers.0");
  }
  EXPECT_EQ(policy->events, (std::vector<std::string>{"enter layers.0", "exit layers.0"}));
}

}  // namespace
