// Entry points of the FFT family (ops/fft.h): _fft_r2c and _fft_c2c as C
// shims, _fft_c2r (no C shim) through the proxy executor. Handles are
// borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/fft.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::ProxyCall;

AOTRT_OP(_fft_r2c,
         (AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int64_t normalization,
          int32_t onesided, AtenTensorHandle* ret0),
         give(ret0, ops::fft_r2c(args.tensor(self, "self"), args.ints(dim, dim_len_, "dim"),
                                 normalization, onesided != 0, fn)))

AOTRT_OP(_fft_c2c,
         (AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int64_t normalization,
          int32_t forward, AtenTensorHandle* ret0),
         give(ret0, ops::fft_c2c(args.tensor(self, "self"), args.ints(dim, dim_len_, "dim"),
                                 normalization, forward != 0, fn)))

// _fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size).
AOTRT_PROXY_OP("aten::_fft_c2r", {"self", "dim", "normalization", "last_dim_size"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](ProxyCall& c) {
                 const std::vector<int64_t> dim = c.ints("dim");
                 c.set_output(0, ops::fft_c2r(c.tensor("self"), dim, c.int_arg("normalization"),
                                              c.int_arg("last_dim_size"), c.what()));
               });
