"""The CPU slice CI runs (tests/opinfo/test_opinfo_ci.py): op_db entries spanning the op
families aotrt serves or must serve, all RNG-free, float32, first sample each."""

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
    "linalg.vector_norm", "linalg.cholesky", "triangular_solve", "linalg.inv",
    # normalization, softmax, embedding
    "nn.functional.layer_norm", "softmax", "nn.functional.embedding",
]
