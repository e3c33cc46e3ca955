// View and layout ops with their backward formulas, and the Tensor methods that alias them.
#include "strata/ops/shape_ops.h"

#include <algorithm>
#include <numeric>

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/linalg.h"
#include "strata/ops/reduction.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// Wraps a raw view/copy `out` of `x` with a node whose backward is `bwd(grad)`.
template <class F>
Tensor with_grad(const char* name, const Tensor& x, Tensor out, F bwd) {
  if (auto node = make_node(name, {x})) {
    node->backward = [bwd](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> { return {bwd(g[0])}; };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor view(const Tensor& x, const Shape& shape) {
  Shape s = detail::infer_shape(shape, x.numel(), "view");
  Shape st;
  STRATA_CHECK(detail::view_strides(x, s, &st), ShapeError, "view: cannot view ", shape_str(x.shape()),
               " strides ", shape_str(x.strides()), " as ", shape_str(s), " (use reshape)");
  return with_grad("ViewBackward", x, detail::raw_view(x, s, st, x.storage_offset()),
                   [in = x.shape()](const Tensor& g) { return reshape(g, in); });
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = detail::infer_shape(shape, x.numel(), "reshape");
  if (s == x.shape()) return x;
  return with_grad("ReshapeBackward", x, detail::raw_reshape(x, s),
                   [in = x.shape()](const Tensor& g) { return reshape(g, in); });
}

Tensor permute(const Tensor& x, const Shape& dims) {
  const int64_t n = x.dim();
  STRATA_CHECK(int64_t(dims.size()) == n, ShapeError, "permute: ", dims.size(), " dims for a ", n, "-d tensor");
  Shape shape(static_cast<size_t>(n)), st(static_cast<size_t>(n)), inv(static_cast<size_t>(n));
  std::vector<bool> seen(size_t(n), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[size_t(i)], n, "permute");
    STRATA_CHECK(!seen[size_t(d)], ShapeError, "permute: repeated dim ", d, " in ", shape_str(dims));
    seen[size_t(d)] = true;
    shape[size_t(i)] = x.size(d);
    st[size_t(i)] = x.stride(d);
    inv[size_t(d)] = i;
  }
  return with_grad("PermuteBackward", x, detail::raw_view(x, shape, st, x.storage_offset()),
                   [inv](const Tensor& g) { return permute(g, inv); });
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  const int64_t n = x.dim();
  Shape dims(static_cast<size_t>(n));
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[size_t(wrap_dim(d0, n, "transpose"))], dims[size_t(wrap_dim(d1, n, "transpose"))]);
  return permute(x, dims);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  dim = wrap_dim(dim, x.dim(), "slice");
  const int64_t size = x.size(dim);
  STRATA_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape shape = x.shape(), st = x.strides();
  shape[size_t(dim)] = (end - start + step - 1) / step;
  st[size_t(dim)] *= step;
  Tensor out = detail::raw_view(x, shape, st, x.storage_offset() + start * x.stride(dim));
  return with_grad("SliceBackward", x, out, [in = x.shape(), dim, start, step](const Tensor& g) {
    // zeros of the input's shape with the gradient copied into the sliced positions
    Tensor z = zeros(in, TensorOptions(g.dtype()).device(g.device()));
    Shape zs = z.strides();
    Shape vshape = z.shape();
    vshape[size_t(dim)] = g.size(dim);
    zs[size_t(dim)] *= step;
    Tensor dst = detail::raw_view(z, vshape, zs, start * z.stride(dim));
    detail::kernels(g.device()).copy(dst, g);
    return z;
  });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  dim = wrap_dim(dim, x.dim(), "narrow");
  if (start < 0) start += x.size(dim);
  STRATA_CHECK(start >= 0 && length >= 0 && start + length <= x.size(dim), IndexError, "narrow: [", start, ", ",
               start + length, ") out of range for dim ", dim, " of ", shape_str(x.shape()));
  return slice(x, dim, start, start + length);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  dim = wrap_dim(dim, x.dim(), "select");
  const int64_t size = x.size(dim);
  STRATA_CHECK(index >= -size && index < size, IndexError, "select: index ", index, " out of range for dim ",
               dim, " of ", shape_str(x.shape()));
  if (index < 0) index += size;
  return squeeze(narrow(x, dim, index, 1), dim);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  const int64_t off = int64_t(s.size()) - x.dim();
  STRATA_CHECK(off >= 0, ShapeError, "expand: cannot expand ", shape_str(x.shape()), " to ", shape_str(shape));
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == -1) {
      STRATA_CHECK(int64_t(i) >= off, ShapeError, "expand: -1 in a new leading dim of ", shape_str(shape));
      s[i] = x.size(int64_t(i) - off);
    }
  if (s == x.shape()) return x;
  return with_grad("ExpandBackward", x, detail::raw_expand(x, s),
                   [in = x.shape()](const Tensor& g) { return sum_to(g, in); });
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  dim = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape s = x.shape(), st = x.strides();
  int64_t stride = dim < x.dim() ? x.stride(dim) * x.size(dim) : 1;
  s.insert(s.begin() + dim, 1);
  st.insert(st.begin() + dim, stride);
  return with_grad("UnsqueezeBackward", x, detail::raw_view(x, s, st, x.storage_offset()),
                   [dim](const Tensor& g) { return squeeze(g, dim); });
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) return x;
  dim = wrap_dim(dim, x.dim(), "squeeze");
  if (x.size(dim) != 1) return x;
  Shape s = x.shape(), st = x.strides();
  s.erase(s.begin() + dim);
  st.erase(st.begin() + dim);
  return with_grad("SqueezeBackward", x, detail::raw_view(x, s, st, x.storage_offset()),
                   [dim](const Tensor& g) { return unsqueeze(g, dim); });
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  start_dim = wrap_dim(start_dim, x.dim(), "flatten");
  end_dim = wrap_dim(end_dim, x.dim(), "flatten");
  STRATA_CHECK(start_dim <= end_dim, ValueError, "flatten: start_dim ", start_dim, " > end_dim ", end_dim);
  Shape s;
  for (int64_t i = 0; i < start_dim; ++i) s.push_back(x.size(i));
  int64_t m = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) m *= x.size(i);
  s.push_back(m);
  for (int64_t i = end_dim + 1; i < x.dim(); ++i) s.push_back(x.size(i));
  return reshape(x, s);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return clone(x);
}

