// CPU kernels of the rnn family (ops/rnn.h): the LSTM layer's cell (Note [LSTM
// layer]), one pass over [B, H] in float32; and the fused LSTM and GRU cells
// (Note [Fused RNN cells]), one pass over [B, H] through rnn_math.h in ATen's
// accumulation type, reading views of any strides.
#include <cmath>
#include <type_traits>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/rnn.h"
#include "ops/rnn_math.h"

namespace aotrt::cpu {
namespace {
using ops::RnnKernels;

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

void lstm_cell(const StridedView& gates, const StridedView& c, const StridedView& h,
               const char* fn) {
  AOTRT_CHECK(gates.dtype == ScalarType::Float32 && c.dtype == ScalarType::Float32 &&
                  h.dtype == ScalarType::Float32,
              kInternal, fn, ": the LSTM cell computes in float32");
  const int64_t batch = c.sizes[0], hidden = c.sizes[1];
  const auto* g = reinterpret_cast<const float*>(gates.data);
  auto* cs = reinterpret_cast<float*>(c.data);
  auto* hs = reinterpret_cast<float*>(h.data);
  for (int64_t b = 0; b < batch; ++b) {
    const float* gb = g + b * 4 * hidden;
    float* cb = cs + b * hidden;
    float* hb = hs + b * h.strides[0];
    for (int64_t j = 0; j < hidden; ++j) {
      const float i = sigmoid(gb[j]), f = sigmoid(gb[hidden + j]);
      const float cand = std::tanh(gb[2 * hidden + j]), o = sigmoid(gb[3 * hidden + j]);
      const float cn = f * cb[j] + i * cand;
      cb[j] = cn;
      hb[j * h.strides[1]] = o * std::tanh(cn);
    }
  }
}

// Element (r, c) of a 2-d view, or element c of a 1-d one (r ignored), widened.
template <typename T>
auto at(const StridedView& v, int64_t r, int64_t c) {
  const int64_t off = v.dim() == 2 ? r * v.strides[0] + c * v.strides[1] : c * v.strides[0];
  return load(read_elem<T>(v.data, off));
}

// f(T{}) for the fused cells' dtypes.
template <typename F>
void visit_cell_dtype(ScalarType t, const char* fn, F&& f) {
  switch (t) {
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    case ScalarType::Float16: return f(Half{});
    case ScalarType::BFloat16: return f(BFloat16{});
    default: AOTRT_FAIL(kInternal, fn, ": the fused cell kernel has no ", dtype_name(t));
  }
}

// Calls cell(b, j, x, h, b1, b2, prev) per (b, j) with the chunks of the gates
// and biases widened to A (zeros for absent biases).
template <typename T, int kChunks, typename Cell>
void for_each_unit(const ops::RnnCellViews& v, Cell&& cell) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t batch = v.prev.sizes[0], hidden = v.prev.sizes[1];
  const bool bias = v.input_bias.data != nullptr;
#pragma omp parallel for if (batch * hidden > 65536)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < hidden; ++j) {
      A x[kChunks], h[kChunks], b1[kChunks], b2[kChunks];
      for (int q = 0; q < kChunks; ++q) {
        const int64_t c = q * hidden + j;
        x[q] = static_cast<A>(at<T>(v.input_gates, b, c));
        h[q] = static_cast<A>(at<T>(v.hidden_gates, b, c));
        b1[q] = bias ? static_cast<A>(at<T>(v.input_bias, 0, c)) : A(0);
        b2[q] = bias ? static_cast<A>(at<T>(v.hidden_bias, 0, c)) : A(0);
      }
      cell(b, j, x, h, b1, b2, static_cast<A>(at<T>(v.prev, b, j)));
    }
  }
}

// Outputs are dense: hy, cy [B, H], the workspace [B, chunks * H].
template <typename T, typename A>
void put(const StridedView& out, int64_t row_len, int64_t b, int64_t c, A value) {
  write_elem<T>(out.data, b * row_len + c, convert_value<T>(value));
}

void fused_lstm_cell(const ops::RnnCellViews& v, const char* fn) {
  visit_cell_dtype(v.input_gates.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t H = v.prev.sizes[1];
    for_each_unit<T, 4>(v, [&](int64_t b, int64_t j, const auto& x, const auto& h,
                               const auto& b1, const auto& b2, auto cx) {
      const auto r = ops::rnn_math::lstm_cell(x, h, b1, b2, cx);
      put<T>(v.hy, H, b, j, r.hy);
      put<T>(v.cy, H, b, j, r.cy);
      put<T>(v.workspace, 4 * H, b, j, r.i);
      put<T>(v.workspace, 4 * H, b, H + j, r.f);
      put<T>(v.workspace, 4 * H, b, 2 * H + j, r.g);
      put<T>(v.workspace, 4 * H, b, 3 * H + j, r.o);
    });
  });
}

void fused_gru_cell(const ops::RnnCellViews& v, const char* fn) {
  visit_cell_dtype(v.input_gates.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t H = v.prev.sizes[1];
    for_each_unit<T, 3>(v, [&](int64_t b, int64_t j, const auto& x, const auto& h,
                               const auto& b1, const auto& b2, auto hx) {
      const auto r = ops::rnn_math::gru_cell(x, h, b1, b2, hx);
      put<T>(v.hy, H, b, j, r.hy);
      put<T>(v.workspace, 5 * H, b, j, r.r);
      put<T>(v.workspace, 5 * H, b, H + j, r.z);
      put<T>(v.workspace, 5 * H, b, 2 * H + j, r.n);
      put<T>(v.workspace, 5 * H, b, 3 * H + j, hx);  // exact: hx widened
      put<T>(v.workspace, 5 * H, b, 4 * H + j, r.hn);
    });
  });
}

constexpr RnnKernels kRnn{.lstm_cell = lstm_cell,
                          .fused_lstm_cell = fused_lstm_cell,
                          .fused_gru_cell = fused_gru_cell};
AOTRT_REGISTER_KERNELS(RnnKernels, cpu, kRnn);

}  // namespace
}  // namespace aotrt::cpu
