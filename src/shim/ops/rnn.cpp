// Entry points of the recurrent layers (ops/rnn.h): mkldnn_rnn_layer, one LSTM
// layer, from torch's hand-written aoti_torch/c/shim_cpu.h (the CPU
// decomposition of aten.lstm calls it); the fused cells of nn.LSTMCell and
// nn.GRUCell on CUDA (Note [Fused RNN cells]): _thnn_fused_lstm_cell's C shim
// (CUDA only, as in torch's header) and _thnn_fused_gru_cell, which has no C
// shim, through the proxy executor. See Note [Op rows].
#include "ops/rnn.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP_CUDA(_thnn_fused_lstm_cell,
              (AtenTensorHandle input_gates, AtenTensorHandle hidden_gates, AtenTensorHandle cx,
               AtenTensorHandle* input_bias, AtenTensorHandle* hidden_bias,
               AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2),
              auto r = ops::thnn_fused_lstm_cell(
                  args.tensor(input_gates, "input_gates"), args.tensor(hidden_gates, "hidden_gates"),
                  args.tensor(cx, "cx"), args.optional_tensor(input_bias, "input_bias"),
                  args.optional_tensor(hidden_bias, "hidden_bias"), fn);
              ShimResults results;
              results.give(ret0, std::move(r.hy));
              results.give(ret1, std::move(r.cy));
              results.give(ret2, std::move(r.workspace));
              results.commit())

// _thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, Tensor?
// input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor). CUDA packages call it;
// the CPU row (ATen has no CPU kernel, so no CPU package does) serves the tests.
AOTRT_PROXY_OP("aten::_thnn_fused_gru_cell",
               {"input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](runtime::ProxyCall& c) {
                 auto r = ops::thnn_fused_gru_cell(c.tensor("input_gates"), c.tensor("hidden_gates"),
                                                   c.tensor("hx"), c.optional_tensor("input_bias"),
                                                   c.optional_tensor("hidden_bias"), c.what());
                 c.set_output(0, std::move(r.hy));
                 c.set_output(1, std::move(r.workspace));
               });

AOTRT_OP_CPU(mkldnn_rnn_layer,
             (AtenTensorHandle input, AtenTensorHandle weight0, AtenTensorHandle weight1,
              AtenTensorHandle weight2, AtenTensorHandle weight3, AtenTensorHandle hx_,
              AtenTensorHandle cx_, int32_t reverse, const int64_t* batch_sizes,
              int64_t batch_sizes_len_, int64_t mode, int64_t hidden_size, int64_t num_layers,
              int32_t has_biases, int32_t bidirectional, int32_t batch_first, int32_t train,
              AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
              AtenTensorHandle* ret3),
             auto r = ops::mkldnn_rnn_layer(
                 args.tensor(input, "input"), args.tensor(weight0, "weight0"),
                 args.tensor(weight1, "weight1"), args.tensor(weight2, "weight2"),
                 args.tensor(weight3, "weight3"), args.tensor(hx_, "hx_"),
                 args.tensor(cx_, "cx_"), reverse != 0,
                 args.ints(batch_sizes, batch_sizes_len_, "batch_sizes"), mode, hidden_size,
                 num_layers, has_biases != 0, bidirectional != 0, batch_first != 0, train != 0, fn);
             ShimResults results;
             results.give(ret0, std::move(r.output));
             results.give(ret1, std::move(r.hy));
             results.give(ret2, std::move(r.cy));
             results.give(ret3, std::move(r.workspace));
             results.commit())
