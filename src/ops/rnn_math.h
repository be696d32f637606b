// The arithmetic of the fused RNN cells (Note [Fused RNN cells] in ops/rnn.h),
// one (batch row, hidden unit) at a time in the accumulation type A (float,
// or double for float64), written once for both backends' kernels: compiled
// by nvcc for src/cuda/ops/rnn.cu and by the host compiler for
// src/cpu/ops/rnn.cpp. Each function takes the gate chunks' values already
// widened to A, in ATen's chunk order, and the biases as zeros when absent.
#pragma once

#include <math.h>

#include "core/host_device.h"

namespace aotrt::ops::rnn_math {

template <typename A>
AOTRT_HOST_DEVICE inline A sigmoid(A x) {
  return A(1) / (A(1) + exp(-x));
}

template <typename A>
struct LstmOut {
  A i, f, g, o;  // the activated gates (the workspace)
  A cy, hy;
};

// Chunks i, f, g, o of the input gates (x), hidden gates (h) and biases.
template <typename A>
AOTRT_HOST_DEVICE inline LstmOut<A> lstm_cell(const A (&x)[4], const A (&h)[4], const A (&b1)[4],
                                              const A (&b2)[4], A cx) {
  LstmOut<A> r;
  r.i = sigmoid(x[0] + h[0] + b1[0] + b2[0]);
  r.f = sigmoid(x[1] + h[1] + b1[1] + b2[1]);
  r.g = tanh(x[2] + h[2] + b1[2] + b2[2]);
  r.o = sigmoid(x[3] + h[3] + b1[3] + b2[3]);
  r.cy = r.f * cx + r.i * r.g;
  r.hy = r.o * tanh(r.cy);
  return r;
}

template <typename A>
struct GruOut {
  A r, z, n;
  A hn;  // hidden_gates' n chunk plus its bias (the workspace's last chunk)
  A hy;
};

// Chunks r, z, n; the hidden bias of n enters inside r * (...).
template <typename A>
AOTRT_HOST_DEVICE inline GruOut<A> gru_cell(const A (&x)[3], const A (&h)[3], const A (&b1)[3],
                                            const A (&b2)[3], A hx) {
  GruOut<A> o;
  o.r = sigmoid(x[0] + h[0] + b1[0] + b2[0]);
  o.z = sigmoid(x[1] + h[1] + b1[1] + b2[1]);
  o.hn = h[2] + b2[2];
  o.n = tanh(x[2] + b1[2] + o.r * o.hn);
  o.hy = o.n + o.z * (hx - o.n);
  return o;
}

}  // namespace aotrt::ops::rnn_math
