#include "core/onednn_md.h"

#include <cstring>

#include "core/error.h"
#include "core/view.h"

namespace aotrt {
namespace {

// Offsets in the blob: Note [Serialized oneDNN descriptors].
constexpr size_t kBlobSize = 772;
constexpr int kMaxDims = 12;
constexpr size_t kVersion = 0, kNdims = 4, kDims = 8, kDataType = 104, kPaddedDims = 112,
                 kPaddedOffsets = 208, kOffset0 = 304, kFormatKind = 312, kStrides = 320,
                 kInnerNblks = 416, kInnerBlks = 424, kInnerIdxs = 520, kExtraFlags = 640,
                 kGroups = 768;
constexpr int32_t kFormatBlocked = 2;

template <typename T>
T read_at(std::span<const uint8_t> blob, size_t at) {
  T v;
  std::memcpy(&v, blob.data() + at, sizeof(T));
  return v;
}

std::vector<int64_t> read_dims(std::span<const uint8_t> blob, size_t at, int n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = read_at<int64_t>(blob, at + 8 * i);
  return v;
}

// oneDNN's data_type codes for the dtypes a frozen constant may have.
int32_t onednn_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 1;
    case ScalarType::BFloat16: return 2;
    case ScalarType::Float32: return 3;
    case ScalarType::Int32: return 4;
    case ScalarType::Int8: return 5;
    case ScalarType::UInt8: return 6;
    default: return -1;
  }
}

std::string dims_text(std::span<const int64_t> d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Product of the inner blocks of each dim.
std::vector<int64_t> block_of_dim(const OnednnBlockedDesc& d, const char* what) {
  std::vector<int64_t> b(d.dims.size(), 1);
  for (size_t j = 0; j < d.inner_blks.size(); ++j) {
    int64_t& dim_block = b[static_cast<size_t>(d.inner_idxs[j])];
    dim_block = checked_mul(dim_block, d.inner_blks[j], what);
  }
  return b;
}

}  // namespace

