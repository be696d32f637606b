"""aotrt's int4/int8 matmul and decode attention kernels against ATen's, on the GPU,
on the same torch CUDA tensors (aotrt's C shims called through ctypes on their memory).

Correctness (each line PASS or FAIL; the exit status is 1 if any fails):
  * _weight_int4pack_mm (tinygemm layout packed by torch's own
    _convert_weight_to_int4pack): on data whose products and sums are exact in float32
    aotrt must equal ATen bit for bit; on random data |aotrt - ATen| <= 2 K 2^-23
    sum_k |a_k w_k| + 2^-8 (|aotrt| + |ATen|) (Note [Int4 matmul kernels]; w is ATen's
    own dequantized weight, read by multiplying the identity).
  * _weight_int8pack_mm in float32, bfloat16, float16: exact data bit for bit, random
    data within 2 (K + 1) 2^-24 sum |a w s| + one rounding of the dtype each.
  * _int_mm: bit for bit with ATen (M > 16, which ATen serves) and with an int64 product
    on the CPU (M <= 16, which ATen refuses).
  * decode attention (_scaled_dot_product_cudnn_attention in bf16, the efficient one in
    fp32): against F.scaled_dot_product_attention with the same boolean static-cache
    mask and GQA, within bf16's (fp32's) tolerance.
Timing (GPU time per call, CUDA events around CUDA-graph replays for ATen; aotrt's
own graph-replay times come from `aotrt_quant_bench`'s table, given with --bench, and
the table joins them per shape: for int4 aotrt's auto choice beside its gemv (M <= 32)
and decode (M <= 64) kernels, with the ratio ATen / auto).

Usage: python3 bench/quant_gpu.py --lib build-gpu/libaotrt.so [--bench bench.md]
       [--iters 20] [--skip-timing] [--only int4,int8,int_mm,attention]
"""
from __future__ import annotations

import argparse
import ctypes
import math
import re
import sys

import torch
import torch.nn.functional as F

P, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
DTYPE_CODE = {torch.int8: 1, torch.int32: 3, torch.int64: 4, torch.float16: 5,
              torch.float32: 6, torch.bfloat16: 15, torch.uint8: 0}
FAILED = []


