// The LSTM layer (mkldnn_rnn_layer, Note [LSTM layer]) through the C ABI, against a
// double-precision reference of the LSTM recurrence written here: time-major and
// batch-first, forward and reverse, with and without biases, strided inputs, an empty
// batch; and ATen's refusals. Its end-to-end test against eager nn.LSTM is
// tests/e2e/test_cpu_lstm.py.
// The fused cells (Note [Fused RNN cells]) against ATen's formulas (reference_rnn.inc;
// torch's CPU has neither op, see gen_ops_reference.py) on every backend:
// _thnn_fused_lstm_cell through its C shim on CUDA and through the family op on the CPU
// (torch declares the shim for CUDA only), _thnn_fused_gru_cell through the proxy
// executor on both; and their refusals. End to end against eager nn.LSTMCell and
// nn.GRUCell on CUDA: tests/e2e/test_cuda_rnn_cells.py.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/handles.h"
#include "ops/rnn.h"
#include "ops_testing.h"
#include "proxy_testing.h"
#include "shim/boundary.h"

namespace aotrt::test {
namespace {

#include "reference_rnn.inc"

using RnnLayer = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                    AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                    AtenTensorHandle, int32_t, const int64_t*, int64_t, int64_t,
                                    int64_t, int64_t, int32_t, int32_t, int32_t, int32_t,
                                    AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                    AtenTensorHandle*);

std::vector<double> ramp(int64_t n, double scale, double phase) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.7 * i + phase);
  return v;
}

struct Lstm {
  int64_t steps, batch, in, hidden;
  bool batch_first, reverse, biases;
};

// y (in the input's layout), hy, cy of the recurrence, in double.
std::vector<std::vector<double>> reference(const Lstm& p, const std::vector<double>& x,
                                           const std::vector<double>& wih,
                                           const std::vector<double>& whh,
                                           const std::vector<double>& bih,
                                           const std::vector<double>& bhh,
                                           const std::vector<double>& h0,
                                           const std::vector<double>& c0) {
  const int64_t T = p.steps, B = p.batch, I = p.in, H = p.hidden;
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> h = h0, c = c0, y(static_cast<size_t>(T * B * H));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = p.reverse ? T - 1 - s : s;
    std::vector<double> hn(h.size());
    for (int64_t b = 0; b < B; ++b) {
      const int64_t xrow = p.batch_first ? b * T + t : t * B + b;
      for (int64_t j = 0; j < H; ++j) {
        double g[4];
        for (int q = 0; q < 4; ++q) {
          const int64_t r = q * H + j;
          double acc = p.biases ? bih[r] + bhh[r] : 0;
          for (int64_t k = 0; k < I; ++k) acc += x[xrow * I + k] * wih[r * I + k];
          for (int64_t k = 0; k < H; ++k) acc += h[b * H + k] * whh[r * H + k];
          g[q] = acc;
        }
        const double cn = sig(g[1]) * c[b * H + j] + sig(g[0]) * std::tanh(g[2]);
        c[b * H + j] = cn;
        hn[b * H + j] = sig(g[3]) * std::tanh(cn);
        y[xrow * H + j] = hn[b * H + j];
      }
    }
    h = hn;
  }
  return {y, h, c};
}

