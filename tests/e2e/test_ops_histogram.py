"""The histogram family on the CPU, end to end: torch.histogram with an int bin count (the
histogram_bin_ct C shim; range, weight, density) and torch.histogramdd's hist (the
_histogramdd_from_bin_cts shim) exported by torch, run by `build/aotrt run`, compared with
eager (Note [Histogram semantics] in src/ops/histogram.h). histogramdd's bin_edges go
through aten._histogramdd_bin_edges, which has no C shim: the histogramdd_edges module
returns them, through aotrt's proxy executor (its package asserts the extern node).

Tolerance: 1e-6 (float32) / 1e-12 (float64) relative to the largest output: counts are
exact, edges are linspace in the input's dtype as ATen computes them.
"""

from __future__ import annotations

import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt, shims)

torch.manual_seed(0)


def histograms(x, w, p):
    a = torch.histogram(x, 5, range=(-1.0, 1.0), weight=w, density=True)
    b = torch.histogram(x, 7)
    c = torch.histogramdd(p, [3, 4])
    d = torch.histogramdd(p, [2, 2], range=[-1.0, 1.0, -0.5, 2.0], weight=w[: p.shape[0]])
    return a.hist, a.bin_edges, b.hist, b.bin_edges, c.hist, d.hist


def histogramdd_edges(p, w, q):
    a = torch.histogramdd(p, [3, 4])
    b = torch.histogramdd(p, [2, 5], range=[-1.0, 1.0, -0.5, 2.0], weight=w, density=True)
    c = torch.histogramdd(q, [4, 2, 3])
    return a.hist, *a.bin_edges, b.hist, *b.bin_edges, c.hist, *c.bin_edges


EDGES = Case("histogramdd_edges", histogramdd_edges,
             [torch.randn(30, 2), torch.rand(30), torch.randn(5, 8, 3, dtype=torch.float64)])

CASES = [
    Case("histograms_f32", histograms, [torch.randn(4, 50).t(), torch.rand(200), torch.randn(30, 2)]),
    Case("histograms_f64", histograms, [torch.randn(64, dtype=torch.float64),
                                        torch.rand(64, dtype=torch.float64),
                                        torch.randn(40, 2, dtype=torch.float64)]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES + [EDGES], cache_dir(tmp_path_factory, "ops_histogram"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    imported = shims(pkg)
    for s in ("aoti_torch_cpu_histogram_bin_ct", "aoti_torch_cpu__histogramdd_from_bin_cts"):
        assert s in imported, imported
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case),
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-6)


def test_histogramdd_edges_through_the_proxy_executor(aotrt_bin, packages, tmp_path):
    pkg = packages[EDGES.name]
    assert extern_targets(pkg).count("aten::_histogramdd_bin_edges") == 3, extern_targets(pkg)
    proc = run_aotrt(aotrt_bin, pkg, EDGES.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(EDGES.name, outputs(tmp_path), eager_outputs(EDGES),
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-6)