OnednnBlockedDesc decode_onednn_md(std::span<const uint8_t> blob, std::span<const int64_t> sizes,
                                   ScalarType dtype, int64_t data_bytes, const std::string& what) {
  AOTRT_CHECK(blob.size() == kBlobSize, kUnsupported, what, ": its oneDNN descriptor has ",
              blob.size(), " bytes; aotrt reads the ", kBlobSize,
              "-byte blobs of torch 2.13's oneDNN 3.x (Note [Serialized oneDNN descriptors])");
  const auto version = read_at<int32_t>(blob, kVersion);
  AOTRT_CHECK(version == 1, kUnsupported, what, ": its oneDNN descriptor starts with ", version,
              ", not 1: a layout aotrt does not know");
  const auto ndims = read_at<int32_t>(blob, kNdims);
  AOTRT_CHECK(ndims >= 1 && ndims <= kMaxDims, kInvalidArgument, what,
              ": its oneDNN descriptor has ", ndims, " dims (1 to 12 are possible)");
  const auto kind = read_at<int32_t>(blob, kFormatKind);
  AOTRT_CHECK(kind == kFormatBlocked, kUnsupported, what, ": its oneDNN descriptor has format kind ",
              kind, "; aotrt reads the blocked kind (2) only");
  // Note [Serialized oneDNN descriptors]: int8 compensation data follows the
  // elements and is not read; other flags change the elements' meaning.
  const auto flags = read_at<uint64_t>(blob, kExtraFlags);
  constexpr uint64_t kCompensationS8S8 = 0x1, kCompensationAsymmetricSrc = 0x8;
  const bool compensation_only =
      dtype == ScalarType::Int8 && (flags & ~(kCompensationS8S8 | kCompensationAsymmetricSrc)) == 0;
  AOTRT_CHECK(flags == 0 || compensation_only, kUnsupported, what,
              ": its oneDNN descriptor has extra flags ", flags,
              " (scale adjustment or RNN compensation, or compensation on a ", dtype_name(dtype),
              " constant), which aotrt does not serve");
  OnednnBlockedDesc d;
  d.dims = read_dims(blob, kDims, ndims);
  d.padded_dims = read_dims(blob, kPaddedDims, ndims);
  d.strides = read_dims(blob, kStrides, ndims);
  d.offset0 = read_at<int64_t>(blob, kOffset0);
  d.data_type = read_at<int32_t>(blob, kDataType);
  d.groups = read_at<int32_t>(blob, kGroups);
  const auto nblks = read_at<int32_t>(blob, kInnerNblks);
  AOTRT_CHECK(nblks >= 0 && nblks <= kMaxDims, kInvalidArgument, what,
              ": its oneDNN descriptor has ", nblks, " inner blocks");
  d.inner_blks = read_dims(blob, kInnerBlks, nblks);
  d.inner_idxs = read_dims(blob, kInnerIdxs, nblks);
  for (int64_t off : read_dims(blob, kPaddedOffsets, ndims)) {
    AOTRT_CHECK(off == 0, kUnsupported, what,
                ": its oneDNN descriptor has nonzero padded offsets (a sub-memory)");
  }
  AOTRT_CHECK(d.data_type == onednn_type(dtype), kInvalidArgument, what,
              ": its oneDNN descriptor has data type ", d.data_type, " but the constant is ",
              dtype_name(dtype));
  // The dims are the tensor's, or a grouped conv's [g, O/g, I/g, ...].
  const size_t n = sizes.size();
  bool match = d.dims.size() == n && std::equal(sizes.begin(), sizes.end(), d.dims.begin());
  if (!match && d.dims.size() == n + 1 && n >= 1 && d.groups > 1 && d.dims[0] == d.groups) {
    int64_t merged = 0;
    match = !__builtin_mul_overflow(d.dims[0], d.dims[1], &merged) && merged == sizes[0] &&
            std::equal(sizes.begin() + 1, sizes.end(), d.dims.begin() + 2);
  }
  AOTRT_CHECK(match, kInvalidArgument, what, ": its oneDNN descriptor has dims ",
              dims_text(d.dims), " (groups ", d.groups, ") but the tensor has sizes ",
              dims_text(sizes));
  for (size_t j = 0; j < d.inner_blks.size(); ++j) {
    AOTRT_CHECK(d.inner_idxs[j] >= 0 && d.inner_idxs[j] < ndims && d.inner_blks[j] >= 1,
                kInvalidArgument, what, ": its oneDNN descriptor has inner block ", j, " of size ",
                d.inner_blks[j], " on dim ", d.inner_idxs[j]);
  }
  const std::vector<int64_t> block = block_of_dim(d, what.c_str());
  // The last element's offset must lie inside the data.
  const char* w = what.c_str();
  int64_t last = d.offset0, inner = 1;
  AOTRT_CHECK(d.offset0 >= 0, kInvalidArgument, what, ": offset0 ", d.offset0, " is negative");
  for (size_t k = 0; k < d.dims.size(); ++k) {
    AOTRT_CHECK(d.dims[k] >= 1 && d.padded_dims[k] >= d.dims[k] && d.padded_dims[k] % block[k] == 0 &&
                    d.strides[k] >= 0,
                kInvalidArgument, what, ": its oneDNN descriptor's dim ", k, " (size ", d.dims[k],
                ", padded ", d.padded_dims[k], ", block ", block[k], ", stride ", d.strides[k],
                ") is not a blocked layout");
    last = checked_add(last, checked_mul(d.padded_dims[k] / block[k] - 1, d.strides[k], w), w);
    inner = checked_mul(inner, block[k], w);
  }
  last = checked_add(last, inner - 1, w);
  const int64_t itemsize = static_cast<int64_t>(element_size(dtype));
  AOTRT_CHECK(last < data_bytes / itemsize, kInvalidArgument, what,
              ": its oneDNN descriptor reaches element ", last, " but the constant holds ",
              data_bytes / itemsize);
  return d;
}

