#include "ops/rnn.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"

namespace aotrt::ops {
namespace {

using Dims = std::vector<int64_t>;
constexpr int64_t kLstmMode = 2;  // ideep's rnn_kind::LSTM

std::unique_ptr<TensorImpl> contiguous_f32(std::span<const int64_t> sizes, Device device,
                                           const char* fn) {
  return empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float32, device, fn);
}

// t converted to float32 (a new contiguous tensor; no copy when it is one already).
const TensorImpl& as_f32(const TensorImpl& t, std::unique_ptr<TensorImpl>& keep, const char* fn) {
  if (t.dtype() == ScalarType::Float32) return t;
  keep = contiguous_f32(t.sizes(), t.device(), fn);
  copy_tensor(*keep, t, fn);
  return *keep;
}

std::unique_ptr<TensorImpl> view(const TensorImpl& t, std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides, int64_t offset,
                                 const char* fn) {
  return make_tensor(t.storage(), sizes, strides, offset, t.dtype(), fn);
}

void check_float(const TensorImpl& t, const char* name, const char* fn) {
  const ScalarType d = t.dtype();
  AOTRT_CHECK(d == ScalarType::Float32 || d == ScalarType::BFloat16 || d == ScalarType::Float16,
              kUnsupported, fn, ": argument '", name, "' is ", dtype_name(d),
              "; the LSTM layer serves float32, bfloat16 and float16");
}

void check_sizes(const TensorImpl& t, std::initializer_list<int64_t> want, const char* name,
                 const char* fn) {
  const Dims w(want);
  AOTRT_CHECK(std::equal(t.sizes().begin(), t.sizes().end(), w.begin(), w.end()),
              kInvalidArgument, fn, ": argument '", name, "' has sizes ", sizes_text(t.sizes()),
              ", expected ", sizes_text(w));
}

// ATen's TensorArg: "argument #2 'hidden_gates'".
struct CellArg {
  const TensorImpl* t;
  int position;
  const char* name;
};

std::string arg_text(const CellArg& a) {
  return "argument #" + std::to_string(a.position) + " '" + a.name + "'";
}

// ATen's checkSizes of native/cuda/RNN.cu (Note [Fused RNN cells]) and aotrt's
// stricter shape checks; returns H.
int64_t check_cell(const CellArg& ig, const CellArg& hg, const CellArg& ib, const CellArg& hb,
                   int64_t factor, const CellArg& prev, const char* op, const char* fn) {
  const std::string from = std::string(" (while checking arguments for ") + op + ")";
  const ScalarType dtype = ig.t->dtype();
  AOTRT_CHECK(dtype == ScalarType::Float32 || dtype == ScalarType::Float64 ||
                  dtype == ScalarType::Float16 || dtype == ScalarType::BFloat16,
              kUnsupported, fn, ": \"", op, "\" not implemented for '", dtype_name(dtype),
              "' (float32, float64, float16 and bfloat16 are)");
  auto check_dim = [&](const CellArg& a, int64_t dim) {
    AOTRT_CHECK(a.t->dim() == dim, kInvalidArgument, fn, ": Expected ", dim,
                "-dimensional tensor, but got ", a.t->dim(), "-dimensional tensor for ",
                arg_text(a), from);
  };
  auto check_same_size = [&](const CellArg& a, const CellArg& b) {
    const auto x = a.t->sizes(), y = b.t->sizes();
    AOTRT_CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()), kInvalidArgument, fn,
                ": Expected tensor for ", arg_text(a), " to have same size as tensor for ",
                arg_text(b), "; but ", sizes_text(x), " does not equal ", sizes_text(y), from);
  };
  check_dim(ig, 2);
  check_same_size(ig, hg);
  const int64_t batch = ig.t->sizes()[0], gates = ig.t->sizes()[1];
  AOTRT_CHECK((ib.t == nullptr) == (hb.t == nullptr), kInvalidArgument, fn, ": ",
              arg_text(ib.t != nullptr ? ib : hb), " is given and ",
              arg_text(ib.t != nullptr ? hb : ib),
              " is not: the cell takes both biases or neither");
  if (ib.t != nullptr) {
    check_dim(ib, 1);
    AOTRT_CHECK(ib.t->numel() == gates, kInvalidArgument, fn, ": Expected tensor for ",
                arg_text(ib), " to have ", gates, " elements; but it actually has ",
                ib.t->numel(), " elements", from);
    check_same_size(ib, hb);
  }
  check_dim(prev, 2);
  const int64_t want = checked_mul(batch, gates, fn) / factor;
  AOTRT_CHECK(prev.t->numel() == want, kInvalidArgument, fn, ": Expected tensor for ",
              arg_text(prev), " to have ", want, " elements; but it actually has ",
              prev.t->numel(), " elements", from);
  // Beyond ATen: its kernel takes H from prev's last dim and reads the gates as [B, factor, H].
  const int64_t hidden = gates / factor;
  AOTRT_CHECK(gates % factor == 0 && prev.t->sizes()[0] == batch && prev.t->sizes()[1] == hidden,
              kInvalidArgument, fn, ": ", arg_text(prev), " has sizes ",
              sizes_text(prev.t->sizes()), "; with gates of sizes ", sizes_text(ig.t->sizes()),
              " it must be [", batch, ", ", gates, " / ", factor, "] (and ", gates,
              " a multiple of ", factor, ")");
  for (const CellArg* a : {&hg, &ib, &hb, &prev}) {
    if (a->t == nullptr) continue;
    AOTRT_CHECK(a->t->device() == ig.t->device(), kInvalidArgument, fn,
                ": Expected tensor for ", arg_text(*a), " to have the same device as tensor for ",
                arg_text(ig), "; but device ", a->t->device().str(), " does not equal ",
                ig.t->device().str(), from);
    AOTRT_CHECK(a->t->dtype() == dtype, kInvalidArgument, fn, ": expected scalar type ",
                dtype_name(dtype), " but found ", dtype_name(a->t->dtype()), " for ",
                arg_text(*a));
  }
  return hidden;
}