void check_layer(const Backend& b, const Lstm& p, bool strided_input) {
  AOTRT_FIND_OP(layer, RnnLayer, b, "mkldnn_rnn_layer");
  const int64_t T = p.steps, B = p.batch, I = p.in, H = p.hidden;
  const Dims x_sizes = p.batch_first ? Dims{B, T, I} : Dims{T, B, I};
  const std::vector<double> x = ramp(T * B * I, 1.0, 0.1), wih = ramp(4 * H * I, 0.4, 0.2),
                            whh = ramp(4 * H * H, 0.3, 0.3), bih = ramp(4 * H, 0.2, 0.4),
                            bhh = ramp(4 * H, 0.1, 0.5), h0 = ramp(B * H, 0.5, 0.6),
                            c0 = ramp(B * H, 0.8, 0.7);
  // A strided input: every other element of a twice-as-wide last dim.
  Values xv{kF32, x_sizes, row_major(x_sizes), 0, x};
  if (strided_input) xv.strides = {x_sizes[1] * I * 2, I * 2, 2};
  Tensor xt = make_tensor(b, xv);
  Tensor w0 = make_tensor(b, Values{kF32, {4 * H, I}, {I, 1}, 0, wih});
  // weight_hh transposed in memory: [4H, H] with strides [1, 4H].
  Tensor w1 = make_tensor(b, Values{kF32, {4 * H, H}, {1, 4 * H}, 0, whh});
  Tensor w2 = make_tensor(b, Values{kF32, {4 * H}, {1}, 0, bih});
  Tensor w3 = make_tensor(b, Values{kF32, {4 * H}, {1}, 0, bhh});
  Tensor hx = make_tensor(b, Values{kF32, {1, B, H}, {B * H, H, 1}, 0, h0});
  Tensor cx = make_tensor(b, Values{kF32, {1, B, H}, {B * H, H, 1}, 0, c0});
  Tensor y, hy, cy, ws;
  ASSERT_EQ(layer(xt.get(), w0.get(), w1.get(), w2.get(), w3.get(), hx.get(), cx.get(),
                  p.reverse, nullptr, 0, 2, H, 1, p.biases, 0, p.batch_first, 0, y.out(),
                  hy.out(), cy.out(), ws.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const auto want = reference(p, x, wih, whh, bih, bhh, h0, c0);
  const Dims y_sizes = p.batch_first ? Dims{B, T, H} : Dims{T, B, H};
  EXPECT_EQ(meta(y.get()).sizes, y_sizes);
  EXPECT_EQ(meta(y.get()).strides, row_major(y_sizes));
  EXPECT_EQ(meta(hy.get()).sizes, (Dims{1, B, H}));
  EXPECT_EQ(meta(ws.get()).sizes, Dims{0});
  EXPECT_EQ(meta(ws.get()).dtype, kU8);
  EXPECT_TRUE(close_values(values_of(y.get()), want[0], 0, 1e-6));
  EXPECT_TRUE(close_values(values_of(hy.get()), want[1], 0, 1e-6));
  EXPECT_TRUE(close_values(values_of(cy.get()), want[2], 0, 1e-6));
}

TEST(OpsRnn, LstmLayerMatchesTheRecurrence) {
  const Backend b = built_backends()[0];  // a CPU op: torch's decomposition calls it on the CPU
  for (const bool batch_first : {false, true}) {
    for (const bool reverse : {false, true}) {
      for (const bool biases : {true, false}) {
        SCOPED_TRACE(std::string("batch_first ") + (batch_first ? "1" : "0") + " reverse " +
                     (reverse ? "1" : "0") + " biases " + (biases ? "1" : "0"));
        check_layer(b, Lstm{5, 3, 4, 6, batch_first, reverse, biases}, false);
      }
    }
  }
  SCOPED_TRACE("strided input");
  check_layer(b, Lstm{4, 2, 3, 5, true, false, true}, true);
}

TEST(OpsRnn, EmptyBatchOrSequenceGivesEmptyOutputAndTheInitialState) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(layer, RnnLayer, b, "mkldnn_rnn_layer");
  for (const Dims& xs : {Dims{0, 2, 3}, Dims{4, 0, 3}}) {
    const int64_t B = xs[1], H = 2;
    Tensor x = empty(b, xs, kF32);
    Tensor w0 = empty(b, {4 * H, 3}, kF32), w1 = empty(b, {4 * H, H}, kF32);
    Tensor w2 = empty(b, {4 * H}, kF32), w3 = empty(b, {4 * H}, kF32);
    const std::vector<double> h0 = ramp(B * H, 0.5, 0), c0 = ramp(B * H, 0.5, 1);
    Tensor hx = make_tensor(b, Values{kF32, {1, B, H}, {B * H, H, 1}, 0, h0});
    Tensor cx = make_tensor(b, Values{kF32, {1, B, H}, {B * H, H, 1}, 0, c0});
    Tensor y, hy, cy, ws;
    ASSERT_EQ(layer(x.get(), w0.get(), w1.get(), w2.get(), w3.get(), hx.get(), cx.get(), 0,
                    nullptr, 0, 2, H, 1, 1, 0, 0, 0, y.out(), hy.out(), cy.out(), ws.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(meta(y.get()).sizes, (Dims{xs[0], B, H}));
    EXPECT_TRUE(close_values(values_of(hy.get()), h0, 1e-7, 0));  // float32 of h0
    EXPECT_TRUE(close_values(values_of(cy.get()), c0, 1e-7, 0));
  }
}

TEST(OpsRnn, RefusesWhatATenRefuses) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(layer, RnnLayer, b, "mkldnn_rnn_layer");
  const int64_t H = 2;
  Tensor x = empty(b, {3, 1, 2}, kF32);
  Tensor w0 = empty(b, {4 * H, 2}, kF32), w1 = empty(b, {4 * H, H}, kF32);
  Tensor w2 = empty(b, {4 * H}, kF32), w3 = empty(b, {4 * H}, kF32);
  Tensor hx = empty(b, {1, 1, H}, kF32), cx = empty(b, {1, 1, H}, kF32);
  Tensor wrong = empty(b, {4 * H, 3}, kF32), ints = empty(b, {3, 1, 2}, kI64);
  const std::string fn = std::string(b.op_prefix) + "mkldnn_rnn_layer";
  Tensor r0, r1, r2, r3;
  auto call = [&](AtenTensorHandle in, AtenTensorHandle wih, const int64_t* bs, int64_t bs_len,
                  int64_t mode, int64_t layers) {
    return layer(in, wih, w1.get(), w2.get(), w3.get(), hx.get(), cx.get(), 0, bs, bs_len, mode,
                 H, layers, 1, 0, 0, 0, r0.out(), r1.out(), r2.out(), r3.out());
  };
  const int64_t sizes[] = {3, 2};
  expect_refused(call(x.get(), w0.get(), nullptr, 0, 2, 2), fn, "only single layer");
  expect_refused(call(x.get(), w0.get(), sizes, 2, 2, 1), fn, "packed input");
  expect_refused(call(x.get(), w0.get(), nullptr, 0, 3, 1), fn, "rnn mode 3");
  expect_refused(call(x.get(), wrong.get(), nullptr, 0, 2, 1), fn, "argument 'weight0' has sizes");
  expect_refused(call(ints.get(), w0.get(), nullptr, 0, 2, 1), fn, "argument 'input' is int64");
  EXPECT_EQ(r0.get(), nullptr);
  EXPECT_EQ(r3.get(), nullptr);
}

// --- The fused cells ---------------------------------------------------------------

using LstmCell = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                    AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                    AtenTensorHandle*, AtenTensorHandle*);

constexpr const char* kCpuLstmCell = "cpu _thnn_fused_lstm_cell";

// The CPU stand-in of aoti_torch_cuda__thnn_fused_lstm_cell: the same family op behind
// the same boundary, handles in and out as the entry point takes and gives them.
AOTITorchError cpu_lstm_cell(AtenTensorHandle ig, AtenTensorHandle hg, AtenTensorHandle cx,
                             AtenTensorHandle* ib, AtenTensorHandle* hb, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1, AtenTensorHandle* ret2) {
  return shim_boundary(kCpuLstmCell, [&] {
    auto optional = [](AtenTensorHandle* h, const char* what) -> const TensorImpl* {
      return h != nullptr && *h != nullptr ? &handle_get(*h, what) : nullptr;
    };
    auto r = ops::thnn_fused_lstm_cell(handle_get(ig, "input_gates"),
                                       handle_get(hg, "hidden_gates"), handle_get(cx, "cx"),
                                       optional(ib, "input_bias"), optional(hb, "hidden_bias"),
                                       kCpuLstmCell);
    *ret0 = handle_register(std::move(r.hy));
    *ret1 = handle_register(std::move(r.cy));
    *ret2 = handle_register(std::move(r.workspace));
  });
}

LstmCell lstm_cell_of(const Backend& b) {
  return b.is_cpu() ? cpu_lstm_cell : find_op<LstmCell>(b, "_thnn_fused_lstm_cell");
}
std::string lstm_cell_name(const Backend& b) {
  return b.is_cpu() ? kCpuLstmCell : "aoti_torch_cuda__thnn_fused_lstm_cell";
}

// _thnn_fused_gru_cell as a package's wrapper calls it: in[0..2] the gates and hx,
// in[3..4] the biases when `bias`.
ProxyResult run_gru_cell(const Backend& b, const std::vector<AtenTensorHandle>& in, bool bias) {
  const char* names[] = {"input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias"};
  std::string inputs = "[";
  for (int k = 0; k < 5; ++k) {
    const bool present = k < 3 || bias;
    const std::string tensor = R"({"as_tensor": {"name": "t)" + std::to_string(k) + "\"}}";
    const std::string arg = k < 3    ? tensor
                            : present ? R"({"as_optional_tensor": )" + tensor + "}"
                                      : R"({"as_none": true})";
    inputs += std::string(k ? ", " : "") + R"({"name": ")" + names[k] + R"(", "arg": )" + arg +
              "}";
  }
  inputs += "]";
  return run_proxy("aten::_thnn_fused_gru_cell", inputs, {}, in, 2, false, proxy_device(b));
}

