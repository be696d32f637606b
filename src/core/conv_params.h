// The parameters of aten.convolution, shared by the CPU and CUDA backends.
#pragma once

#include <cstdint>
#include <vector>

namespace aotrt {

struct ConvParams {
  std::vector<int64_t> stride;
  std::vector<int64_t> padding;
  std::vector<int64_t> dilation;
  bool transposed = false;
  std::vector<int64_t> output_padding;
  int64_t groups = 1;
};

}  // namespace aotrt
