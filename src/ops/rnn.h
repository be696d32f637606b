// Recurrent layers: mkldnn_rnn_layer, the one LSTM layer that torch's
// decomposition of aten.lstm calls on the CPU (torch/_decomp/decompositions.py,
// mkldnn_one_layer_lstm: inference, float32 or bfloat16, no projections).
//
// Note [LSTM layer]
// ATen's mkldnn_rnn_layer(input, w0, w1, w2, w3, hx, cx, reverse, batch_sizes,
// mode, hidden_size, num_layers, has_biases, bidirectional, batch_first, train)
// runs one direction of one LSTM layer (mode 2, ideep's rnn_kind::LSTM; the
// decomposition calls it once per layer and direction):
//   w0 weight_ih [4H, I], w1 weight_hh [4H, H], w2 bias_ih [4H], w3 bias_hh
//   [4H] (read only with has_biases: without, the decomposition passes zeros
//   of w0's and w1's sizes), hx and cx [1, B, H]; input [T, B, I] ([B, T, I]
//   with batch_first);
//   gates_t = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh, chunked i, f, g, o;
//   c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g); h_t = sigmoid(o) tanh(c_t);
//   y_t = h_t, the steps taken from t = T - 1 down with `reverse`.
// Results (torch's meta function): y [T, B, H] ([B, T, H] with batch_first),
// hy and cy of hx's and cx's sizes, all contiguous in input's dtype, and an
// empty uint8 workspace. ATen refuses num_layers != 1 and packed sequences
// (batch_sizes); a mode other than LSTM has no decomposition that calls it and
// is refused. aotrt computes in float32 (oneDNN, ATen's library, keeps float32
// gates and states for bfloat16 too): the input projection of every step in
// one gemm, then per step one gemm of h_{t-1} and one pass of the cell over
// [B, H]; bfloat16 and float16 results are rounded once at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. gates [B, 4H] float32,
// contiguous (i, f, g, o); c [B, H] float32 contiguous, c_{t-1} in and c_t
// out; h [B, H] float32, any strides: h_t out.
struct RnnKernels {
  void (*lstm_cell)(const StridedView& gates, const StridedView& c, const StridedView& h,
                    const char* fn);
};

struct RnnLayerResult {
  std::unique_ptr<TensorImpl> output, hy, cy, workspace;
};

RnnLayerResult mkldnn_rnn_layer(const TensorImpl& input, const TensorImpl& w0,
                                const TensorImpl& w1, const TensorImpl& w2, const TensorImpl& w3,
                                const TensorImpl& hx, const TensorImpl& cx, bool reverse,
                                std::span<const int64_t> batch_sizes, int64_t mode,
                                int64_t hidden_size, int64_t num_layers, bool has_biases,
                                bool bidirectional, bool batch_first, bool train,
                                const char* fn);

}  // namespace aotrt::ops