class OpsRnnCell : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsRnnCell, MatchesTheFormulas) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  const bool bias = c.ints[0] != 0;
  std::vector<AtenTensorHandle> handles;
  for (const Tensor& t : in) handles.push_back(t.get());
  std::vector<Tensor> out(c.outputs.size());
  if (std::string(c.op) == "_thnn_fused_lstm_cell") {
    const LstmCell f = lstm_cell_of(b);
    if (f == nullptr) GTEST_SKIP() << lstm_cell_name(b) << " is missing";
    AtenTensorHandle ib = bias ? handles[3] : nullptr, hb = bias ? handles[4] : nullptr;
    const AOTITorchError rc = f(handles[0], handles[1], handles[2], bias ? &ib : nullptr,
                                bias ? &hb : nullptr, out[0].out(), out[1].out(), out[2].out());
    AOTRT_SKIP_IF_NO_KERNEL(b, rc);
    ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  } else {
    ProxyResult r = run_gru_cell(b, handles, bias);
    AOTRT_SKIP_IF_NO_KERNEL(b, r.rc);
    ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
    out = std::move(r.outputs);
  }
  const char* what[] = {"hy", "cy", "workspace"};
  for (size_t i = 0; i < out.size(); ++i) {
    const bool lstm = c.outputs.size() == 3;
    expect_matches(out[i].get(), c.outputs[i], std::string(c.name) + " " + what[lstm ? i : i * 2]);
  }
}

