"""The random family on the CPU, end to end (Note [Random streams] in src/ops/random.h).

aotrt's Philox stream is not torch's, so values are not compared bitwise: each case checks
what a generator must get right, on packages torch really compiled:
- shapes and dtypes equal eager's;
- statistics: the sample mean and variance of 2^17 draws within 6 standard errors of the
  distribution's (a false failure about once in 10^8 runs), ranges and supports exact;
- determinism: two runs in fresh processes give identical outputs (same default seed),
  while two draws inside one run differ;
- randperm is a permutation; randint covers its whole range;
- multinomial (through the proxy executor, aten::multinomial): category frequencies within
  6 standard errors of the probabilities, a zero-weight category never drawn, the samples
  of a row without replacement distinct; torch.normal(mean, std) and normal(number, std)
  lower to prims::normal (a standard draw that the package scales and shifts).
With inductor's default `fallback_random=False`, the model draws its own Philox numbers in
its kernels from seeds made by aoti_torch_cpu_randint_low_out; `fallback_random=True`
calls aotrt's rand/randn/randint/randperm/bernoulli shims for every draw.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from one_op import Case, cache_dir, export_all, extern_targets, outputs, run_aotrt, shims

N = 1 << 17


def draws(x):
    return (
        torch.rand(N, 1),
        torch.randn(N, 1),
        torch.rand(N, 1, dtype=torch.float64),
        torch.randint(-3, 5, (N,)),
        torch.randperm(1000),
        torch.rand_like(x),
        torch.randn(N, 1),  # a second draw: must differ from the first
    )


def bernoulli_exp(p):
    return (torch.bernoulli(p), torch.empty(N).exponential_(2.0), torch.empty(N).uniform_(-2, 3),
            torch.empty(N).bernoulli_(0.75), torch.empty(N).bernoulli_(p))


def dropout_seed(x):
    return (torch.nn.functional.dropout(x, 0.25, training=True),)


def multinomial_normal(p, rows, mean, std):
    return (torch.multinomial(p, N, replacement=True),
            torch.multinomial(rows, 3, replacement=False),
            torch.normal(mean, std),
            torch.normal(2.0, std))


X = torch.zeros(256, 512)
PROBS = torch.tensor([0.5, 0.0, 0.2, 0.3])
ROWS = torch.tensor([[1.0, 0.0, 4.0, 2.0, 3.0]]).repeat(4096, 1)  # unnormalised weights
P = torch.full((N,), 0.3)
def dropout_fallback(x):
    return (torch.nn.functional.dropout(x, 0.25, training=True),)


CASES = [
    Case("draws_fallback", draws, [X], {"fallback_random": True}),
    Case("draws_inductor", draws, [X]),
    Case("bernoulli_exp_fallback", bernoulli_exp, [P], {"fallback_random": True}),
    Case("dropout_inductor", dropout_seed, [torch.ones(512, 256)]),
    Case("dropout_fallback", dropout_fallback, [torch.ones(512, 256)], {"fallback_random": True}),
    Case("multinomial_normal", multinomial_normal,
         [PROBS, ROWS, torch.linspace(-3, 3, N), torch.linspace(0.5, 2, N)]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES, cache_dir(tmp_path_factory, "ops_random"))


def _run(aotrt_bin, pkg, inputs, work):
    proc = run_aotrt(aotrt_bin, pkg, inputs, work)
    assert proc.returncode == 0, proc.stderr
    return outputs(work)


def _moments(a, mean, var, what):
    a = a.astype(np.float64).ravel()
    n = a.size
    se_mean = math.sqrt(var / n)
    assert abs(a.mean() - mean) <= 6 * se_mean, f"{what}: mean {a.mean()} vs {mean}"
    # Var of the sample variance ~ (mu4 - var^2)/n; 9 var^2 bounds mu4 - var^2 for these
    # (the exponential's is 8 var^2, the others' less).
    se_var = math.sqrt(9 * var * var / n)
    assert abs(a.var() - var) <= 6 * se_var, f"{what}: variance {a.var()} vs {var}"


@pytest.mark.parametrize("name", ["draws_fallback", "draws_inductor"])
def test_draws(aotrt_bin, packages, tmp_path, name):
    case = next(c for c in CASES if c.name == name)
    pkg = packages[name]
    imported = shims(pkg)
    if name == "draws_fallback":
        for s in ("aoti_torch_cpu_rand", "aoti_torch_cpu_randn", "aoti_torch_cpu_randint_low",
                  "aoti_torch_cpu_randperm"):
            assert s in imported, imported
    else:
        assert "aoti_torch_cpu_randint_low_out" in imported, imported
    got = _run(aotrt_bin, pkg, case.inputs, tmp_path / "a")
    want = case.fn(*case.inputs)
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    assert [g.dtype for g in got] == [w.numpy().dtype for w in want]
    u, z, u64, ri, perm, like, z2 = got
    _moments(u, 0.5, 1 / 12, "rand")
    assert u.min() >= 0 and u.max() < 1
    _moments(z, 0.0, 1.0, "randn")
    _moments(u64, 0.5, 1 / 12, "rand float64")
    assert ri.min() == -3 and ri.max() == 4 and len(np.unique(ri)) == 8
    _moments(ri, 0.5, (8 * 8 - 1) / 12, "randint")
    assert sorted(perm.tolist()) == list(range(1000)) and perm.tolist() != list(range(1000))
    _moments(like, 0.5, 1 / 12, "rand_like")
    assert not np.array_equal(z, z2), "two draws of one run are equal"
    # The same package run again in a fresh process: the same numbers.
    again = _run(aotrt_bin, pkg, case.inputs, tmp_path / "b")
    for g, h in zip(got, again):
        np.testing.assert_array_equal(g, h)


def test_bernoulli_exponential_uniform(aotrt_bin, packages, tmp_path):
    case = next(c for c in CASES if c.name == "bernoulli_exp_fallback")
    imported = shims(packages[case.name])
    for s in ("aoti_torch_cpu_exponential", "aoti_torch_cpu_uniform"):
        assert s in imported, imported
    got = _run(aotrt_bin, packages[case.name], case.inputs, tmp_path)
    b, e, u, b_float, b_tensor = got
    for bb, p in ((b_float, 0.75), (b_tensor, 0.3)):
        assert set(np.unique(bb).tolist()) <= {0.0, 1.0}
        _moments(bb, p, p * (1 - p), f"bernoulli_ ({imported})")
    assert set(np.unique(b).tolist()) <= {0.0, 1.0}
    _moments(b, 0.3, 0.3 * 0.7, f"bernoulli ({imported})")
    _moments(e, 0.5, 0.25, "exponential(2)")
    assert e.min() >= 0
    _moments(u, 0.5, 25 / 12, "uniform(-2, 3)")
    assert u.min() >= -2 and u.max() < 3


@pytest.mark.parametrize("name", ["dropout_inductor", "dropout_fallback"])
def test_dropout_keeps_three_quarters_scaled(aotrt_bin, packages, tmp_path, name):
    case = next(c for c in CASES if c.name == name)
    if name == "dropout_fallback":
        assert "aoti_torch_cpu_native_dropout" in shims(packages[name])
    (y,) = _run(aotrt_bin, packages[case.name], case.inputs, tmp_path)
    values = np.unique(y)
    assert all(v == 0 or np.isclose(v, 4 / 3, rtol=1e-6) for v in values), values
    kept = (y != 0).astype(np.float64)
    _moments(kept, 0.75, 0.75 * 0.25, "dropout keep mask")


def test_multinomial_and_normal(aotrt_bin, packages, tmp_path):
    case = next(c for c in CASES if c.name == "multinomial_normal")
    pkg = packages[case.name]
    used = extern_targets(pkg)
    assert "aten::multinomial" in used and "prims::normal" in used, used
    got = _run(aotrt_bin, pkg, case.inputs, tmp_path / "a")
    want = case.fn(*case.inputs)
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    assert [g.dtype for g in got] == [w.numpy().dtype for w in want]
    drawn, rows, z, z_number = got
    probs = PROBS.numpy()
    freq = np.bincount(drawn, minlength=len(probs)) / drawn.size
    assert freq[1] == 0, "a zero-weight category was drawn"
    for c, p in enumerate(probs):
        assert abs(freq[c] - p) <= 6 * math.sqrt(p * (1 - p) / drawn.size), (c, freq[c], p)
    weights = ROWS[0].numpy() / ROWS[0].sum().item()
    assert not (rows == 1).any(), "a zero-weight category was drawn without replacement"
    assert all(len(set(r)) == 3 for r in rows.tolist()), "a row repeats a category"
    first = np.bincount(rows[:, 0], minlength=5) / rows.shape[0]
    for c, p in enumerate(weights):
        assert abs(first[c] - p) <= 6 * math.sqrt(p * (1 - p) / rows.shape[0]), (c, first[c], p)
    mean, std = (t.numpy() for t in case.inputs[2:])
    _moments((z - mean) / std, 0.0, 1.0, "normal(mean, std)")
    _moments((z_number - 2.0) / std, 0.0, 1.0, "normal(2.0, std)")
    again = _run(aotrt_bin, pkg, case.inputs, tmp_path / "b")
    for g, h in zip(got, again):
        np.testing.assert_array_equal(g, h)