namespace {

// dst[to[i]] = src[from[i]] along the innermost dim, `T` an element's bytes.
template <typename T>
void copy_row(const char* s, char* o, int64_t from0, int64_t to0, const int64_t* from,
              const int64_t* to, int64_t n) {
  const auto* st = reinterpret_cast<const T*>(s);
  auto* ot = reinterpret_cast<T*>(o);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, st + from0 + from[i], sizeof(T));
    std::memcpy(ot + to0 + to[i], &v, sizeof(T));
  }
}

}  // namespace

// An element's source offset (Note [Serialized oneDNN descriptors]) is offset0
// plus one term per dim that depends on that dim's index alone (its outer
// block times the stride, and its place in each inner block of the dim); so
// is its destination offset. Both are tabled per dim once, and the copy walks
// the dims adding table entries: 25 M elements of a resnet50's weights took
// 0.7 s at load with the offsets worked out per element, divisions included.
void unpack_onednn_blocked(const OnednnBlockedDesc& d, const void* src, void* dst,
                           std::span<const int64_t> dst_strides, size_t itemsize) {
  const size_t nd = d.dims.size();
  if (nd == 0) return;
  const bool grouped = nd == dst_strides.size() + 1;
  const std::vector<int64_t> block = block_of_dim(d, "unpack_onednn_blocked");
  // Per dim k and index i: the source and destination offset terms.
  std::vector<std::vector<int64_t>> from(nd), to(nd);
  for (size_t k = 0; k < nd; ++k) {
    from[k].resize(static_cast<size_t>(d.dims[k]));
    to[k].resize(static_cast<size_t>(d.dims[k]));
    int64_t to_stride;
    if (grouped) {
      to_stride = k == 0 ? d.dims[1] * dst_strides[0] : dst_strides[k == 1 ? 0 : k - 1];
    } else {
      to_stride = dst_strides[k];
    }
    for (int64_t i = 0; i < d.dims[k]; ++i) {
      int64_t f = i / block[k] * d.strides[k], cur = 1, stride = 1;
      for (size_t j = d.inner_blks.size(); j-- > 0;) {
        if (static_cast<size_t>(d.inner_idxs[j]) == k) {
          f += (i % block[k]) / cur % d.inner_blks[j] * stride;
          cur *= d.inner_blks[j];
        }
        stride *= d.inner_blks[j];
      }
      from[k][static_cast<size_t>(i)] = f;
      to[k][static_cast<size_t>(i)] = i * to_stride;
    }
  }
  const auto* s = static_cast<const char*>(src);
  auto* o = static_cast<char*>(dst);
  const size_t last = nd - 1;
  const int64_t n = d.dims[last];
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    int64_t from0 = d.offset0, to0 = 0;
    for (size_t k = 0; k < last; ++k) {
      from0 += from[k][static_cast<size_t>(idx[k])];
      to0 += to[k][static_cast<size_t>(idx[k])];
    }
    const int64_t* fl = from[last].data();
    const int64_t* tl = to[last].data();
    switch (itemsize) {
      case 1: copy_row<uint8_t>(s, o, from0, to0, fl, tl, n); break;
      case 2: copy_row<uint16_t>(s, o, from0, to0, fl, tl, n); break;
      case 4: copy_row<uint32_t>(s, o, from0, to0, fl, tl, n); break;
      case 8: copy_row<uint64_t>(s, o, from0, to0, fl, tl, n); break;
      default:
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(o + (to0 + tl[i]) * static_cast<int64_t>(itemsize),
                      s + (from0 + fl[i]) * static_cast<int64_t>(itemsize), itemsize);
        }
    }
    size_t k = last;
    while (k > 0) {
      --k;
      if (++idx[k] < d.dims[k]) break;
      idx[k] = 0;
      if (k == 0) return;
    }
    if (last == 0) return;
  }
}

void OnednnBlockedSource::fill(void* dst, size_t nbytes) const {
  int64_t numel = 1;
  for (int64_t v : sizes_) numel *= v;
  AOTRT_CHECK(static_cast<size_t>(numel) * element_size(dtype_) == nbytes, kInternal,
              "OnednnBlockedSource::fill: ", nbytes, " bytes for ", numel, " elements");
  if (numel > 0) unpack_onednn_blocked(desc_, data_, dst, strides_, element_size(dtype_));
}

}  // namespace aotrt
