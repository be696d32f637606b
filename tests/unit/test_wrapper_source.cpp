// Reading constants' and inputs' layouts from generated wrapper source
// (package/wrapper_source.h), on lines of the shape torch 2.13 writes.
#include <gtest/gtest.h>

#include "package/shim_writes.h"
#include "package/wrapper_source.h"

namespace {

constexpr const char* kSource = R"(
    constants_info_[0].name = "lin_weight";
    constants_info_[0].dtype = cached_torch_dtype_bfloat16;
    constants_info_[0].offset = 0;
    constants_info_[0].data_size = 64;
    constants_info_[0].shape = {4, 8};
    constants_info_[0].stride = {8, 1};
    constants_info_[0].original_fqn = "lin.weight";
    constants_info_[1].name = "_tensor_constant0";
    constants_info_[1].dtype = cached_torch_dtype_int64;
    constants_info_[1].shape = {};
    constants_info_[1].stride = {};
    constants_info_[2].name = "no_layout";
AOTI_NOINLINE static void check_input_0(
    int32_t arg0_1_expected_dtype = aoti_torch_dtype_float32();
    if (arg0_1_size[0] < 2) {
    if (arg0_1_size[0] > 64) {
    if (8 != arg0_1_size[1]) {
    if (8 != arg0_1_stride[0]) {
    if (1 != arg0_1_stride[1]) {
AOTI_NOINLINE static void check_input_1(
    int32_t arg1_1_expected_dtype = aoti_torch_dtype_bfloat16();
    if (3 != arg1_1_size[0]) {
    if (1 != arg1_1_stride[0]) {
static bool _check_aoti_runtime_check_inputs_env() {
    if (5 != other_size[0]) {
)";

TEST(WrapperSource, ReadsConstantLayouts) {
  const auto src = aotrt::package::parse_wrapper_source(kSource);
  ASSERT_EQ(src.constants.size(), 3u);
  EXPECT_EQ(src.constants[0].name, "lin_weight");
  EXPECT_EQ(src.constants[0].dtype, "bfloat16");
  EXPECT_TRUE(src.constants[0].has_layout);
  EXPECT_EQ(src.constants[0].sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(src.constants[0].strides, (std::vector<int64_t>{8, 1}));
  EXPECT_TRUE(src.constants[1].has_layout);  // 0-d
  EXPECT_TRUE(src.constants[1].sizes.empty());
  EXPECT_FALSE(src.constants[2].has_layout);
}

TEST(WrapperSource, ReadsInputChecks) {
  const auto src = aotrt::package::parse_wrapper_source(kSource);
  ASSERT_EQ(src.inputs.size(), 2u);
  EXPECT_EQ(src.inputs[0].dtype, "float32");
  ASSERT_EQ(src.inputs[0].sizes.size(), 2u);
  EXPECT_FALSE(src.inputs[0].sizes[0].has_value());  // dynamic: range checks only
  ASSERT_GE(src.inputs[0].min_sizes.size(), 1u);
  ASSERT_GE(src.inputs[0].max_sizes.size(), 1u);
  EXPECT_EQ(src.inputs[0].min_sizes[0], 2);  // "if (arg0_1_size[0] < 2)"
  EXPECT_EQ(src.inputs[0].max_sizes[0], 64);  // "if (arg0_1_size[0] > 64)"
  EXPECT_EQ(src.inputs[0].sizes[1], 8);
  EXPECT_TRUE(src.inputs[1].min_sizes.empty());  // static: no range
  ASSERT_EQ(src.inputs[0].strides.size(), 2u);
  EXPECT_EQ(src.inputs[0].strides[0], 8);
  EXPECT_EQ(src.inputs[1].dtype, "bfloat16");
  EXPECT_EQ(src.inputs[1].sizes.size(), 1u);  // the line after the checks is not read
  EXPECT_TRUE(aotrt::package::parse_wrapper_source("not C++ at all\n{").constants.empty());
}

// Note [Constants a run writes], on the shapes torch 2.13 writes for the CPU
// (kernel arguments cast to const or not) and for CUDA (call_triton_K's
// parameters named after the Triton kernel's arguments).
constexpr const char* kRun = R"SRC(
    constants_info_[0].name = "w";
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[1].name = "k_cache";
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[2].name = "inv_freq";
    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[3].name = "v_cache";
    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[4].name = "counter";
    constants_info_[4].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[5].name = "unused";
    constants_info_[6].name = "mask";
template <typename in_ptr0_type_, typename out_ptr0_type_, typename kernels_type_>
static __attribute__((noinline)) void call_triton_poi_fused_index_copy_0(
    const in_ptr0_type_& in_ptr0,
    const out_ptr0_type_& out_ptr0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    def triton_poi_fused_index_copy_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
        tl.store(out_ptr0 + x0, tl.load(in_ptr0 + x0))  # "k_cache" in a comment is not a use
    */
}
    in_spec_ = R"([1, {"type": "builtins.dict", "context": "[\"k_cache\", \"pos\"]"}])";
void AOTInductorModel::run_impl(...) {
    [[maybe_unused]] auto& w = constants_->at(0);
    [[maybe_unused]] auto& k_cache = constants_->at(1);
    [[maybe_unused]] auto& inv_freq = constants_->at(2);
    [[maybe_unused]] auto& v_cache = constants_->at(3);
    [[maybe_unused]] auto& counter = constants_->at(4);
    [[maybe_unused]] auto& mask = constants_->at(6);
    cpp_fused_mm_0((const float*)(w.data_ptr()), (const float*)(inv_freq.data_ptr()), (float*)(k_cache.data_ptr()));
    call_triton_poi_fused_index_copy_0(buf1, v_cache, 16L, this->device_idx_, stream, kernels, this->cubin_dir_);
    call_triton_poi_fused_index_copy_0(mask, buf2, 16L, this->device_idx_, stream, kernels, this->cubin_dir_);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_add_out(counter, buf3, buf4));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf5, buf6, w));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_index_put(buf6, buf7, w));
    const char* s = "k_cache";
}
)SRC";

// The specs torch writes for keyword inputs (transformers' decoder step takes
// input_ids= and cache_position=) are raw strings holding \": a scanner that
// read them as plain literals lost its place and saw no write after them.
constexpr const char* kRawSpecs = R"x(
    constants_info_[0].name = "key_cache_0";
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[1].name = "inv_freq";
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    in_spec_ = R"([1, {"type": "builtins.dict", "context": "[\"input_ids\", \"cache_position\"]"}])";
    out_spec_ = R"([1, {"type": null, "context": null, "children_spec": []}])";
    const char* other = R"delim(a "quoted" ) part)delim";
void AOTInductorModel::run_impl(...) {
    [[maybe_unused]] auto& key_cache_0 = constants_->at(0);
    [[maybe_unused]] auto& inv_freq = constants_->at(1);
    cpp_fused_index_copy_0((const float*)(inv_freq.data_ptr()), (float*)(key_cache_0.data_ptr()));
}
)x";

TEST(WrapperSource, ReadsWhichConstantsTheRunWrites) {
  using aotrt::package::ConstantAccess;
  const auto src = aotrt::package::parse_wrapper_source(kRun);
  ASSERT_TRUE(src.access_known);
  ASSERT_EQ(src.constants.size(), 7u);
  EXPECT_EQ(src.constants[0].type, 1);
  EXPECT_EQ(src.constants[1].type, 2);
  // w: a const kernel argument, mm_out's operand (read), then the third argument of a
  // three-argument index_put call, which is not the six-parameter shim the table knows.
  EXPECT_EQ(src.constants[0].access, ConstantAccess::kMaybeWritten);
  EXPECT_EQ(src.constants[1].access, ConstantAccess::kWritten);  // (float*)(k_cache.data_ptr())
  EXPECT_EQ(src.constants[2].access, ConstantAccess::kRead);     // (const float*)
  EXPECT_EQ(src.constants[3].access, ConstantAccess::kWritten);  // a Triton out_ptr0
  EXPECT_EQ(src.constants[4].access, ConstantAccess::kWritten);  // an _out shim's first argument
  EXPECT_EQ(src.constants[5].access, ConstantAccess::kUnused);   // never declared in the run
  EXPECT_EQ(src.constants[6].access, ConstantAccess::kRead);     // a Triton in_ptr0
}

// gpt-fast's int4 linear registers its packed weight and scales as buffers: the ops that
// only read them must not make them a session's state (a copy per session).
constexpr const char* kInt4Buffers = R"SRC(
    constants_info_[0].name = "L__self___w_int4";
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[1].name = "L__self___scales_and_zeros";
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[2].name = "L__self___w_int8";
    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[3].name = "L__self___w";
    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[4].name = "L__self___cache";
    constants_info_[4].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
void AOTInductorModel::run_impl(...) {
    [[maybe_unused]] auto& L__self___w_int4 = constants_->at(0);
    [[maybe_unused]] auto& L__self___scales_and_zeros = constants_->at(1);
    [[maybe_unused]] auto& L__self___w_int8 = constants_->at(2);
    [[maybe_unused]] auto& L__self___w = constants_->at(3);
    [[maybe_unused]] auto& L__self___cache = constants_->at(4);
    AtenTensorHandle buf1_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__weight_int4pack_mm(buf0, L__self___w_int4, 128L, L__self___scales_and_zeros, &buf1_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__weight_int8pack_mm(buf1, L__self___w_int8, buf2, &buf3_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_addmm_out(buf4, buf3, L__self___w, L__self___w, 1.0, 1.0));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(L__self___cache, buf4, buf5));
}
)SRC";

TEST(WrapperSource, WeightBuffersOfReadOnlyOpsAreRead) {
  using aotrt::package::ConstantAccess;
  const auto src = aotrt::package::parse_wrapper_source(kInt4Buffers);
  ASSERT_TRUE(src.access_known);
  ASSERT_EQ(src.constants.size(), 5u);
  EXPECT_EQ(src.constants[0].access, ConstantAccess::kRead);     // _weight_int4pack_mm
  EXPECT_EQ(src.constants[1].access, ConstantAccess::kRead);
  EXPECT_EQ(src.constants[2].access, ConstantAccess::kRead);     // _weight_int8pack_mm
  EXPECT_EQ(src.constants[3].access, ConstantAccess::kRead);     // addmm_out's operands
  EXPECT_EQ(src.constants[4].access, ConstantAccess::kWritten);  // mm_out's out
}

// The table of package/shim_writes.h against the schemas, read by hand (torch 2.13):
// one letter per C parameter, w written, r read, m other.
TEST(ShimWrites, AnswersAsTheSchemasSay) {
  using aotrt::package::shim_argument_access;
  // mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out): out first in the C call.
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_mm_out"), "wrr");
  EXPECT_EQ(shim_argument_access("aoti_torch_cuda_mm_out"), "wrr");
  // _scaled_mm(self, mat2, scale_a, scale_b, Tensor? bias, Tensor? scale_result,
  // ScalarType? out_dtype, bool use_fast_accum) -> Tensor: every tensor read, ret0 last.
  EXPECT_EQ(shim_argument_access("aoti_torch_cuda__scaled_mm"), "rrrrrrmmm");
  // fill_.Scalar(Tensor(a!) self, Scalar value): in place.
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_fill__Scalar"), "wm");
  EXPECT_EQ(shim_argument_access("aoti_torch_aten_fill__Scalar"), "wm");
  // bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator).
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_bernoulli__Tensor"), "wrm");
  // index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate) -> Tensor:
  // functional, the list is (pointer, length).
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_index_put"), "rrmrmm");
  // c/shim.h's aoti_torch_index_put_out(out, self, indices, num_indices, values, accumulate):
  // index_put.out, out written.
  EXPECT_EQ(shim_argument_access("aoti_torch_index_put_out"), "wrrmrm");
  // scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out).
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_scatter_src_out"), "wrmrr");
  // _flash_attention_forward_no_dropout_inplace(Tensor(a!) out, query, key, value, ...).
  EXPECT_EQ(shim_argument_access("aoti_torch_cuda__flash_attention_forward_no_dropout_inplace")
                ->substr(0, 4),
            "wrrr");
  // narrow(Tensor(a) self, ...) -> Tensor(a): a view of self, which a later write reaches.
  EXPECT_EQ(shim_argument_access("aoti_torch_aten_narrow"), "mmmmm");
  // set_.source_Tensor(Tensor(a!) self, Tensor source): self comes to alias source, which
  // the schema does not say (scripts/gen_shim_writes.py's UNDECLARED_ALIASES).
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_set__source_Tensor"), "wm");
  // No aten schema: not in the table, every argument maybe written.
  // mkldnn::_linear_pointwise(Tensor X, Tensor W, Tensor? B, str attr, Scalar?[] scalars,
  // str? algorithm): a hand-written shim, named after that schema by gen_shim_writes.py.
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu__linear_pointwise"), "rrrmmmmm");
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu__qlinear_pointwise_tensor"), std::nullopt);
  EXPECT_EQ(shim_argument_access("aoti_torch_copy_"), std::nullopt);
  EXPECT_EQ(shim_argument_access("aoti_torch_cpu_no_such_op"), std::nullopt);
}

// Constants passed to fallback ops as torch 2.13's wrapper codegen writes the calls: plain
// handles, optional tensors as "&temporary_reference(X.get())", lists as std::array.
constexpr const char* kShimCalls = R"SRC(
    constants_info_[0].name = "w_fp8";
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[1].name = "scale_w";
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[2].name = "bias";
    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[3].name = "cache";
    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[4].name = "table";
    constants_info_[4].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[5].name = "idx";
    constants_info_[5].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[6].name = "viewed";
    constants_info_[6].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[7].name = "filled";
    constants_info_[7].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[8].name = "linear_w";
    constants_info_[8].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[9].name = "short_call";
    constants_info_[9].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[10].name = "norm_w";
    constants_info_[10].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[11].name = "w_t";
    constants_info_[11].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[12].name = "out_view";
    constants_info_[12].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[13].name = "kept_view";
    constants_info_[13].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[14].name = "packed_w";
    constants_info_[14].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[15].name = "accum";
    constants_info_[15].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[16].name = "after_string";
    constants_info_[16].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
void AOTInductorModel::run_impl(...) {
    [[maybe_unused]] auto& w_fp8 = constants_->at(0);
    [[maybe_unused]] auto& scale_w = constants_->at(1);
    [[maybe_unused]] auto& bias = constants_->at(2);
    [[maybe_unused]] auto& cache = constants_->at(3);
    [[maybe_unused]] auto& table = constants_->at(4);
    [[maybe_unused]] auto& idx = constants_->at(5);
    [[maybe_unused]] auto& viewed = constants_->at(6);
    [[maybe_unused]] auto& filled = constants_->at(7);
    [[maybe_unused]] auto& linear_w = constants_->at(8);
    [[maybe_unused]] auto& short_call = constants_->at(9);
    [[maybe_unused]] auto& norm_w = constants_->at(10);
    [[maybe_unused]] auto& w_t = constants_->at(11);
    [[maybe_unused]] auto& out_view = constants_->at(12);
    [[maybe_unused]] auto& kept_view = constants_->at(13);
    [[maybe_unused]] auto& packed_w = constants_->at(14);
    [[maybe_unused]] auto& accum = constants_->at(15);
    [[maybe_unused]] auto& after_string = constants_->at(16);
    AtenTensorHandle buf1_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__scaled_mm(buf0, w_fp8, buf2, scale_w, &temporary_reference(bias.get()), nullptr, &var_0, 0, &buf1_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_index_put(table, std::array<const AtenTensorHandle*, 2>{&temporary_reference(idx.get()), nullptr}.data(), 2, buf3, 0, &buf4_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_index_put_out(cache, cache, std::array<AtenTensorHandle, 1>{buf5.get()}.cbegin(), 1, buf6, 0));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_view_dtype(viewed, cached_torch_dtype_float32, &buf7_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_fill__Scalar(filled, 0.0));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__qlinear_pointwise_tensor(buf8, buf9, buf10, linear_w, buf11, buf12, nullptr, 1.0, 0L, &var_8, "none", nullptr, 0, "", &buf9_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__scaled_mm(buf0, short_call, buf2));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__scaled_mm_out(buf1, buf0, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(w_t, 2, int_array_4, int_array_5, 0L)), buf2, buf3, nullptr, nullptr, &var_2, 0));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(out_view, 2, int_array_4, int_array_5, 0L)), buf0, buf1));
    auto tmp_view = reinterpret_tensor_wrapper(kept_view, 2, int_array_4, int_array_5, 0L);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__linear_pointwise(buf13, packed_w, nullptr, "none", std::array<const double*, 1>{&var_3}.data(), 1, &var_4, &buf14_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mkldnn__convolution_pointwise_binary_(accum, buf15, packed_w, nullptr, std::array<int64_t, 2>{0L, 0L}.cbegin(), 2, std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, 1L, "add", &var_5, &var_6, std::array<const double*, 1>{nullptr}.data(), 1, &var_7, &buf16_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__mkl_linear(buf17, buf18, "a,\"b", after_string, 0L, &buf19_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda__fused_rms_norm(buf10, std::array<int64_t, 1>{64L}.cbegin(), 1, &temporary_reference(norm_w.get()), &var_1, &buf11_handle, &buf12_handle));
}
)SRC";