std::unique_ptr<TensorImpl> dense_like(std::span<const int64_t> sizes, const TensorImpl& like,
                                       const char* fn) {
  return empty_strided(sizes, contiguous_strides(sizes), like.dtype(), like.device(), fn);
}

RnnCellViews cell_views(const TensorImpl& ig, const TensorImpl& hg, const TensorImpl& prev,
                        const TensorImpl* ib, const TensorImpl* hb, const RnnCellResult& r) {
  RnnCellViews v;
  v.input_gates = strided_view(ig);
  v.hidden_gates = strided_view(hg);
  if (ib != nullptr) {
    v.input_bias = strided_view(*ib);
    v.hidden_bias = strided_view(*hb);
  }
  v.prev = strided_view(prev);
  v.hy = strided_view(*r.hy);
  if (r.cy) v.cy = strided_view(*r.cy);
  v.workspace = strided_view(*r.workspace);
  return v;
}

}  // namespace

RnnCellResult thnn_fused_lstm_cell(const TensorImpl& input_gates, const TensorImpl& hidden_gates,
                                   const TensorImpl& cx, const TensorImpl* input_bias,
                                   const TensorImpl* hidden_bias, const char* fn) {
  (void)check_cell({&input_gates, 1, "input_gates"}, {&hidden_gates, 2, "hidden_gates"},
                   {input_bias, 3, "input_bias"}, {hidden_bias, 4, "hidden_bias"}, 4,
                   {&cx, 5, "prev_hidden"}, "_thnn_fused_lstm_cell", fn);
  RnnCellResult r;
  r.hy = dense_like(cx.sizes(), cx, fn);
  r.cy = dense_like(cx.sizes(), cx, fn);
  r.workspace = dense_like(input_gates.sizes(), input_gates, fn);
  if (cx.numel() == 0) return r;
  kernel(&RnnKernels::fused_lstm_cell, input_gates.device(), fn)(
      cell_views(input_gates, hidden_gates, cx, input_bias, hidden_bias, r), fn);
  return r;
}

RnnCellResult thnn_fused_gru_cell(const TensorImpl& input_gates, const TensorImpl& hidden_gates,
                                  const TensorImpl& hx, const TensorImpl* input_bias,
                                  const TensorImpl* hidden_bias, const char* fn) {
  const int64_t hidden =
      check_cell({&input_gates, 1, "input_gates"}, {&hidden_gates, 2, "hidden_gates"},
                 {input_bias, 3, "input_bias"}, {hidden_bias, 4, "hidden_bias"}, 3,
                 {&hx, 5, "prev_hidden"}, "_thnn_fused_gru_cell", fn);
  RnnCellResult r;
  r.hy = dense_like(hx.sizes(), hx, fn);
  const int64_t ws_sizes[] = {hx.sizes()[0], checked_mul(hidden, 5, fn)};
  r.workspace = dense_like(ws_sizes, hx, fn);
  if (hx.numel() == 0) return r;
  kernel(&RnnKernels::fused_gru_cell, input_gates.device(), fn)(
      cell_views(input_gates, hidden_gates, hx, input_bias, hidden_bias, r), fn);
  return r;
}

