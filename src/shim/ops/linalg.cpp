// Entry points of the linalg family (ops/linalg.h): the C shims, and the ops
// that have none, served through the proxy executor (Note [Proxy executor]).
// Handles are borrowed; ret* get new owning handles, dropped when null. See
// Note [Op rows].
#include <initializer_list>
#include <tuple>

#include "ops/linalg.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::kProxyCpu;
using runtime::ProxyCall;

namespace {
// Served on both devices (src/cpu/ops/linalg.cpp, src/cuda/ops/linalg.cu).
constexpr unsigned kCpuCuda = kProxyCpu | runtime::kProxyCuda;
}  // namespace

namespace {
// Hands out every result of a tuple, or none (ShimResults).
template <class... T>
void give_all(std::initializer_list<AtenTensorHandle*> rets, std::tuple<T...> results) {
  ShimResults out;
  auto ret = rets.begin();
  std::apply([&](auto&... r) { (out.give(*ret++, std::move(r)), ...); }, results);
  out.commit();
}
template <class... T>
void set_all(ProxyCall& call, std::tuple<T...> results) {
  size_t i = 0;
  std::apply([&](auto&... r) { (call.set_output(i++, std::move(r)), ...); }, results);
}
}  // namespace

AOTRT_OP(triangular_solve,
             (AtenTensorHandle self, AtenTensorHandle A, int32_t upper, int32_t transpose,
              int32_t unitriangular, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             give_all({ret0, ret1},
                      ops::triangular_solve(args.tensor(self, "self"), args.tensor(A, "A"),
                                            upper != 0, transpose != 0, unitriangular != 0, fn)))

AOTRT_OP(cholesky_solve,
             (AtenTensorHandle self, AtenTensorHandle input2, int32_t upper,
              AtenTensorHandle* ret0),
             give(ret0, ops::cholesky_solve(args.tensor(self, "self"),
                                            args.tensor(input2, "input2"), upper != 0, fn)))

AOTRT_OP(cholesky_inverse, (AtenTensorHandle self, int32_t upper, AtenTensorHandle* ret0),
             give(ret0, ops::cholesky_inverse(args.tensor(self, "self"), upper != 0, fn)))

AOTRT_OP(geqrf, (AtenTensorHandle self, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             give_all({ret0, ret1}, ops::geqrf(args.tensor(self, "self"), fn)))

AOTRT_OP(ormqr,
             (AtenTensorHandle self, AtenTensorHandle input2, AtenTensorHandle input3,
              int32_t left, int32_t transpose, AtenTensorHandle* ret0),
             give(ret0, ops::ormqr(args.tensor(self, "self"), args.tensor(input2, "input2"),
                                   args.tensor(input3, "input3"), left != 0, transpose != 0,
                                   fn)))

AOTRT_OP(lu_unpack,
             (AtenTensorHandle LU_data, AtenTensorHandle LU_pivots, int32_t unpack_data,
              int32_t unpack_pivots, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
              AtenTensorHandle* ret2),
             give_all({ret0, ret1, ret2},
                      ops::lu_unpack(args.tensor(LU_data, "LU_data"),
                                     args.tensor(LU_pivots, "LU_pivots"), unpack_data != 0,
                                     unpack_pivots != 0, fn)))

// Proxy-executor ops: argument names and defaults from ATen's schemas
// (native_functions.yaml).
AOTRT_PROXY_OP("aten::linalg_solve_triangular", {"self", "B", "upper", "left", "unitriangular"},
               kCpuCuda, [](ProxyCall& c) {
                 c.set_output(0, ops::solve_triangular(
                                     c.tensor("self"), c.tensor("B"), c.bool_arg("upper"),
                                     c.bool_arg("left", true),
                                     c.bool_arg("unitriangular", false), c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_inv_ex", {"A", "check_errors"}, kCpuCuda, [](ProxyCall& c) {
  set_all(c, ops::inv_ex(c.tensor("A"), c.bool_arg("check_errors", false), c.what()));
});

AOTRT_PROXY_OP("aten::_linalg_solve_ex", {"A", "B", "left", "check_errors"}, kCpuCuda,
               [](ProxyCall& c) {
                 set_all(c, ops::solve_ex(c.tensor("A"), c.tensor("B"), c.bool_arg("left", true),
                                          c.bool_arg("check_errors", false), c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_lu_factor_ex", {"A", "pivot", "check_errors"}, kCpuCuda,
               [](ProxyCall& c) {
                 set_all(c, ops::lu_factor_ex(c.tensor("A"), c.bool_arg("pivot", true),
                                              c.bool_arg("check_errors", false), c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_cholesky_ex", {"self", "upper", "check_errors"}, kCpuCuda,
               [](ProxyCall& c) {
                 set_all(c, ops::cholesky_ex(c.tensor("self"), c.bool_arg("upper", false),
                                             c.bool_arg("check_errors", false), c.what()));
               });

AOTRT_PROXY_OP("aten::_linalg_det", {"A"}, kCpuCuda,
               [](ProxyCall& c) { set_all(c, ops::det(c.tensor("A"), c.what())); });

AOTRT_PROXY_OP("aten::_linalg_slogdet", {"A"}, kCpuCuda,
               [](ProxyCall& c) { set_all(c, ops::slogdet(c.tensor("A"), c.what())); });

AOTRT_PROXY_OP("aten::_linalg_check_errors", {"info", "api_name", "is_matrix"},
               kCpuCuda, [](ProxyCall& c) {
                 ops::check_errors(c.tensor("info"), c.string_arg("api_name"),
                                   c.bool_arg("is_matrix"), c.what());
               });

AOTRT_PROXY_OP("aten::linalg_qr", {"A", "mode"}, kCpuCuda, [](ProxyCall& c) {
  set_all(c, ops::qr(c.tensor("A"), c.string_arg("mode", "reduced"), c.what()));
});

AOTRT_PROXY_OP("aten::linalg_householder_product", {"input", "tau"}, kCpuCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::householder_product(c.tensor("input"), c.tensor("tau"),
                                                          c.what()));
               });

AOTRT_PROXY_OP("aten::_linalg_svd", {"A", "full_matrices", "compute_uv", "driver"}, kCpuCuda,
               [](ProxyCall& c) {
                 set_all(c, ops::svd(c.tensor("A"), c.bool_arg("full_matrices", false),
                                     c.bool_arg("compute_uv", true), c.has_value("driver"),
                                     c.what()));
               });

AOTRT_PROXY_OP("aten::_linalg_eigh", {"A", "UPLO", "compute_v"}, kCpuCuda, [](ProxyCall& c) {
  set_all(c, ops::eigh(c.tensor("A"), c.string_arg("UPLO", "L"), c.bool_arg("compute_v", true),
                       c.what()));
});

AOTRT_PROXY_OP("aten::linalg_eig", {"self"}, kCpuCuda,
               [](ProxyCall& c) { set_all(c, ops::eig(c.tensor("self"), c.what())); });

AOTRT_PROXY_OP("aten::linalg_lu", {"A", "pivot"}, kCpuCuda, [](ProxyCall& c) {
  set_all(c, ops::lu(c.tensor("A"), c.bool_arg("pivot", true), c.what()));
});

AOTRT_PROXY_OP("aten::linalg_lu_solve", {"LU", "pivots", "B", "left", "adjoint"}, kCpuCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::lu_solve(c.tensor("LU"), c.tensor("pivots"),
                                               c.tensor("B"), c.bool_arg("left", true),
                                               c.bool_arg("adjoint", false), c.what()));
               });

AOTRT_PROXY_OP("aten::cholesky", {"self", "upper"}, kCpuCuda, [](ProxyCall& c) {
  c.set_output(0, ops::cholesky(c.tensor("self"), c.bool_arg("upper", false), c.what()));
});

AOTRT_PROXY_OP("aten::linalg_ldl_factor_ex", {"self", "hermitian", "check_errors"}, kCpuCuda,
               [](ProxyCall& c) {
                 set_all(c, ops::ldl_factor_ex(c.tensor("self"), c.bool_arg("hermitian", false),
                                               c.bool_arg("check_errors", false), c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_ldl_solve", {"LD", "pivots", "B", "hermitian"}, kCpuCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::ldl_solve(c.tensor("LD"), c.tensor("pivots"),
                                                c.tensor("B"), c.bool_arg("hermitian", false),
                                                c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_pinv.atol_rtol_tensor", {"self", "atol", "rtol", "hermitian"},
               kCpuCuda, [](ProxyCall& c) {
                 c.set_output(0, ops::pinv(c.tensor("self"), c.optional_tensor("atol"),
                                           c.optional_tensor("rtol"),
                                           c.bool_arg("hermitian", false), c.what()));
               });

AOTRT_PROXY_OP("aten::linalg_matrix_exp", {"self"}, kCpuCuda, [](ProxyCall& c) {
  c.set_output(0, ops::matrix_exp(c.tensor("self"), c.what()));
});