class Aotrt:
    """aotrt's C ABI over torch tensors' memory (borrowed: aotrt never frees it)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)  # local: its aoti_* names stay out of torch's way
        self.lib.aotrt_last_error.restype = ctypes.c_char_p
        for name in ("aoti_torch_create_tensor_from_blob", "aoti_torch_delete_tensor_object",
                     "aoti_torch_get_data_ptr", "aoti_torch_get_sizes", "aoti_torch_get_strides",
                     "aoti_torch_get_dim", "aoti_torch_get_dtype", "aoti_torch_copy_",
                     "aoti_torch_cuda__weight_int4pack_mm", "aoti_torch_cuda__weight_int8pack_mm",
                     "aoti_torch_cuda__int_mm_out",
                     "aoti_torch_cuda__scaled_dot_product_cudnn_attention",
                     "aoti_torch_cuda__scaled_dot_product_efficient_attention"):
            getattr(self.lib, name).restype = ctypes.c_int32

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: {self.lib.aotrt_last_error().decode()}")

    def handle(self, t: torch.Tensor):
        h = P()
        n = t.dim()
        sizes = (I64 * max(n, 1))(*t.shape)
        strides = (I64 * max(n, 1))(*t.stride())
        self.check(self.lib.aoti_torch_create_tensor_from_blob(
            P(t.data_ptr()), I64(n), sizes, strides, I64(0), I32(DTYPE_CODE[t.dtype]), I32(1),
            I32(t.device.index or 0), ctypes.byref(h)), "create_tensor_from_blob")
        return h

    def free(self, *hs):
        for h in hs:
            if h:
                self.lib.aoti_torch_delete_tensor_object(h)

    def to_torch(self, h, like_dtype):
        """A dense torch copy of aotrt's output tensor (aoti_torch_copy_ reads its strides)."""
        dim = I64()
        self.lib.aoti_torch_get_dim(h, ctypes.byref(dim))
        sp = ctypes.POINTER(I64)()
        self.lib.aoti_torch_get_sizes(h, ctypes.byref(sp))
        out = torch.empty([sp[i] for i in range(dim.value)], dtype=like_dtype, device="cuda")
        ho = self.handle(out)
        try:
            self.check(self.lib.aoti_torch_copy_(ho, h, I32(0)), "copy_")
            torch.cuda.synchronize()
        finally:
            self.free(ho)
        return out

    def int4_mm(self, a, b, group, sz):
        ha, hb, hs, out = self.handle(a), self.handle(b), self.handle(sz), P()
        try:
            self.check(self.lib.aoti_torch_cuda__weight_int4pack_mm(ha, hb, I64(group), hs,
                                                                    ctypes.byref(out)), "int4")
            return self.to_torch(out, torch.bfloat16)
        finally:
            self.free(ha, hb, hs, out)

    def int8_mm(self, a, w, s):
        ha, hw, hs, out = self.handle(a), self.handle(w), self.handle(s), P()
        try:
            self.check(self.lib.aoti_torch_cuda__weight_int8pack_mm(ha, hw, hs, ctypes.byref(out)),
                       "int8")
            return self.to_torch(out, a.dtype)
        finally:
            self.free(ha, hw, hs, out)

    def int_mm(self, a, b):
        out = torch.empty(a.shape[0], b.shape[1], dtype=torch.int32, device="cuda")
        ho, ha, hb = self.handle(out), self.handle(a), self.handle(b)
        try:
            self.check(self.lib.aoti_torch_cuda__int_mm_out(ho, ha, hb), "_int_mm_out")
            torch.cuda.synchronize()
            return out
        finally:
            self.free(ho, ha, hb)

    def attention(self, q, k, v, bias):
        hq, hk, hv, hb = self.handle(q), self.handle(k), self.handle(v), self.handle(bias)
        outs = [P() for _ in range(9)]
        mq, mk = I64(), I64()
        bias_p = ctypes.byref(hb)
        try:
            if q.dtype == torch.float32:
                self.check(self.lib.aoti_torch_cuda__scaled_dot_product_efficient_attention(
                    hq, hk, hv, bias_p, I32(0), ctypes.c_double(0.0), I32(0), None,
                    *[ctypes.byref(o) for o in outs[:4]]), "efficient attention")
            else:
                self.check(self.lib.aoti_torch_cuda__scaled_dot_product_cudnn_attention(
                    hq, hk, hv, bias_p, I32(0), ctypes.c_double(0.0), I32(0), I32(0), None,
                    *[ctypes.byref(o) for o in outs[:4]], ctypes.byref(mq), ctypes.byref(mk),
                    *[ctypes.byref(o) for o in outs[6:9]]), "cudnn attention")
            return self.to_torch(outs[0], q.dtype)
        finally:
            self.free(hq, hk, hv, hb, *outs)


def report(ok, what):
    print(f"{'PASS' if ok else 'FAIL'}  {what}")
    if not ok:
        FAILED.append(what)


def uint8_weight(q):
    return ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)


