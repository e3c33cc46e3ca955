// Fits y = 3x - 1 with one linear layer through the installed Strata package; exits non-zero
// unless the loss drops, so the package test checks that the library works, not just links.
#include <cstdio>

#include "strata/ops.h"

int main() {
  using namespace strata;
  manual_seed(0);
  Tensor x = ops::rand({64, 1});
  Tensor y = x * 3.0 - 1.0;
  Tensor w = ops::zeros({1, 1}, TensorOptions().requires_grad(true));
  Tensor b = ops::zeros({1}, TensorOptions().requires_grad(true));
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = ops::mean(ops::square(ops::linear(x, w, b) - y));
    loss.backward();
    {
      NoGradGuard no_grad;
      ops::add_(w, w.grad(), -0.5);
      ops::add_(b, b.grad(), -0.5);
    }
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  std::printf("embed_minimal: loss %.6f -> %.6f\n", first, last);
  return last < first * 1e-3 ? 0 : 1;
}
