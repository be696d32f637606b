// CPU kernel of the LSTM layer (ops/rnn.h; Note [LSTM layer]): the cell, one
// pass over [B, H] in float32.
#include <cmath>

#include "core/error.h"
#include "ops/dispatch.h"
#include "ops/rnn.h"

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

constexpr RnnKernels kRnn{.lstm_cell = lstm_cell};
AOTRT_REGISTER_KERNELS(RnnKernels, cpu, kRnn);

}  // namespace
}  // namespace aotrt::cpu
