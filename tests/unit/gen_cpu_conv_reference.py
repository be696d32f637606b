"""Prints the torch cross-checks of tests/unit/test_cpu_conv.cpp.

Each case is built exactly as the C++ test builds it: flat buffers whose
element i is small_int(i + seed) (seed 0 input, 1000 weight, 2000 bias), seen
through as_strided views; torch 2.13's aten.convolution gives the expected
strides and values (exact: every sum is a small integer). Run:
    python3 tests/unit/gen_cpu_conv_reference.py
and paste the output at the end of test_cpu_conv.cpp. The C++ test does not
need torch.
"""
import torch


def small_int(i):
    return float((i * 7 + 3) % 11 - 5)


def extent(sizes, strides, offset):
    if any(s == 0 for s in sizes):
        return offset
    return offset + sum((s - 1) * t for s, t in zip(sizes, strides)) + 1


def view(layout, seed):
    sizes, strides, offset = layout
    n = extent(sizes, strides, offset) + 2
    buf = torch.tensor([small_int(i + seed) for i in range(n)], dtype=torch.float32)
    return torch.as_strided(buf, sizes, strides, offset)


def dense(sizes):
    strides, step = [], 1
    for s in reversed(sizes):
        strides.insert(0, step)
        step *= s
    return (sizes, strides, 0)


def cl(sizes):
    t = torch.empty(sizes).contiguous(memory_format=torch.channels_last)
    return (sizes, list(t.stride()), 0)


def cpp_layout(layout):
    sizes, strides, offset = layout
    j = lambda v: "{" + ", ".join(str(x) for x in v) + "}"
    return f"Layout{{{j(sizes)}, {j(strides)}, {offset}}}"


CASES = {
    "TransposedGroupsOutputPaddingChannelsLast": dict(
        input=cl([1, 4, 3, 3]), weight=dense([4, 2, 3, 3]), bias=dense([4]), stride=[2, 2],
        padding=[1, 1], dilation=[1, 1], transposed=True, output_padding=[1, 1], groups=2),
    "ChannelsLastChunkBatchStride0": dict(
        input=([1, 4, 5, 5], [0, 1, 40, 8], 4), weight=dense([3, 4, 3, 3]), bias=dense([3]),
        stride=[1, 1], padding=[1, 1], dilation=[1, 1], transposed=False,
        output_padding=[0, 0], groups=1),
    "Conv1dPermutedWeight": dict(
        input=dense([2, 3, 6]), weight=([4, 3, 2], [6, 1, 3], 0), bias=None, stride=[1],
        padding=[0], dilation=[1], transposed=False, output_padding=[0], groups=1),
}

for name, c in CASES.items():
    x = view(c["input"], 0)
    w = view(c["weight"], 1000)
    b = view(c["bias"], 2000) if c["bias"] else None
    y = torch.ops.aten.convolution(x, w, b, c["stride"], c["padding"], c["dilation"],
                                   c["transposed"], c["output_padding"], c["groups"])
    j = lambda v: "{" + ", ".join(str(int(x)) for x in v) + "}"
    bias = cpp_layout(c["bias"]) if c["bias"] else "std::nullopt"
    print(f"TEST(CpuConvTorchReference, {name}) {{")
    print(f"  const ConvCase c{{{cpp_layout(c['input'])},")
    print(f"                  {cpp_layout(c['weight'])},")
    print(f"                  {bias},")
    print(f"                  {j(c['stride'])}, {j(c['padding'])}, {j(c['dilation'])}, "
          f"{'true' if c['transposed'] else 'false'}, {j(c['output_padding'])}, {c['groups']}}};")
    print("  std::vector<int64_t> strides;")
    print("  const std::vector<float> got = run_small_int(c, &strides);")
    print(f"  EXPECT_EQ(strides, (std::vector<int64_t>{j(y.stride())}));")
    vals = y.contiguous().flatten().tolist()
    assert all(v == int(v) for v in vals)
    lines, line = [], "     "
    for v in vals:
        item = f" {int(v)},"
        if len(line) + len(item) > 96:
            lines.append(line)
            line = "     "
        line += item
    lines.append(line)
    print("  const std::vector<float> want{")
    print("\n".join(lines))
    print("  };")
    print("  EXPECT_EQ(got, want);")
    print("}")
    print()