Tensor clone(const Tensor& x) {
  Tensor out = detail::alloc(x.shape(), x.dtype(), x.device());
  detail::kernels(x.device()).copy(out, x);
  detail::record("clone", x.device(), 0, double(x.nbytes()), double(out.nbytes()));
  return with_grad("CloneBackward", x, out, [](const Tensor& g) { return g; });
}

Tensor to(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = detail::raw_cast(x, dtype);
  if (!is_floating(dtype)) return out;
  return with_grad("ToDtypeBackward", x, out, [src = x.dtype()](const Tensor& g) { return to(g, src); });
}

Tensor to(const Tensor& x, Device device) {
  if (x.device() == device) return x;
  Tensor out = detail::alloc(x.shape(), x.dtype(), device);
  // Host <-> device copies run on the non-CPU side's backend; meta copies move no data.
  if (!device.is_meta() && !x.device().is_meta()) {
    Device side = device.is_cpu() ? x.device() : device;
    detail::kernels(side).copy(out, x);
  } else {
    STRATA_CHECK(device.is_meta(), DeviceError, "to: cannot copy data out of meta tensor ", x.str());
  }
  detail::record("to_device", device, 0, double(x.nbytes()), double(out.nbytes()));
  return with_grad("ToDeviceBackward", x, out, [src = x.device()](const Tensor& g) { return to(g, src); });
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  STRATA_CHECK(!xs.empty(), ValueError, "cat: no tensors");
  const Tensor& first = xs[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  int64_t total = 0;
  DType dt = first.dtype();
  for (const Tensor& t : xs) {
    STRATA_CHECK(t.dim() == first.dim(), ShapeError, "cat: tensors of rank ", first.dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      STRATA_CHECK(d == dim || t.size(d) == first.size(d), ShapeError, "cat: shapes ", shape_str(first.shape()),
                   " and ", shape_str(t.shape()), " differ outside dim ", dim);
    STRATA_CHECK(t.device() == first.device(), DeviceError, "cat: tensors on ", first.device().str(), " and ",
                 t.device().str());
    total += t.size(dim);
    dt = promote_types(dt, t.dtype());
  }
  shape[size_t(dim)] = total;
  Tensor out = detail::alloc(shape, dt, first.device());
  std::vector<int64_t> sizes;
  int64_t at = 0;
  double bytes = 0;
  for (const Tensor& t : xs) {
    Shape vs = shape;
    vs[size_t(dim)] = t.size(dim);
    Tensor dst = detail::raw_view(out, vs, out.strides(), at * out.stride(dim));
    detail::kernels(out.device()).copy(dst, t);
    sizes.push_back(t.size(dim));
    at += t.size(dim);
    bytes += double(t.nbytes());
  }
  detail::record("cat", out.device(), 0, bytes, double(out.nbytes()));
  if (auto node = make_node("CatBackward", xs)) {
    node->backward = [sizes, dim](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      std::vector<Tensor> r;
      int64_t at = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        r.push_back(n.needs_grad(i) ? narrow(g[0], dim, at, sizes[i]) : Tensor());
        at += sizes[i];
      }
      return r;
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  STRATA_CHECK(!xs.empty(), ValueError, "stack: no tensors");
  std::vector<Tensor> u;
  for (const Tensor& t : xs) u.push_back(unsqueeze(t, dim));
  return cat(u, dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  dim = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  STRATA_CHECK(total == x.size(dim), ShapeError, "split: sizes sum to ", total, " but dim ", dim, " of ",
               shape_str(x.shape()), " has ", x.size(dim));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, dim, at, s));
    at += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  STRATA_CHECK(split_size > 0, ValueError, "split: split_size must be positive, got ", split_size);
  dim = wrap_dim(dim, x.dim(), "split");
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < x.size(dim); at += split_size) sizes.push_back(std::min(split_size, x.size(dim) - at));
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  STRATA_CHECK(chunks > 0, ValueError, "chunk: chunks must be positive, got ", chunks);
  dim = wrap_dim(dim, x.dim(), "chunk");
  return split(x, std::max<int64_t>(1, (x.size(dim) + chunks - 1) / chunks), dim);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.dim() - int64_t(shape.size());
  STRATA_CHECK(lead >= 0, ShapeError, "sum_to: cannot reduce ", shape_str(x.shape()), " to ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i < lead || (shape[size_t(i - lead)] == 1 && x.size(i) != 1)) dims.push_back(i);
  // A bias's gradient ([rows, C] -> [C]: the leading dims only, of a large contiguous host tensor):
  // one column-sum GEMV, as linear's bias gradient, instead of a transposed copy and row sums.
  int64_t rows = 1;
  bool leading = x.is_contiguous() && x.dtype() == DType::f32 && x.device().is_host_memory() && !dims.empty();
  for (size_t k = 0; k < dims.size() && leading; ++k)
    leading = dims[k] == int64_t(k), rows *= x.size(dims[k]);
  if (leading && rows >= 4096 && x.numel() / rows >= 16) {
    Tensor ones = full({1, rows}, 1.0, TensorOptions(x.dtype()).device(x.device()));
    return reshape(matmul(ones, reshape(x, {rows, x.numel() / rows})), shape);
  }
  Tensor r = dims.empty() ? x : sum(x, dims, /*keepdim=*/true);
  return reshape(r, shape);
}

}  // namespace strata::ops

namespace strata {
Tensor Tensor::view(const Shape& s) const { return ops::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return ops::reshape(*this, s); }
Tensor Tensor::permute(const Shape& d) const { return ops::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ops::transpose(*this, a, b); }
Tensor Tensor::t() const {
  STRATA_CHECK(dim() == 2, ShapeError, "t(): expects a 2-d tensor, got ", str());
  return ops::transpose(*this, 0, 1);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return ops::narrow(*this, d, s, l); }
Tensor Tensor::select(int64_t d, int64_t i) const { return ops::select(*this, d, i); }
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st) const { return ops::slice(*this, d, s, e, st); }
Tensor Tensor::expand(const Shape& s) const { return ops::expand(*this, s); }
Tensor Tensor::unsqueeze(int64_t d) const { return ops::unsqueeze(*this, d); }
Tensor Tensor::squeeze(int64_t d) const { return ops::squeeze(*this, d); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ops::flatten(*this, s, e); }
Tensor Tensor::contiguous() const { return ops::contiguous(*this); }
Tensor Tensor::clone() const { return ops::clone(*this); }
Tensor Tensor::to(Device d) const { return ops::to(*this, d); }
Tensor Tensor::to(DType t) const { return ops::to(*this, t); }
Tensor Tensor::sum() const { return ops::sum(*this); }
Tensor Tensor::mean() const { return ops::mean(*this); }

Tensor& Tensor::fill_(double value) {
  ops::detail::kernels(device()).fill(*this, value);
  bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  STRATA_CHECK(src.defined(), ValueError, "copy_: source is undefined");
  Tensor s = ops::detail::raw_expand(src, shape());
  Device side = device().is_cpu() ? s.device() : device();
  ops::detail::kernels(side).copy(*this, s);
  bump_version();
  return *this;
}
}  // namespace strata
