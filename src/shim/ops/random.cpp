// Entry points of the random family (ops/random.h), both devices (the CUDA
// kernels are src/cuda/ops/random.cu; CUDA draws the CPU's stream). Handles
// are borrowed; ret0 gets a new owning handle; in-place ops (bernoulli_,
// randint_low_out) write into self / out. See Note [Op rows] and Note
// [Random streams].
#include <algorithm>

#include "ops/random.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using ops::RandomDraw;
using ops::RandomKind;

namespace {

void check_generator(AtenGeneratorHandle* generator, const char* fn) {
  ops::check_default_generator(reinterpret_cast<const void* const*>(generator), fn);
}

RandomDraw uniform(double from, double to) {
  return RandomDraw{.kind = RandomKind::kUniform, .a = from, .b = to};
}
RandomDraw normal(double mean, double std) {
  return RandomDraw{.kind = RandomKind::kNormal, .a = mean, .b = std};
}
RandomDraw randint(int64_t low, int64_t high, const char* fn) {
  AOTRT_CHECK(low < high, kInvalidArgument, fn, ": random_ expects 'from' to be less than 'to', ",
              "but got from=", low, " >= to=", high);
  return RandomDraw{.kind = RandomKind::kRandint,
                    .low = low,
                    .range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low)};
}

// A factory's result: `size` of `dtype` on this entry's device, drawn.
std::unique_ptr<TensorImpl> factory(const OpArgs& args, const int64_t* size, int64_t size_len,
                                    const int32_t* dtype, const int32_t* layout,
                                    int32_t device_index, AtenGeneratorHandle* generator,
                                    const RandomDraw& draw) {
  check_generator(generator, args.fn);
  return ops::random_tensor(args.ints(size, size_len, "size"), args.optional_dtype(dtype, "dtype"),
                            args.factory_device(layout, device_index), draw, args.fn);
}

// A *_like's result: self's sizes and layout, drawn.
std::unique_ptr<TensorImpl> like(const OpArgs& args, AtenTensorHandle self, const int32_t* dtype,
                                 const int32_t* memory_format, AtenGeneratorHandle* generator,
                                 const RandomDraw& draw) {
  check_generator(generator, args.fn);
  const TensorImpl& s = args.tensor(self, "self");
  return ops::random_like(s, args.optional_dtype(dtype, "dtype"),
                          args.optional_memory_format(memory_format, "memory_format"), draw,
                          args.fn);
}

}  // namespace

AOTRT_OP(rand,
             (const int64_t* size, int64_t size_len_,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 nullptr, uniform(0, 1))))

AOTRT_OP(rand_generator,
             (const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 generator, uniform(0, 1))))

AOTRT_OP(randn,
             (const int64_t* size, int64_t size_len_,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 nullptr, normal(0, 1))))

AOTRT_OP(randn_generator,
             (const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 generator, normal(0, 1))))

AOTRT_OP(rand_like,
             (AtenTensorHandle self,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format, AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, nullptr, uniform(0, 1))))

AOTRT_OP(rand_like_generator,
             (AtenTensorHandle self, AtenGeneratorHandle* generator,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format,
              AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, generator, uniform(0, 1))))

AOTRT_OP(randn_like,
             (AtenTensorHandle self,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format, AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, nullptr, normal(0, 1))))

AOTRT_OP(randn_like_generator,
             (AtenTensorHandle self, AtenGeneratorHandle* generator,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format,
              AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, generator, normal(0, 1))))

AOTRT_OP(randint,
             (int64_t high, const int64_t* size, int64_t size_len_,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory,
              AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 nullptr, randint(0, high, fn))))

AOTRT_OP(randint_generator,
             (int64_t high, const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 generator, randint(0, high, fn))))

AOTRT_OP(randint_low,
             (int64_t low, int64_t high, const int64_t* size, int64_t size_len_,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory,
              AtenTensorHandle* ret0),
             give(ret0, factory(args, size, size_len_, dtype, layout, device_index_,
                                 nullptr, randint(low, high, fn))))

// Inductor seeds its own random kernels with this one (one int64 seed per
// random op of the graph, drawn in [INT64_MIN, INT64_MAX)).
AOTRT_OP(randint_low_out,
             (AtenTensorHandle out, int64_t low, int64_t high, const int64_t* size,
              int64_t size_len_),
             const TensorImpl& o = args.tensor(out, "out");
             const auto sz = args.ints(size, size_len_, "size");
             AOTRT_CHECK(std::equal(sz.begin(), sz.end(), o.sizes().begin(), o.sizes().end()),
                         kUnsupported, fn, ": 'out' has other sizes than 'size'; aotrt does not ",
                         "resize outputs");
             ops::fill_random(o, randint(low, high, fn), fn))

