"""Fixtures for the tests of the Python package (`import aotrt`), installed by `pip install .`.

The tests import the INSTALLED package, never python/aotrt/ of the source tree (which has no
extension): `pip install .` first (scripts/test.sh does). The zoo is exported as for
tests/e2e (its fixtures are reused, so AOTRT_E2E_CACHE shares the exports with that suite).

Environment:
  AOTRT_E2E_CACHE    as for tests/e2e: where exported packages live, reused across runs.
  AOTRT_TEST_CUDA=1  also run the CUDA tests (test_cuda.py; needs aotrt built with
                     -DAOTRT_CUDA=ON and torch with CUDA). Without it they are skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Before tests/e2e's conftest puts <repo>/python (which holds the source python/aotrt/) on
# sys.path: the installed package must be the one imported.
try:
    import aotrt
except ImportError as e:  # a missing install is a failure, not a skip
    raise pytest.UsageError(f"`import aotrt` failed ({e}); run `pip install .` from {REPO} first")
if Path(aotrt.__file__).resolve().parent == REPO / "python" / "aotrt":
    raise pytest.UsageError(f"imported the source tree's aotrt ({aotrt.__file__}), not the installed package")


if str(REPO) not in sys.path:  # for tests.zoo_fixtures (the root holds no `aotrt` to shadow)
    sys.path.insert(0, str(REPO))
from tests.zoo_fixtures import e2e_conftest  # noqa: E402

_e2e = e2e_conftest()
zoo_exports = _e2e.zoo_exports  # session fixture: exports every zoo model the tests ask for
exported = _e2e.exported        # name -> export info; fails the test if that export failed


@pytest.fixture(scope="session")
def small_packages(tmp_path_factory) -> dict[str, Path]:
    """Two tiny packages the zoo has no counterpart for (exported once per session):

    view_of_input: returns x[1:] and x.t(), views of the caller's memory (exported with
      aotrt_tools.export, which records the input layout).
    plain_channels_last: 1x1 conv on a channels-last input, exported with torch's own
      aoti_compile_and_package and nothing of aotrt_tools' metadata: aotrt learns the
      input's layout from the package's generated source.
    slow_matmuls: eight 512x512 matmuls in a row (a run of milliseconds, long enough for
      test_threads to see another Python thread run while it lasts).
    no_weights: Linear + buffer exported by torch's own flow with package_constants_in_so=
      False and no weights blob (the package holds no weights); its reference is computed
      in the test from the weights given.
    bf16_linear: a bfloat16 Linear with a bfloat16 input (numpy has no bfloat16); the
      module and input are saved beside it (bf16_linear.ref.pt).
    """
    import torch
    from aotrt_tools import export
    from small_models import NoWeights, SlowMatmuls, ViewOfInput

    out = tmp_path_factory.mktemp("small")
    export.export_package(ViewOfInput(), (torch.randn(4, 6),), out / "view_of_input.pt2")

    export.export_package(SlowMatmuls(), (torch.randn(512, 512),), out / "slow_matmuls.pt2")

    def torch_export(module, inputs, path, options):
        with torch.no_grad():
            ep = torch.export.export(module, tuple(inputs))
            torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=options)

    options, _ = export.resolve_options()
    # No weights blob beside the .so (package_constants_in_so is False already); small
    # constants stay constants, not literals in the code.
    no_blob = {k: v for k, v in options.items() if k != "aot_inductor.package_constants_on_disk_format"}
    torch_export(NoWeights().eval(), (torch.randn(4, 16),), out / "no_weights.pt2",
                 dict(no_blob, always_keep_tensor_constants=True))

    lin = torch.nn.Linear(16, 8).to(torch.bfloat16).eval()
    xb = torch.randn(4, 16).to(torch.bfloat16)
    export.export_package(lin, (xb,), out / "bf16_linear.pt2")
    with torch.no_grad():
        torch.save({"x": xb, "y": lin(xb)}, out / "bf16_linear.ref.pt")

    conv = torch.nn.Conv2d(8, 4, 1).eval()
    x = torch.randn(1, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    torch_export(conv, (x,), out / "plain_channels_last.pt2", options)
    with torch.no_grad():
        torch.save({"x": x, "y": conv(x)}, out / "plain_channels_last.ref.pt")
    return {p.stem: p for p in out.glob("*.pt2")}
