// SaveRecorder: a save policy that keeps every saved tensor as it is and records what autograd
// saved (op, module scope, planner block) and the module scopes forward entered and left.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "strata/autograd/saved_tensor.h"

namespace strata::testing {

class SaveRecorder final : public autograd::SavePolicy {
 public:
  struct Save {
    std::string op, scope, block;
  };
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override {
    saves.push_back({info.op, info.scope, info.block});
    return autograd::Packed{t, nullptr};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
  void on_scope(autograd::ScopeEvent e, autograd::Phase phase, const std::string& path) override {
    if (phase == autograd::Phase::Forward)
      events.push_back((e == autograd::ScopeEvent::Enter ? "enter " : "exit ") + path);
  }
  // The distinct scopes and blocks of the saves.
  std::set<std::string> scopes() const {
    std::set<std::string> out;
    for (const Save& s : saves) out.insert(s.scope);
    return out;
  }
  std::set<std::string> blocks() const {
    std::set<std::string> out;
    for (const Save& s : saves) out.insert(s.block);
    return out;
  }

  std::vector<Save> saves;
  std::vector<std::string> events;  // "enter <path>" / "exit <path>", forward only
};

}  // namespace strata::testing