AOTRT_OP(randint_like,
             (AtenTensorHandle self, int64_t high,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format, AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, nullptr, randint(0, high, fn))))

AOTRT_OP(randint_like_low_dtype,
             (AtenTensorHandle self, int64_t low, int64_t high,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, int32_t* memory_format,
              AtenTensorHandle* ret0),
             give(ret0, like(args, self, dtype, memory_format, nullptr, randint(low, high, fn))))

AOTRT_OP(randperm, (int64_t n,
              int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
              int32_t* pin_memory, AtenTensorHandle* ret0),
             give(ret0, ops::randperm(n, args.optional_dtype(dtype, "dtype"),
                                      args.factory_device(layout, device_index_), fn)))

AOTRT_OP(bernoulli__float, (AtenTensorHandle self, double p, AtenGeneratorHandle* generator),
             check_generator(generator, fn);
             ops::fill_random(args.tensor(self, "self"),
                              RandomDraw{.kind = RandomKind::kBernoulli, .a = p}, fn))

AOTRT_OP(bernoulli__Tensor,
             (AtenTensorHandle self, AtenTensorHandle p, AtenGeneratorHandle* generator),
             check_generator(generator, fn);
             ops::bernoulli_tensor_(args.tensor(self, "self"), args.tensor(p, "p"), fn))

AOTRT_OP(uniform,
             (AtenTensorHandle self, double from, double to, AtenGeneratorHandle* generator,
              AtenTensorHandle* ret0),
             check_generator(generator, fn);
             give(ret0, ops::random_functional(args.tensor(self, "self"), uniform(from, to), fn)))

AOTRT_OP(normal_functional,
             (AtenTensorHandle self, double mean, double std, AtenGeneratorHandle* generator,
              AtenTensorHandle* ret0),
             check_generator(generator, fn);
             give(ret0, ops::random_functional(args.tensor(self, "self"), normal(mean, std), fn)))

AOTRT_OP(exponential,
             (AtenTensorHandle self, double lambd, AtenGeneratorHandle* generator,
              AtenTensorHandle* ret0),
             check_generator(generator, fn);
             give(ret0, ops::random_functional(
                            args.tensor(self, "self"),
                            RandomDraw{.kind = RandomKind::kExponential, .a = lambd}, fn)))

AOTRT_OP(native_dropout,
             (AtenTensorHandle input, double p, int32_t* train, AtenTensorHandle* ret0,
              AtenTensorHandle* ret1),
             auto [out, mask] = ops::native_dropout(
                 args.tensor(input, "input"), p,
                 train == nullptr ? std::nullopt : std::optional<bool>(*train != 0), fn);
             give(ret0, ret1, std::move(out), std::move(mask)))

namespace {
void check_no_generator(const runtime::ProxyCall& c) {
  AOTRT_CHECK(!c.has_value("generator"), kUnsupported, c.what(),
              ": argument 'generator' is not None; aotrt draws from its default generator");
}
}  // namespace

// bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None): the
// functional form has no C shim.
AOTRT_PROXY_OP("aten::bernoulli.Tensor", {"self", "p", "generator"},
               runtime::kProxyCpu | runtime::kProxyCuda,
               [](runtime::ProxyCall& c) {
                 check_no_generator(c);
                 c.set_output(0, ops::bernoulli_tensor(c.tensor("self"), c.tensor("p"), c.what()));
               });

// multinomial(Tensor self, SymInt num_samples, bool replacement=False, *,
// Generator? generator=None) -> Tensor
AOTRT_PROXY_OP("aten::multinomial", {"self", "num_samples", "replacement", "generator"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](runtime::ProxyCall& c) {
                 check_no_generator(c);
                 c.set_output(0, ops::multinomial(c.tensor("self"), c.int_arg("num_samples"),
                                                  c.bool_arg("replacement", false), c.what()));
               });

// prims::normal(SymInt[] shape, *, Scalar mean, Scalar std, ScalarType dtype,
// Device device, bool requires_grad, Generator? generator=None) -> Tensor:
// what torch.normal(mean, std) with tensor or number arguments lowers to
// (a standard draw that inductor scales and shifts).
AOTRT_PROXY_OP("prims::normal",
               {"shape", "mean", "std", "dtype", "device", "requires_grad", "generator"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](runtime::ProxyCall& c) {
                 check_no_generator(c);
                 const Device device = c.device_arg("device", cpu_device());
                 c.set_output(0, ops::random_tensor(c.ints("shape"), c.optional_dtype("dtype"),
                                                    device, normal(c.scalar_arg("mean"),
                                                                         c.scalar_arg("std")),
                                                    c.what()));
               });