RnnLayerResult mkldnn_rnn_layer(const TensorImpl& input, const TensorImpl& w0,
                                const TensorImpl& w1, const TensorImpl& w2, const TensorImpl& w3,
                                const TensorImpl& hx, const TensorImpl& cx, bool reverse,
                                std::span<const int64_t> batch_sizes, int64_t mode,
                                int64_t hidden_size, int64_t num_layers, bool has_biases,
                                bool /*bidirectional: one direction per call, as ATen's*/,
                                bool batch_first, bool /*train: inference only here*/,
                                const char* fn) {
  AOTRT_CHECK(num_layers == 1, kInvalidArgument, fn, ": mkldnn_rnn supports only single layer");
  AOTRT_CHECK(batch_sizes.empty(), kInvalidArgument, fn,
              ": mkldnn_rnn doesn't support packed input");
  AOTRT_CHECK(mode == kLstmMode, kUnsupported, fn, ": rnn mode ", mode,
              " is not served (2, LSTM, is: torch decomposes the other RNNs into matmuls)");
  AOTRT_CHECK(input.dim() == 3, kInvalidArgument, fn, ": input must be 3-d, got sizes ",
              sizes_text(input.sizes()));
  const int64_t h = hidden_size;
  AOTRT_CHECK(h > 0, kInvalidArgument, fn, ": hidden_size must be positive, got ", h);
  const int64_t t_dim = batch_first ? 1 : 0, b_dim = batch_first ? 0 : 1;
  const int64_t steps = input.sizes()[t_dim], batch = input.sizes()[b_dim];
  const int64_t in_size = input.sizes()[2];
  const int64_t gates = checked_mul(4, h, fn);
  for (const auto& [t, name] : {std::pair{&input, "input"}, {&w0, "weight0"}, {&w1, "weight1"},
                                {&hx, "hx_"}, {&cx, "cx_"}}) {
    check_float(*t, name, fn);
    AOTRT_CHECK(t->device() == input.device(), kInvalidArgument, fn, ": argument '", name,
                "' is on ", t->device().str(), ", input on ", input.device().str());
  }
  check_sizes(w0, {gates, in_size}, "weight0", fn);
  check_sizes(w1, {gates, h}, "weight1", fn);
  check_sizes(hx, {1, batch, h}, "hx_", fn);
  check_sizes(cx, {1, batch, h}, "cx_", fn);
  if (has_biases) {
    for (const auto& [t, name] : {std::pair{&w2, "weight2"}, {&w3, "weight3"}}) {
      check_float(*t, name, fn);
      check_sizes(*t, {gates}, name, fn);
    }
  }
  const Device device = input.device();
  const ScalarType dtype = input.dtype();
  const int64_t y_sizes[] = {input.sizes()[0], input.sizes()[1], h};
  RnnLayerResult r;
  r.output = empty_strided(y_sizes, contiguous_strides(y_sizes), dtype, device, fn);
  r.hy = empty_strided(hx.sizes(), contiguous_strides(hx.sizes()), hx.dtype(), device, fn);
  r.cy = empty_strided(cx.sizes(), contiguous_strides(cx.sizes()), cx.dtype(), device, fn);
  const int64_t empty[] = {0};
  r.workspace = empty_strided(empty, contiguous_strides(empty), ScalarType::UInt8, device, fn);

  // Float32 operands (Note [LSTM layer]).
  std::unique_ptr<TensorImpl> keep[3];
  const TensorImpl& x = as_f32(input, keep[0], fn);
  const TensorImpl& wih = as_f32(w0, keep[1], fn);
  const TensorImpl& whh = as_f32(w1, keep[2], fn);
  const int64_t bh[] = {batch, h}, bh_strides[] = {h, 1};
  // h_{t-1}: hx's [B, H], then each step's row of y (which is float32 or a temporary).
  std::unique_ptr<TensorImpl> y_tmp;
  const TensorImpl* y = r.output.get();
  if (dtype != ScalarType::Float32) y = (y_tmp = contiguous_f32(y_sizes, device, fn)).get();
  auto c = contiguous_f32(bh, device, fn);
  copy_tensor(*c, *view(cx, bh, cx.strides().subspan(1), cx.storage_offset(), fn), fn);
  auto h0 = contiguous_f32(bh, device, fn);
  copy_tensor(*h0, *view(hx, bh, hx.strides().subspan(1), hx.storage_offset(), fn), fn);
  if (steps == 0 || batch == 0) {
    copy_tensor(*r.hy, *view(*h0, hx.sizes(), contiguous_strides(hx.sizes()), 0, fn), fn);
    copy_tensor(*r.cy, *view(*c, cx.sizes(), contiguous_strides(cx.sizes()), 0, fn), fn);
    return r;
  }

  // Every step's input projection in one gemm: xg [rows, 4H] = x W_ih^T + (b_ih + b_hh),
  // rows in x's own order (time-major, or batch-major with batch_first).
  const int64_t rows = checked_mul(steps, batch, fn);
  const int64_t xg_sizes[] = {rows, gates}, x2_sizes[] = {rows, in_size};
  auto xg = contiguous_f32(xg_sizes, device, fn);
  std::unique_ptr<TensorImpl> x_dense;
  const TensorImpl* xs = &x;
  if (!is_contiguous(x.sizes(), x.strides())) {
    x_dense = contiguous_f32(x.sizes(), device, fn);
    copy_tensor(*x_dense, x, fn);
    xs = x_dense.get();
  }
  auto x_rows = view(*xs, x2_sizes, contiguous_strides(x2_sizes), xs->storage_offset(), fn);
  const int64_t wih_sizes[] = {in_size, gates}, wih_strides[] = {wih.strides()[1], wih.strides()[0]};
  auto wih_t = view(wih, wih_sizes, wih_strides, wih.storage_offset(), fn);
  if (has_biases) {
    auto bias = contiguous_f32(Dims{gates}, device, fn);
    auto b_hh = contiguous_f32(Dims{gates}, device, fn);
    copy_tensor(*bias, w2, fn);
    copy_tensor(*b_hh, w3, fn);
    auto sum = add(*bias, *b_hh, 1.0, fn);  // float32 + float32: float32
    addmm_out(*xg, *sum, *x_rows, *wih_t, 1.0, 1.0, fn);
  } else {
    mm_out(*xg, *x_rows, *wih_t, fn);
  }

  // The steps: gates = xg_t + h_{t-1} W_hh^T, then the cell writes c_t and y_t = h_t.
  const int64_t whh_sizes[] = {h, gates}, whh_strides[] = {whh.strides()[1], whh.strides()[0]};
  auto whh_t = view(whh, whh_sizes, whh_strides, whh.storage_offset(), fn);
  const int64_t g_sizes[] = {batch, gates};
  auto g = contiguous_f32(g_sizes, device, fn);
  const auto cell = kernel(&RnnKernels::lstm_cell, device, fn);
  const int64_t xg_row = batch_first ? steps * gates : gates;  // between batch rows
  const int64_t y_row = batch_first ? steps * h : h;
  const int64_t xg_strides[] = {xg_row, 1}, y_strides[] = {y_row, 1};
  std::unique_ptr<TensorImpl> h_prev = std::move(h0);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const int64_t xg_at = batch_first ? t * gates : t * batch * gates;
    const int64_t y_at = batch_first ? t * h : t * batch * h;
    auto xg_t = view(*xg, g_sizes, xg_strides, xg_at, fn);
    addmm_out(*g, *xg_t, *h_prev, *whh_t, 1.0, 1.0, fn);
    auto y_t = view(*y, bh, y_strides, y->storage_offset() + y_at, fn);
    cell(strided_view(*g), strided_view(*c), strided_view(*y_t), fn);
    h_prev = std::move(y_t);
  }
  copy_tensor(*view(*r.hy, bh, bh_strides, 0, fn), *h_prev, fn);
  copy_tensor(*view(*r.cy, bh, bh_strides, 0, fn), *c, fn);
  if (y_tmp) copy_tensor(*r.output, *y_tmp, fn);
  return r;
}

}  // namespace aotrt::ops
