// Recurrent layers: mkldnn_rnn_layer, the one LSTM layer that torch's
// decomposition of aten.lstm calls on the CPU (torch/_decomp/decompositions.py,
// mkldnn_one_layer_lstm: inference, float32 or bfloat16, no projections); and
// the fused LSTM and GRU cells that aten.lstm_cell and aten.gru_cell
// (nn.LSTMCell, nn.GRUCell) call on CUDA.
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
//
// Note [Fused RNN cells]
// nn.LSTMCell and nn.GRUCell on CUDA compute their two gate projections as
// matmuls and hand the rest to one fused op (facts from ATen's
// native/cuda/RNN.cu; the unit rows' references are these formulas computed by
// gen_ops_reference.py with torch's CPU ops, torch's CPU having no kernel for
// either op):
//   _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias?,
//       hidden_bias?) -> (hy, cy, workspace)    (a C shim, CUDA only)
//   _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias?,
//       hidden_bias?) -> (hy, workspace)        (no C shim: the proxy executor)
// input_gates and hidden_gates [B, G] (G = 4H for the LSTM, 3H for the GRU),
// the biases [G] (both or neither), cx / hx [B, H]; every operand of
// input_gates' dtype (float32, float64, float16, bfloat16), any strides.
// Per (b, j), in float32 for the 16-bit dtypes (ATen's accscalar) and the
// sums in this order (a missing bias adds zeros):
//   LSTM, chunks i, f, g, o of G:
//     x_q = ((ig_q + hg_q) + b1_q) + b2_q;  i, f, o = sigmoid(x), g = tanh(x_g)
//     cy = f * cx + i * g;  hy = o * tanh(cy)
//   GRU, chunks r, z, n:
//     r = sigmoid(((ig_r + hg_r) + b1_r) + b2_r), z likewise,
//     n = tanh((ig_n + b1_n) + r * (hg_n + b2_n)),  hy = n + z * (hx - n)
// with sigmoid(x) = 1 / (1 + exp(-x)). Results, all contiguous in the
// operands' dtype (torch's meta function: empty_like(..., contiguous)):
// hy and cy of cx's / hx's sizes; the LSTM's workspace of input_gates' sizes
// holding the activated gates [i, f, g, o] per row (each rounded to the
// dtype); the GRU's workspace [B, 5H] holding [r, z, n, hx, hg_n + b2_n]
// per row (hx as it is). ATen's checks, with its messages: input_gates 2-d,
// hidden_gates of its sizes, a bias 1-d of G elements and of the other's
// sizes, cx / hx 2-d with B * G / factor elements, one device. aotrt checks
// more where ATen would read out of bounds or mix up rows: G a multiple of
// the factor, cx / hx exactly [B, G / factor], and a hidden_bias without an
// input_bias (ATen ignores it) is refused. ATen has these kernels on CUDA
// only; aotrt's CPU kernel is the same arithmetic (rnn_math.h), which serves
// the GRU's CPU proxy row and the tests on machines without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.h"

namespace aotrt::ops {

// A fused cell's operands, all of one dtype and device: the gates [B, G], the
// biases [G] (data null: none), prev (cx or hx) [B, H], any strides; the
// outputs hy, cy (the LSTM's) [B, H] and workspace [B, 4H] or [B, 5H], dense.
struct RnnCellViews {
  StridedView input_gates, hidden_gates, input_bias, hidden_bias, prev;
  StridedView hy, cy, workspace;
};

// See Note [Op dispatch] in ops/dispatch.h. gates [B, 4H] float32,
// contiguous (i, f, g, o); c [B, H] float32 contiguous, c_{t-1} in and c_t
// out; h [B, H] float32, any strides: h_t out.
struct RnnKernels {
  void (*lstm_cell)(const StridedView& gates, const StridedView& c, const StridedView& h,
                    const char* fn);
  // Note [Fused RNN cells]; the views are those of RnnCellViews.
  void (*fused_lstm_cell)(const RnnCellViews& v, const char* fn);
  void (*fused_gru_cell)(const RnnCellViews& v, const char* fn);
};

struct RnnCellResult {
  std::unique_ptr<TensorImpl> hy, cy, workspace;  // cy: the LSTM's only
};

// Note [Fused RNN cells]. The biases are null when not given.
RnnCellResult thnn_fused_lstm_cell(const TensorImpl& input_gates, const TensorImpl& hidden_gates,
                                   const TensorImpl& cx, const TensorImpl* input_bias,
                                   const TensorImpl* hidden_bias, const char* fn);
RnnCellResult thnn_fused_gru_cell(const TensorImpl& input_gates, const TensorImpl& hidden_gates,
                                  const TensorImpl& hx, const TensorImpl* input_bias,
                                  const TensorImpl* hidden_bias, const char* fn);

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