TEST(WrapperSource, ShimArgumentsAreReadOrWrittenAsTheSchemasSay) {
  using aotrt::package::ConstantAccess;
  const auto src = aotrt::package::parse_wrapper_source(kShimCalls);
  ASSERT_TRUE(src.access_known);
  ASSERT_EQ(src.constants.size(), 17u);
  EXPECT_EQ(src.constants[0].access, ConstantAccess::kRead);     // _scaled_mm's mat2 (fp8 weight)
  EXPECT_EQ(src.constants[1].access, ConstantAccess::kRead);     // its scale_b
  EXPECT_EQ(src.constants[2].access, ConstantAccess::kRead);     // its optional bias
  EXPECT_EQ(src.constants[3].access, ConstantAccess::kWritten);  // index_put.out's out (and self)
  EXPECT_EQ(src.constants[4].access, ConstantAccess::kRead);     // functional index_put's self
  EXPECT_EQ(src.constants[5].access, ConstantAccess::kRead);     // an element of its indices
  EXPECT_EQ(src.constants[6].access, ConstantAccess::kMaybeWritten);  // a view is made of it
  EXPECT_EQ(src.constants[7].access, ConstantAccess::kWritten);  // fill_'s self
  EXPECT_EQ(src.constants[8].access, ConstantAccess::kMaybeWritten);  // no schema: oneDNN int8
  // Three arguments where the table has nine: not this signature, so not trusted.
  EXPECT_EQ(src.constants[9].access, ConstantAccess::kMaybeWritten);
  EXPECT_EQ(src.constants[10].access, ConstantAccess::kRead);  // _fused_rms_norm's weight
  // A view made for the call alone is read or written as the op treats that argument.
  EXPECT_EQ(src.constants[11].access, ConstantAccess::kRead);     // _scaled_mm.out's mat2 = w.t()
  EXPECT_EQ(src.constants[12].access, ConstantAccess::kWritten);  // mm.out's out
  EXPECT_EQ(src.constants[13].access, ConstantAccess::kMaybeWritten);  // a view kept by name
  // mkldnn::_linear_pointwise reads its prepacked weight; _convolution_pointwise_.binary
  // writes its first argument (Tensor(a!) other).
  EXPECT_EQ(src.constants[14].access, ConstantAccess::kRead);
  EXPECT_EQ(src.constants[15].access, ConstantAccess::kWritten);
  // Commas inside a string argument separate no arguments: the 4th of _mkl_linear (read), not
  // the 5th (an integer, maybe written). The scanner's test, not a call inductor writes.
  EXPECT_EQ(src.constants[16].access, ConstantAccess::kRead);
}

TEST(WrapperSource, SkipsRawStringLiterals) {
  using aotrt::package::ConstantAccess;
  const auto src = aotrt::package::parse_wrapper_source(kRawSpecs);
  ASSERT_TRUE(src.access_known);
  ASSERT_EQ(src.constants.size(), 2u);
  EXPECT_EQ(src.constants[0].access, ConstantAccess::kWritten);
  EXPECT_EQ(src.constants[1].access, ConstantAccess::kRead);
}

TEST(WrapperSource, WithoutTheRunSaysNothingAboutWrites) {
  const auto src = aotrt::package::parse_wrapper_source(kSource);
  EXPECT_FALSE(src.access_known);
  for (const auto& c : src.constants) EXPECT_EQ(c.access, aotrt::package::ConstantAccess::kUnused);
}

}  // namespace