def check_int4(rt):
    print("\n## _weight_int4pack_mm against ATen (tinygemm)")
    g = torch.Generator(device="cuda").manual_seed(0)
    for (M, N, K, group, inner) in [(1, 4096, 4096, 128, 8), (3, 4096, 4096, 128, 8),
                                    (16, 1024, 4096, 64, 8), (17, 4096, 4096, 128, 8),
                                    (64, 4096, 4096, 128, 8), (200, 1032, 1024, 32, 4),
                                    (5, 520, 512, 256, 2), (1, 14336, 4096, 128, 8),
                                    (1, 4096, 14336, 128, 8), (8, 4096, 4096, 128, 8),
                                    (1, 256, 2048, 32, 8), (2, 2048, 5632, 64, 4),
                                    (12, 2048, 2048, 32, 8)]:
        q = torch.randint(0, 16, (N, K), device="cuda", generator=g, dtype=torch.int32)
        packed = torch.ops.aten._convert_weight_to_int4pack(uint8_weight(q), inner)
        for exact in (True, False):
            if exact:
                scale = torch.pow(2.0, torch.randint(-2, 2, (K // group, N), device="cuda",
                                                     generator=g).float())
                zero = torch.randint(-4, 5, (K // group, N), device="cuda", generator=g).float() / 4
                a = (torch.randint(-8, 9, (M, K), device="cuda", generator=g).float() / 8)
            else:
                scale = torch.rand(K // group, N, device="cuda", generator=g) * 0.05 + 0.005
                zero = (torch.rand(K // group, N, device="cuda", generator=g) - 0.5) * 0.1
                a = torch.randn(M, K, device="cuda", generator=g)
            sz = torch.stack([scale, zero], -1).to(torch.bfloat16).contiguous()
            a = a.to(torch.bfloat16)
            want = torch.ops.aten._weight_int4pack_mm(a, packed, group, sz)
            got = rt.int4_mm(a, packed, group, sz)
            what = f"int4 M {M} N {N} K {K} group {group} innerKTiles {inner}, " + \
                   ("exact data: bit for bit" if exact else "random data: within the bound")
            if exact:
                report(torch.equal(got, want), what)
            else:
                eye = torch.eye(K, device="cuda", dtype=torch.bfloat16)
                w_t = torch.ops.aten._weight_int4pack_mm(eye, packed, group, sz).double()  # [K, N]
                s = a.double().abs() @ w_t.abs()
                x, y = got.double(), want.double()
                bound = 2 * K * 2.0 ** -23 * s + 2.0 ** -8 * (x.abs() + y.abs())
                worst = ((x - y).abs() / bound.clamp_min(1e-30)).max().item()
                report(bool(((x - y).abs() <= bound).all()), f"{what} (worst {worst:.3f} of it)")


def check_int8(rt):
    print("\n## _weight_int8pack_mm against ATen")
    g = torch.Generator(device="cuda").manual_seed(1)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        unit = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[dtype]
        for (M, N, K) in [(1, 4096, 4096), (4, 1000, 512), (16, 4096, 4096), (17, 64, 48),
                          (64, 4096, 4096), (3, 24, 37)]:
            w = torch.randint(-128, 128, (N, K), device="cuda", generator=g, dtype=torch.int32).to(torch.int8)
            for exact in (True, False):
                if exact:
                    a = (torch.randint(-8, 9, (M, K), device="cuda", generator=g).float() / 8).to(dtype)
                    s = torch.pow(2.0, torch.randint(-8, -3, (N,), device="cuda", generator=g).float()).to(dtype)
                else:
                    a = torch.randn(M, K, device="cuda", generator=g).to(dtype)
                    s = (torch.rand(N, device="cuda", generator=g) * 0.01 + 0.001).to(dtype)
                want = torch.ops.aten._weight_int8pack_mm(a, w, s)
                got = rt.int8_mm(a, w, s)
                what = f"int8pack {dtype} M {M} N {N} K {K}, " + ("exact data: bit for bit" if exact else "random data: within the bound")
                if want.dtype != dtype:  # an older ATen returns float32: rounded once here
                    what += f" (this ATen returns {want.dtype}: rounded to {dtype})"
                    want = want.to(dtype)
                if exact:
                    report(torch.equal(got, want), what)
                else:
                    absum = (a.double().abs() @ w.double().abs().T) * s.double().abs()
                    x, y = got.double(), want.double()
                    bound = 2 * (K + 1) * 2.0 ** -24 * absum + unit * (x.abs() + y.abs())
                    report(bool(((x - y).abs() <= bound).all()), what)


def check_int_mm(rt):
    print("\n## _int_mm against ATen")
    g = torch.Generator(device="cuda").manual_seed(2)
    for (M, N, K) in [(1, 4096, 4096), (16, 4096, 4096), (17, 4096, 4096), (64, 1024, 4096),
                      (256, 4096, 4096), (5, 40, 48)]:
        a = torch.randint(-128, 128, (M, K), device="cuda", generator=g, dtype=torch.int32).to(torch.int8)
        w = torch.randint(-128, 128, (N, K), device="cuda", generator=g, dtype=torch.int32).to(torch.int8)
        got = rt.int_mm(a, w.t())
        if M > 16:
            want = torch._int_mm(a, w.t())
            src = "ATen"
        else:
            want = (a.cpu().long() @ w.cpu().long().T).to(torch.int32).cuda()  # wraps as int32
            src = "an int64 product on the CPU (ATen refuses M <= 16)"
        report(torch.equal(got, want), f"_int_mm M {M} N {N} K {K} (mat2 = w.t()): bit for bit with {src}")


def static_cache(B, Lq, Lk, filled, device):
    """True where query i of batch b sees key j: j < filled[b] + i (a static cache)."""
    j = torch.arange(Lk, device=device)
    i = torch.arange(Lq, device=device)
    return j[None, None, None, :] < (torch.tensor(filled, device=device)[:, None, None, None] + i[None, None, :, None])


def check_attention(rt):
    print("\n## Decode attention against F.scaled_dot_product_attention")
    g = torch.Generator(device="cuda").manual_seed(3)
    for dtype in (torch.bfloat16, torch.float32):
        for (B, H, Hk, Lq, Lk, E, filled) in [(1, 32, 8, 1, 4096, 128, [1000]),
                                              (2, 32, 8, 8, 2048, 128, [700, 2041]),
                                              (1, 8, 8, 1, 32768, 64, [20000]),
                                              (1, 16, 2, 3, 777, 256, [600])]:
            q = torch.randn(B, H, Lq, E, device="cuda", generator=g, dtype=dtype)
            k = torch.randn(B, Hk, Lk, E, device="cuda", generator=g, dtype=dtype)
            v = torch.randn(B, Hk, Lk, E, device="cuda", generator=g, dtype=dtype)
            keep = static_cache(B, Lq, Lk, filled, "cuda")
            bias = torch.zeros(B, 1, Lq, Lk, device="cuda", dtype=dtype).masked_fill(~keep, float("-inf"))
            want = F.scaled_dot_product_attention(q.double(), k.repeat_interleave(H // Hk, 1).double(),
                                                  v.repeat_interleave(H // Hk, 1).double(),
                                                  attn_mask=keep)
            got = rt.attention(q, k, v, bias)
            tol = (2e-2 if dtype == torch.bfloat16 else 1e-4)
            err = (got.double() - want).abs().max().item()
            report(err <= tol, f"attention {dtype} B {B} H {H} over {Hk} Lq {Lq} Lk {Lk} (filled {filled}) "
                               f"E {E}: max error {err:.2e} (tolerance {tol})")


def graph_time_us(fn, iters):
    """GPU microseconds per call of fn, from replays of a CUDA graph of 10 calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(10):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000 / (iters * 10)


def aten_times(iters, families):
    """ATen's GPU time per shape of `families` (int4, attention), keyed as
    aotrt_quant_bench's rows are."""
    g = torch.Generator(device="cuda").manual_seed(4)
    times = {}
    if "int4" in families:
        times |= int4_times(iters, g)
    if "attention" in families:
        times |= attention_times(iters, g)
    return times


def int4_times(iters, g):
    times = {}
    for (M, N, K) in [(1, 4096, 4096), (1, 14336, 4096), (1, 4096, 14336), (4, 4096, 4096),
                      (8, 4096, 4096), (16, 4096, 4096), (17, 4096, 4096), (32, 4096, 4096),
                      (64, 4096, 4096), (128, 4096, 4096), (256, 4096, 4096), (1024, 4096, 4096),
                      (64, 14336, 4096), (1, 2048, 2048), (1, 256, 2048), (1, 5632, 2048),
                      (1, 2048, 5632), (1, 32000, 2048)]:
        copies = max(2, min(16, (150 << 20) // (N * K // 2)))
        ws = [torch.ops.aten._convert_weight_to_int4pack(
            torch.randint(0, 256, (N, K // 2), device="cuda", generator=g, dtype=torch.int32).to(torch.uint8), 8)
            for _ in range(copies)]
        szs = [(torch.rand(K // 128, N, 2, device="cuda", generator=g) * 0.02 + 0.01).to(torch.bfloat16)
               for _ in range(copies)]
        a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
        state = {"i": 0}

        def call():
            i = state["i"] = (state["i"] + 1) % copies
            torch.ops.aten._weight_int4pack_mm(a, ws[i], 128, szs[i])
        times[("int4", f"{M} x {N} x {K}")] = graph_time_us(call, iters)
    return times


def attention_times(iters, g):
    times = {}
    for (Lq, Lk, filled) in [(1, 1024, 1024), (1, 4096, 4096), (1, 16384, 16384), (1, 32768, 32768),
                             (1, 32768, 1024), (1, 32768, 8192), (4, 8192, 8192), (8, 8192, 8192)]:
        B, H, Hk, E = 1, 32, 8, 128
        copies = max(2, min(16, (150 << 20) // (2 * Hk * filled * E * 2)))
        ks = [torch.randn(B, Hk, Lk, E, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(copies)]
        vs = [torch.randn(B, Hk, Lk, E, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(copies)]
        q = torch.randn(B, H, Lq, E, device="cuda", generator=g, dtype=torch.bfloat16)
        keep = static_cache(B, Lq, Lk, [filled - Lq + 1], "cuda")
        state = {"i": 0}
        # As an exported Hugging Face decoder calls it: K/V repeated to H heads (repeat_kv).
        ks = [x.repeat_interleave(H // Hk, 1) for x in ks]
        vs = [x.repeat_interleave(H // Hk, 1) for x in vs]

        def attn():
            i = state["i"] = (state["i"] + 1) % copies
            F.scaled_dot_product_attention(q, ks[i], vs[i], attn_mask=keep)
        times[("attention", f"Lq {Lq}, {Lk} ({filled})")] = graph_time_us(attn, iters)
    return times


def joined_table(times, bench_path):
    """The bench's aotrt rows beside ATen's time for the same shape: what aotrt runs
    (auto; attention: its decode kernel) and, for int4, the gemv and decode kernels."""
    rows = {}
    for line in open(bench_path):
        m = re.match(r"\| (\d+ x \d+ x \d+) (auto|gemv|decode) \| ([\d.]+) \|", line)
        if m:
            rows.setdefault(("int4", m.group(1)), {})[m.group(2)] = float(m.group(3))
        m = re.match(r"\| (Lq \d+, \d+ \(\d+\)) decode kernel \| ([\d.]+) \|", line)
        if m:
            rows.setdefault(("attention", m.group(1)), {})["auto"] = float(m.group(2))
    print("\n## GPU time per call, CUDA-graph replays (aotrt from aotrt_quant_bench; ATen's "
          "attention on K/V repeated to the 32 query heads, as repeat_kv hands them over)\n")
    print("| op | shape | ATen us | aotrt us | gemv us | decode us | ATen / aotrt |\n"
          "|---|---|---|---|---|---|---|")
    for key, aten in times.items():
        ours = rows.get(key, {})
        cells = " | ".join(f"{ours[k]:.2f}" if k in ours else "-" for k in ("auto", "gemv", "decode"))
        ratio = f"{aten / ours['auto']:.2f}" if ours.get("auto") else "-"
        print(f"| {key[0]} | {key[1]} | {aten:.2f} | {cells} | {ratio} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True, help="libaotrt.so of a CUDA build")
    p.add_argument("--bench", help="aotrt_quant_bench's output, to join with ATen's times")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--only", default="int4,int8,int_mm,attention",
                   help="the families to check (and time: int4, attention), comma-separated")
    args = p.parse_args()
    families = set(args.only.split(","))
    checks = {"int4": check_int4, "int8": check_int8, "int_mm": check_int_mm, "attention": check_attention}
    if not families <= checks.keys():
        p.error(f"--only: unknown families {sorted(families - checks.keys())}")
    if not torch.cuda.is_available():
        print("quant_gpu: this torch sees no CUDA device", file=sys.stderr)
        return 2
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rt = Aotrt(args.lib)
    for check in (checks[f] for f in checks if f in families):
        try:
            check(rt)
        except Exception as e:  # a crash of one family still reports the others
            report(False, f"{check.__name__} raised {type(e).__name__}: {e}")
    if not args.skip_timing:
        times = aten_times(args.iters, families)
        if args.bench:
            joined_table(times, args.bench)
        else:
            for key, us in times.items():
                print(f"| {key[0]} | {key[1]} | {us:.2f} |")
    print(f"\n{len(FAILED)} check(s) failed" if FAILED else "\nevery check passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
