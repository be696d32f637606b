// oneDNN-blocked ("opaque", layout _mkldnn) constants of freezing=True
// packages: the descriptor inductor stores with them, decoded by aotrt itself.
//
// Note [Serialized oneDNN descriptors]
// Inductor writes constants_info_[i].opaque_metadata from
// torch.ops.mkldnn._get_mkldnn_serialized_md: ideep's blob, which is oneDNN
// 3.x's dnnl_memory_desc_get_blob (a byte copy of its memory_desc_t, padding
// included) with ideep's group count (int32) after it. Measured with torch
// 2.13 (oneDNN 3.12) on every conv and linear weight its reorders make
// (tests/unit/test_onednn_md.cpp holds real blobs), little-endian, 772 bytes:
//   0    int32  1 on every blob seen (the descriptor's leading field: read as
//               the layout version; any other value is refused)
//   4    int32  ndims (1..12)
//   8    int64  dims[12]
//   104  int32  data_type (oneDNN's: f32 3, bf16 2, f16 1, s8 5, u8 6)
//   112  int64  padded_dims[12]
//   208  int64  padded_offsets[12]
//   304  int64  offset0 (elements)
//   312  int32  format_kind (2 = blocked)
//   320  blocking: int64 strides[12] (of the outer blocks, elements),
//        416 int32 inner_nblks, 424 int64 inner_blks[12], 520 int64
//        inner_idxs[12] (outermost inner block first)
//   640  extra: uint64 flags (compensation, scale adjust), ...
//   768  int32  groups (ideep's; the dims are [g, O/g, I/g, kh, kw] when the
//               conv is grouped: ndims is the tensor's plus one)
// Element (i_0..i_n) lies at offset0 + sum_k (i_k / B_k) * strides[k] + its
// place inside the inner blocks, B_k being the product of the inner blocks
// of dim k; the inner blocks are dense, the innermost last.
// aotrt serves the blocked kind with zero padded offsets. Extra flags: an
// int8 weight of the quantized convolutions and linears (X86InductorQuantizer
// packages) carries oneDNN's compensation data after its elements
// (compensation_conv_s8s8 1, compensation_conv_asymmetric_src 8: per-output
// sums that oneDNN's int8 kernels use for the source's zero point); the
// elements themselves are stored as without the flags, so aotrt reads them
// and ignores what follows. scale_adjust (2, weights pre-multiplied by a
// factor on CPUs without VNNI) and the RNN flags change how elements are to
// be read and are refused, as is anything else (another size or version,
// winograd/RNN-packed or sparse kinds, an index past the data), at load,
// naming the constant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/storage.h"

namespace aotrt {

struct OnednnBlockedDesc {
  std::vector<int64_t> dims;          // oneDNN's dims (grouped conv: g first)
  std::vector<int64_t> padded_dims;
  std::vector<int64_t> strides;       // outer strides, elements
  std::vector<int64_t> inner_blks;    // outermost first
  std::vector<int64_t> inner_idxs;
  int64_t offset0 = 0;
  int32_t data_type = 0;
  int32_t groups = 1;
};

// Decodes a blob and checks it against the tensor it describes: `sizes`
// (the torch tensor's), `dtype`, and `data_bytes` (what the constant holds).
// `what` names the caller and the constant in errors.
OnednnBlockedDesc decode_onednn_md(std::span<const uint8_t> blob, std::span<const int64_t> sizes,
                                   ScalarType dtype, int64_t data_bytes, const std::string& what);

// Writes the elements of `src` (blocked per `desc`) into `dst`, laid out by
// `dst_strides` (elements) over the desc's dims in torch's order (a grouped
// conv's [g, O/g, ...] is torch's [O, ...]: dims 0 and 1 merged).
void unpack_onednn_blocked(const OnednnBlockedDesc& desc, const void* src, void* dst,
                           std::span<const int64_t> dst_strides, size_t itemsize);

// The source of a _mkldnn constant's deferred storage (Note [Deferred
// storages] in core/storage.h): the model's blocked bytes, their descriptor,
// and the plain layout the storage holds once made (torch's sizes, `strides`
// in elements, dense). fill() unpacks into that layout; the oneDNN ops read
// data() and desc() instead while the storage is not made.
class OnednnBlockedSource final : public StorageSource {
 public:
  OnednnBlockedSource(const void* data, OnednnBlockedDesc desc, std::vector<int64_t> sizes,
                      std::vector<int64_t> strides, ScalarType dtype)
      : data_(data), desc_(std::move(desc)), sizes_(std::move(sizes)),
        strides_(std::move(strides)), dtype_(dtype) {}
  void fill(void* dst, size_t nbytes) const override;
  const void* data() const { return data_; }
  const OnednnBlockedDesc& desc() const { return desc_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  ScalarType dtype() const { return dtype_; }

 private:
  const void* data_;
  OnednnBlockedDesc desc_;
  std::vector<int64_t> sizes_, strides_;
  ScalarType dtype_;
};

}  // namespace aotrt
