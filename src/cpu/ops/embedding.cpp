// CPU kernel of the embedding family (ops/embedding.h): one pass over each
// bag's indices per output row, bags in parallel (OpenMP) when there is
// enough work. Note [Embedding bag semantics] gives the rules.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/embedding.h"

namespace aotrt::cpu {
namespace {
using ops::EmbeddingBagArgs;
using ops::EmbeddingBagMode;
using ops::EmbeddingKernels;

// A 1-d int32/int64 view read into int64 values.
std::vector<int64_t> read_ints(const StridedView& v) {
  std::vector<int64_t> out(static_cast<size_t>(v.sizes[0]));
  for (int64_t i = 0; i < v.sizes[0]; ++i) {
    out[static_cast<size_t>(i)] = v.dtype == ScalarType::Int64
                                      ? read_elem<int64_t>(v.data, i * v.strides[0])
                                      : read_elem<int32_t>(v.data, i * v.strides[0]);
  }
  return out;
}

void write_int(const StridedView& v, int64_t elem, int64_t value) {
  if (v.dtype == ScalarType::Int64) {
    write_elem<int64_t>(v.data, elem, value);
  } else {
    write_elem<int32_t>(v.data, elem, static_cast<int32_t>(value));
  }
}

template <typename T>
void bags_of(const EmbeddingBagArgs& a, const std::vector<int64_t>& idx,
             const std::vector<int64_t>& off, const std::vector<int64_t>& sizes) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t bags = a.output.sizes[0], dim = a.output.sizes[1];
  const int64_t ws0 = a.weight.strides[0], ws1 = a.weight.strides[1];
  const int64_t os0 = a.output.strides[0], os1 = a.output.strides[1];
  const int64_t n = static_cast<int64_t>(idx.size());
  const int64_t n_off = static_cast<int64_t>(off.size());
#pragma omp parallel for schedule(static) if (n * dim >= 32768 && bags > 1)
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t start = off[static_cast<size_t>(b)];
    const int64_t next = b + 1 < n_off ? off[static_cast<size_t>(b + 1)] : n;
    const int64_t end = std::max(start, b + 1 == bags && a.last_bag_to_end ? n : next);
    for (int64_t d = 0; d < dim; ++d) {
      A acc = 0;
      int64_t arg = 0;
      bool started = false;
      for (int64_t i = start; i < end; ++i) {
        const int64_t row = idx[static_cast<size_t>(i)];
        if (row == a.padding_idx) continue;
        const A x = static_cast<A>(load(read_elem<T>(a.weight.data, row * ws0 + d * ws1)));
        if (a.mode == EmbeddingBagMode::kMax) {
          if (!started || x > acc) {
            acc = x;
            arg = row;
          }
          started = true;
        } else if (a.per_sample_weights) {
          const StridedView& p = *a.per_sample_weights;
          acc += x * static_cast<A>(load(read_elem<T>(p.data, i * p.strides[0])));
        } else {
          acc += x;
        }
      }
      if (a.mode == EmbeddingBagMode::kMean) {
        const int64_t count = sizes[static_cast<size_t>(b)];
        acc = count > 0 ? acc / static_cast<A>(count) : A(0);
      }
      write_elem<T>(a.output.data, b * os0 + d * os1, convert_value<T>(acc));
      if (a.mode == EmbeddingBagMode::kMax) {
        write_int(a.max_indices, b * a.max_indices.strides[0] + d * a.max_indices.strides[1],
                  arg);
      }
    }
  }
}

void embedding_bag(const EmbeddingBagArgs& a, const char* fn) {
  const std::vector<int64_t> idx = read_ints(a.indices);
  const std::vector<int64_t> off = read_ints(a.offsets);
  const int64_t n = static_cast<int64_t>(idx.size());
  const int64_t rows = a.weight.sizes[0];
  const int64_t bags = a.output.sizes[0];
  if (!off.empty()) {
    AOTRT_CHECK(off.front() == 0, kInvalidArgument, fn,
                ": offsets[0] has to be 0 (the first bag starts at position 0), not ",
                off.front());
    AOTRT_CHECK(off.back() <= n, kInvalidArgument, fn,
                ": offsets[-1] can not be greater than indices' length ", n, ", got ",
                off.back());
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = idx[static_cast<size_t>(i)];
    AOTRT_CHECK(v >= 0 && v < rows, kInvalidArgument, fn, ": indices[", i, "] is ", v,
                ", not in the valid range [0, ", rows, ")");
  }
  // bag_size: counts of indices that are not padding, the last bag up to n.
  std::vector<int64_t> sizes(static_cast<size_t>(bags), 0);
  if (a.mode != EmbeddingBagMode::kSum) {
    for (int64_t b = 0; b < bags; ++b) {
      const int64_t start = off[static_cast<size_t>(b)];
      const int64_t end = b + 1 < bags ? off[static_cast<size_t>(b + 1)] : n;
      for (int64_t i = start; i < end; ++i) {
        sizes[static_cast<size_t>(b)] += idx[static_cast<size_t>(i)] != a.padding_idx;
      }
    }
  }
  for (int64_t b = 0; b < a.bag_size.sizes[0]; ++b) {
    const int64_t s = b < bags ? sizes[static_cast<size_t>(b)] : 0;
    write_int(a.bag_size, b * a.bag_size.strides[0], s);
    if (a.mode != EmbeddingBagMode::kMax) {
      write_int(a.max_indices, b * a.max_indices.strides[0], s);
    }
  }
  // offset2bag: the number of bag starts at or before each index, less one.
  if (a.offset2bag.sizes[0] > 0) {
    int64_t bag = -1;
    size_t next = 0;
    for (int64_t i = 0; i < n; ++i) {
      while (next < static_cast<size_t>(bags) && off[next] <= i) {
        ++bag;
        ++next;
      }
      write_int(a.offset2bag, i * a.offset2bag.strides[0], std::max<int64_t>(bag, 0));
    }
  }
  const bool served = visit_dtype(a.weight.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      bags_of<T>(a, idx, off, sizes);
    } else {
      AOTRT_FAIL(kInternal, fn, ": weight dtype ", dtype_name(a.weight.dtype));
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(a.weight.dtype), " is not served");
}

constexpr EmbeddingKernels kEmbedding{.embedding_bag = embedding_bag};
AOTRT_REGISTER_KERNELS(EmbeddingKernels, cpu, kEmbedding);

}  // namespace
}  // namespace aotrt::cpu
