// Tensor-core attention for fp16 and bf16: cuDNN's fused scaled-dot-product
// attention (the library ATen's _scaled_dot_product_cudnn_attention calls),
// built through the cuDNN frontend's graph API and cached per configuration.
//
// Note [cuDNN attention]
// attention() (attention.cu) offers every fp16/bf16 call here first. A
// configuration (dtype, shapes, every stride, bias shape and strides, causal,
// scale, whether the logsumexp is wanted) gets one cuDNN graph, built and
// planned on its first call and kept in a per-thread cache; later calls bind
// the addresses and execute: no graph building, no allocation beyond the
// workspace block from aotrt's caching allocator, no host sync. What cuDNN
// does not serve - a head dim it rejects, an operand whose innermost stride
// is not 1 or whose address is not 16-byte aligned, a bias of another dtype -
// is answered false (and a configuration cuDNN rejected is remembered as
// such), and attention() runs aotrt's own kernel, which serves every layout.
// Semantics as ATen's: the causal mask is top-left aligned (key j is masked
// from query i when j > i), or bottom-right aligned for _efficient_attention_forward's
// custom_mask_type 2 (j > i + Lk - Lq; cuDNN serves it without a bias and
// with Lq <= Lk); K/V may have fewer heads than Q (GQA, Hk | H);
// the bias broadcasts over batch and heads through dims of size 1; cuDNN's
// softmax statistics are the natural-log logsumexp, fp32 [B, H, Lq, 1].
// AOTRT_CUDNN_ATTENTION=0 (read once) sends every call to aotrt's kernel.
#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/plan_key.h"
#include "cuda/handles.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"

// The frontend reaches cuDNN through dlsym on this handle (it is built with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, which also keeps NVRTC a run-time
// option). libaotrt links libcudnn, so the library is already loaded.
namespace cudnn_frontend {
void* cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_LAZY | RTLD_NOLOAD);
}  // namespace cudnn_frontend

namespace aotrt::cuda {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kBias, kStats };

bool cudnn_attention_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("AOTRT_CUDNN_ATTENTION");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

struct AttentionPlan {
  std::shared_ptr<fe::graph::Graph> graph;  // null: cuDNN does not serve this configuration
  int64_t workspace = 0;
  // uid -> address, its keys made once: a call only rebinds the values.
  std::unordered_map<int64_t, void*> pack;
};

std::vector<int64_t> dims4(std::span<const int64_t> v) { return {v[0], v[1], v[2], v[3]}; }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

fe::DataType_t fe_type(ScalarType t) {
  return t == ScalarType::BFloat16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

AttentionPlan build_plan(const CudnnAttentionCall& c, cudnnHandle_t handle) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe_type(c.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&](const char* name, Uid uid, std::vector<int64_t> dims,
                    std::vector<int64_t> strides) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(std::move(dims))
                             .set_stride(std::move(strides)));
  };
  auto q = tensor("Q", kQ, dims4(c.q.sizes), dims4(c.q.strides));
  auto k = tensor("K", kK, dims4(c.k.sizes), dims4(c.k.strides));
  auto v = tensor("V", kV, dims4(c.v.sizes), dims4(c.v.strides));
  auto options = fe::graph::SDPA_attributes()
                     .set_name("aotrt_sdpa")
                     .set_generate_stats(c.lse != nullptr)
                     .set_attn_scale(c.scale)
                     .set_causal_mask(c.causal && !c.causal_bottom_right)
                     .set_causal_mask_bottom_right(c.causal && c.causal_bottom_right);
  if (c.bias.data != nullptr) {
    options.set_bias(tensor("Bias", kBias, dims4(c.bias.sizes), dims4(c.bias.strides)));
  }
  auto [o, stats] = graph->sdpa(q, k, v, options);
  o->set_output(true).set_uid(kO).set_dim(dims4(c.out.sizes)).set_stride(dims4(c.out.strides));
  if (c.lse != nullptr) {
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({c.out.sizes[0], c.out.sizes[1], c.out.sizes[2], 1})
        .set_stride({c.lse_strides[0], c.lse_strides[1], c.lse_strides[2], 1});
  }
  AttentionPlan plan;
  if (!graph->validate().is_good() || !graph->build_operation_graph(handle).is_good() ||
      !graph->create_execution_plans({fe::HeurMode_t::A}).is_good() ||
      !graph->check_support(handle).is_good() ||
      !graph->build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE).is_good()) {
    return plan;  // not served: aotrt's kernel takes it
  }
  int64_t workspace = 0;
  if (!graph->get_workspace_size(workspace).is_good()) return plan;
  plan.graph = std::move(graph);
  plan.workspace = workspace;
  for (Uid uid : {kQ, kK, kV, kO}) plan.pack.emplace(uid, nullptr);
  if (c.bias.data != nullptr) plan.pack.emplace(kBias, nullptr);
  if (c.lse != nullptr) plan.pack.emplace(kStats, nullptr);
  return plan;
}

}  // namespace

bool cudnn_attention(const CudnnAttentionCall& c, int device, cudaStream_t stream,
                     const char* fn) {
  if (!cudnn_attention_enabled()) return false;
  if (c.dtype != ScalarType::Float16 && c.dtype != ScalarType::BFloat16) return false;
  const StridedView* operands[] = {&c.q, &c.k, &c.v, &c.out};
  for (const StridedView* t : operands) {
    if (t->strides[3] != 1 || !aligned16(t->data)) return false;
  }
  if (c.bias.data != nullptr &&
      (c.bias.dtype != c.dtype || c.bias.strides[3] != 1 || !aligned16(c.bias.data))) {
    return false;
  }
  if (c.lse != nullptr && !aligned16(c.lse)) return false;

  // The configuration: everything the graph was built from.
  PlanKey key;
  key.push(device);
  key.push(static_cast<int64_t>(c.dtype));
  for (const StridedView* t : operands) {
    key.push(t->sizes);
    key.push(t->strides);
  }
  if (c.bias.data != nullptr) {
    key.push(c.bias.sizes);
    key.push(c.bias.strides);
  } else {
    key.push(-1);
  }
  key.push(c.causal ? (c.causal_bottom_right ? 2 : 1) : 0);
  int32_t scale_bits = 0;
  std::memcpy(&scale_bits, &c.scale, sizeof scale_bits);
  key.push(scale_bits);
  if (c.lse != nullptr) {
    key.push(std::span<const int64_t>(c.lse_strides, 3));
  } else {
    key.push(-1);
  }

  cudnnHandle_t handle = cudnn_handle(device, stream);
  thread_local std::unordered_map<PlanKey, AttentionPlan, PlanKeyHash> t_plans;
  auto it = t_plans.find(key);
  if (it == t_plans.end()) it = t_plans.emplace(key, build_plan(c, handle)).first;
  AttentionPlan& plan = it->second;
  if (!plan.graph) return false;

  DeviceBuffer workspace;
  if (plan.workspace > 0) workspace = DeviceBuffer(device, static_cast<size_t>(plan.workspace));
  plan.pack[kQ] = c.q.data;
  plan.pack[kK] = c.k.data;
  plan.pack[kV] = c.v.data;
  plan.pack[kO] = c.out.data;
  if (c.bias.data != nullptr) plan.pack[kBias] = c.bias.data;
  if (c.lse != nullptr) plan.pack[kStats] = c.lse;
  auto status = plan.graph->execute(handle, plan.pack, workspace.data());
  AOTRT_CHECK(status.is_good(), kBackend, fn, ": cuDNN attention failed to execute: ",
              status.get_message());
  return true;
}

}  // namespace aotrt::cuda
