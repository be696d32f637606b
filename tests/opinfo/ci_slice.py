"""The CPU slice CI runs (tests/opinfo/test_opinfo_ci.py): op_db entries spanning the op
families aotrt serves or must serve, all RNG-free, float32, first sample each; a few of them
in other dtypes too (CI_DTYPE_CASES); and the ops the non-float32 tables sweep (DTYPE_OPS)."""

CI_OPS = [
    # pointwise
    "abs", "add", "mul", "div.no_rounding_mode", "exp", "sigmoid", "nn.functional.gelu", "where",
    "clamp", "pow",
    # reductions
    "sum", "mean", "amax", "argmax", "var", "logsumexp",
    # scans
    "cumsum", "cumprod", "logcumsumexp", "cummax",
    # sort / top-k
    "sort", "topk", "argsort", "kthvalue",
    # indexing
    "index_select", "gather", "index_put", "masked_fill", "nonzero", "searchsorted",
    # scatter
    "scatter", "scatter_add", "index_add", "scatter_reduce.sum",
    # pooling and resampling
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.interpolate.bilinear",
    # convolution
    "nn.functional.conv2d", "nn.functional.conv_transpose2d",
    # matmul
    "mm", "bmm", "addmm", "nn.functional.linear", "baddbmm",
    # views
    "transpose", "permute", "reshape", "narrow", "unfold",
    # cat / pad / layout
    "cat", "stack", "nn.functional.pad.constant", "nn.functional.pad.reflect", "flip", "roll",
    # FFT
    "fft.fft", "fft.rfft",
    # linear algebra
    "linalg.vector_norm", "linalg.cholesky", "triangular_solve", "linalg.inv", "linalg.qr",
    "linalg.svd", "linalg.eigh", "linalg.eig",
    # normalization, softmax, embedding
    "nn.functional.layer_norm", "softmax", "nn.functional.embedding",
]

# (op, dtype) rows CI runs beyond float32: per dtype a reduction, a scan, sort/top-k, an
# indexing op, a pointwise op with type promotion and a matmul where aotrt serves one (its CPU
# matmul refuses bool, as ATen's does), a convolution for float64 and int64 (the direct loop,
# Note [Direct convolution] in src/cpu/conv.cpp), so that each dtype's path through
# the shims is exercised. Rows aotrt refuses are left out: a shim that fails at run time in a
# shared package splits the package (Sweep.handle), which costs CI a compile each time.
CI_DTYPE_CASES = [
    ("sum", "bfloat16"), ("cumsum", "bfloat16"), ("topk", "bfloat16"), ("index_select", "bfloat16"),
    ("add", "bfloat16"), ("mm", "bfloat16"),
    ("sum", "float64"), ("cumprod", "float64"), ("sort", "float64"), ("gather", "float64"),
    ("div.no_rounding_mode", "float64"), ("bmm", "float64"), ("nn.functional.conv2d", "float64"),
    ("sum", "int64"), ("cumsum", "int64"), ("sort", "int64"), ("index_put", "int64"),
    ("div.no_rounding_mode", "int64"), ("mm", "int64"), ("nn.functional.conv_transpose2d", "int64"),
    ("sum", "bool"), ("cummax", "bool"), ("argsort", "bool"), ("masked_fill", "bool"),
    ("div.no_rounding_mode", "bool"),
]

# The non-float32 sweeps (docs/opinfo/cpu-torch2.13-<dtype>.md, `--slice dtypes`): the CI slice
# plus every op whose float32 row in docs/opinfo/cpu-torch2.13.md (as of this list) needs a C
# shim, leaving out the rows that need only the proxy executor (`not-run` there). Not the
# whole op_db: on this 2-core machine that would take hours per dtype.
SHIM_OPS = [
    "_segment_reduce.lengths", "_segment_reduce.offsets", "addbmm", "addmm.decomposed", "argwhere",
    "bucketize", "cdist", "cholesky_inverse", "cholesky_solve", "combinations", "cummin",
    "cumulative_trapezoid", "fft.fft2", "fft.fftn", "fft.hfft2", "fft.hfftn", "fft.ifft", "fft.ifft2",
    "fft.ifftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn", "fft.rfft2", "fft.rfftn", "geqrf",
    "grid_sampler_3d", "histc", "histogram", "histogramdd", "index_reduce.amax", "index_reduce.amin",
    "index_reduce.prod", "linalg.vander", "lu_unpack", "masked.cumprod", "masked.cumsum",
    "masked_scatter", "masked_select", "median", "mode", "msort", "nanmedian", "nanquantile",
    "nn.functional.adaptive_avg_pool3d", "nn.functional.bilinear", "nn.functional.conv1d",
    "nn.functional.conv3d", "nn.functional.conv_transpose1d", "nn.functional.conv_transpose3d",
    "nn.functional.embedding_bag", "nn.functional.linear_cross_entropy",
    "nn.functional.multi_head_attention_forward", "nn.functional.pdist", "nn.functional.rrelu",
    "nn.functional.scaled_dot_product_attention", "nonzero_static", "normal.in_place", "ormqr",
    "polar", "quantile", "stft", "tensordot", "to_sparse", "uniform", "view_as_complex",
]
DTYPE_OPS = CI_OPS + [o for o in SHIM_OPS if o not in CI_OPS]