INSTANTIATE_TEST_SUITE_P(Formulas, OpsRnnCell, ::testing::ValuesIn(all_backends(kRnnCases)),
                         backend_case_name);

// ATen's checks (native/cuda/RNN.cu's checkSizes) and aotrt's stricter shapes, on
// every backend, naming the op's argument.
TEST(OpsRnnCellRefusals, NameTheArgumentAndWhatIsWrong) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    const LstmCell f = lstm_cell_of(b);
    ASSERT_NE(f, nullptr) << lstm_cell_name(b) << " is missing";
    const std::string fn = lstm_cell_name(b);
    auto t = [&](int32_t dtype, Dims sizes) { return empty(b, sizes, dtype); };
    Tensor g = t(kF32, {2, 8}), h = t(kF32, {2, 8}), cx = t(kF32, {2, 2}), bias = t(kF32, {8});
    Tensor r0, r1, r2;
    auto call = [&](const Tensor& ig, const Tensor& hg, const Tensor& c, const Tensor* ib,
                    const Tensor* hb) {
      AtenTensorHandle bi = ib ? ib->get() : nullptr, bh = hb ? hb->get() : nullptr;
      return f(ig.get(), hg.get(), c.get(), ib ? &bi : nullptr, hb ? &bh : nullptr, r0.out(),
               r1.out(), r2.out());
    };
    Tensor g3 = t(kF32, {1, 2, 8}), h9 = t(kF32, {2, 9}), b7 = t(kF32, {7});
    Tensor cx_wide = t(kF32, {1, 4}), cx3 = t(kF32, {2, 3}), g6 = t(kF32, {2, 6}),
           cx_odd = t(kF32, {1, 3}), ints = t(kI32, {2, 8}), cx16 = t(kF16, {2, 2});
    expect_refused(call(g3, g3, cx, nullptr, nullptr), fn,
                   "Expected 2-dimensional tensor, but got 3-dimensional tensor for argument #1 "
                   "'input_gates'");
    expect_refused(call(g, h9, cx, nullptr, nullptr), fn,
                   "Expected tensor for argument #1 'input_gates' to have same size as tensor "
                   "for argument #2 'hidden_gates'; but [2, 8] does not equal [2, 9]");
    expect_refused(call(g, h, cx, &bias, nullptr), fn, "the cell takes both biases or neither");
    expect_refused(call(g, h, cx, nullptr, &bias), fn, "argument #4 'hidden_bias' is given");
    expect_refused(call(g, h, cx, &b7, &b7), fn,
                   "argument #3 'input_bias' to have 8 elements; but it actually has 7");
    expect_refused(call(g, h, cx3, nullptr, nullptr), fn,
                   "argument #5 'prev_hidden' to have 4 elements; but it actually has 6");
    expect_refused(call(g, h, cx_wide, nullptr, nullptr), fn,
                   "argument #5 'prev_hidden' has sizes [1, 4]; with gates of sizes [2, 8] it "
                   "must be [2, 8 / 4]");
    expect_refused(call(g6, g6, cx_odd, nullptr, nullptr), fn, "and 6 a multiple of 4");
    expect_refused(call(ints, ints, cx, nullptr, nullptr), fn,
                   "\"_thnn_fused_lstm_cell\" not implemented for 'int32'");
    expect_refused(call(g, h, cx16, nullptr, nullptr), fn,
                   "expected scalar type float32 but found float16 for argument #5");
    EXPECT_EQ(r0.get(), nullptr);  // nothing handed out on failure
    EXPECT_EQ(r2.get(), nullptr);
    // The GRU's factor is 3.
    Tensor g9 = t(kF32, {2, 9}), hx = t(kF32, {2, 3}), hx_bad = t(kF32, {2, 4});
    ProxyResult ok = run_gru_cell(b, {g9.get(), g9.get(), hx.get()}, false);
    EXPECT_EQ(ok.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
    ProxyResult bad = run_gru_cell(b, {g9.get(), g9.get(), hx_bad.get()}, false);
    expect_refused(bad.rc, "_thnn_fused_gru_cell",
                   "argument #5 'prev_hidden' to have 6 elements; but it actually has 8");
  }
}

}  // namespace
}  // namespace aotrt::test
