"""A real tritonserver (2.51.0, from the nvidia-pytriton wheel) serving zoo packages with the
aotrt backend, on loopback ports, for the whole session; stopped whatever happens.

Environment:
  AOTRT_BUILD_DIR       where libtriton_aotrt.so and libaotrt are (default <repo>/build)
  AOTRT_TRITONSERVER    the tritonserver binary (default: scripts/fetch_tritonserver.sh's)
  AOTRT_TRITON_DEVICE   cpu (default) or cuda: the packages' device and the instances' kind
  AOTRT_TRITON_CACHE    keep exported packages here between runs (default: a temp dir)
  AOTRT_TRITON_PRELOAD  a library every server preloads: the sanitizer build's libasan, for a
                        backend built with AddressSanitizer (scripts/triton_asan_storm.sh)

The repository:
  resnet_block    resnet_basic_block exported with a dynamic batch of 2..8; config.pbtxt
                  gives only the dynamic batcher and two instances: inputs, outputs and
                  max_batch_size come from the package (auto-complete)
  mm              the two-input mm, static shapes, max_batch_size 0, auto-completed
  two_outputs     linear_chunk_two_outputs, static, inputs and outputs listed in config.pbtxt
  mm_any_shape    mm with dims [-1, -1]: the server passes any shape on, aotrt checks it
  broken_package  model.pt2 is not a zip: fails to load
  static_batched  mm with max_batch_size 4: refused (the package has no dynamic batch)
  wrong_dtype     mm configured as TYPE_FP64: refused
  torch_flow      linear_chunk_two_outputs exported by torch's own flow (aoti_compile_and_package
                  with link_libtorch=False alone: no record of its outputs); config.pbtxt is
                  only name, backend and max_batch_size 0: the backend finds the outputs by a
                  run (Note [Outputs of a package that records none], src/triton/config.h)
  torch_flow_batch  resnet_basic_block by torch's own flow with a dynamic batch of 2..8;
                  config.pbtxt gives only the dynamic batcher: the inputs' layouts and batch
                  range come from the generated source, the outputs' batch dim from two runs
  resnet_graph    (cuda only) resnet_block replayed as a CUDA graph
  busy            (cuda only) busy_small_io, two instances: runs of milliseconds on 2 KB
                  requests, where resnet_block's graph replays (tens of microseconds) end
                  before the next request arrives
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from aotrt_tools import export, triton  # noqa: E402

DEVICE = os.environ.get("AOTRT_TRITON_DEVICE", "cpu")
KIND = "KIND_GPU" if DEVICE == "cuda" else "KIND_CPU"
MAX_BATCH = 8
# zoo model, file stem, dynamic batch
EXPORTS = [("resnet_basic_block", "resnet_block", MAX_BATCH), ("mm", "mm", None),
           ("linear_chunk_two_outputs", "two_outputs", None)]
if DEVICE == "cuda":  # a model whose runs last milliseconds: two instances overlap visibly
    EXPORTS.append(("busy_small_io", "busy", MAX_BATCH))
# zoo model, file stem, dynamic batch: exported by torch's own flow (torch_flow_export)
TORCH_FLOW_EXPORTS = [("linear_chunk_two_outputs", "torch_flow", None),
                      ("resnet_basic_block", "torch_flow_batch", MAX_BATCH)]
GOOD_MODELS = ["resnet_block", "mm", "two_outputs", "mm_any_shape", "torch_flow", "torch_flow_batch"] + (
    ["resnet_graph", "busy"] if DEVICE == "cuda" else [])
FAILING_MODELS = ["broken_package", "static_batched", "wrong_dtype"]


def torch_flow_export(name: str, path: Path, dynamic_batch: int | None) -> None:
    """Zoo model `name` exported as a new user would: torch.export, then
    aoti_compile_and_package with aot_inductor.link_libtorch=False and nothing else (no
    aotrt.inputs/aotrt.outputs record); dim 0 of every input dynamic in 2..dynamic_batch."""
    import torch

    from aotrt_tools import zoo

    module, inputs, _ = zoo.get(name)
    module = module.to(DEVICE)
    inputs = tuple(export._batch_of_two(t.to(DEVICE)) if dynamic_batch else t.to(DEVICE) for t in inputs)
    dynamic = None
    if dynamic_batch:
        batch = torch.export.Dim("batch", min=2, max=dynamic_batch)
        dynamic = tuple({0: batch} for _ in inputs)
    with torch.no_grad():
        ep = torch.export.export(module, inputs, dynamic_shapes=dynamic)
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={"aot_inductor.link_libtorch": False})


@pytest.fixture(scope="session")
def packages(tmp_path_factory) -> dict[str, Path]:
    """stem -> exported .pt2, reused from AOTRT_TRITON_CACHE when the export code is unchanged."""
    out = Path(os.environ.get("AOTRT_TRITON_CACHE") or tmp_path_factory.mktemp("triton_zoo")) / DEVICE
    out.mkdir(parents=True, exist_ok=True)
    stamp = out / "fingerprint"
    # The export code's fingerprint and what is exported (a changed batch re-exports).
    fingerprint = (f"{export.source_fingerprint()} {EXPORTS!r} {TORCH_FLOW_EXPORTS!r} "
                   f"{hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}")
    fresh = stamp.exists() and stamp.read_text() == fingerprint
    jobs = [dict(out_dir=str(out), name=name, stem=stem, device=DEVICE, dynamic_batch=batch)
            for name, stem, batch in EXPORTS if not (fresh and (out / f"{stem}.pt2").exists())]
    for info in export.export_many(jobs, processes=2):
        if "package" not in info:
            pytest.fail(f"export of {info.get('name')} failed:\n{info.get('traceback', info.get('error'))}",
                        pytrace=False)
    for name, stem, batch in TORCH_FLOW_EXPORTS:
        if not (fresh and (out / f"{stem}.pt2").exists()):
            torch_flow_export(name, out / f"{stem}.pt2", batch)
    stamp.write_text(fingerprint)
    return {stem: out / f"{stem}.pt2" for _, stem, _ in EXPORTS + TORCH_FLOW_EXPORTS}


def _repository(root: Path, packages: dict[str, Path]) -> Path:
    repo = root / "models"
    instances = {"instance_group": {"kind": KIND, "count": 1}}
    triton.add_model(repo, "resnet_block", packages["resnet_block"], {
        "dynamic_batching": {"max_queue_delay_microseconds": 20000},
        "instance_group": {"kind": KIND, "count": 2},
        "parameters": {"key": "report_instance", "value": {"string_value": "true"}},
    })
    triton.add_model(repo, "mm", packages["mm"], {"max_batch_size": 0, **instances})
    mm_in, mm_out = triton.package_tensor_names(packages["mm"])
    two_in, two_out = triton.package_tensor_names(packages["two_outputs"])
    triton.add_model(repo, "two_outputs", packages["two_outputs"], {
        "max_batch_size": 0, **instances,
        "input": [{"name": two_in[0], "data_type": "TYPE_FP32", "dims": [12, 7]}],
        "output": [{"name": n, "data_type": "TYPE_FP32", "dims": [12, 8]} for n in two_out],
    })
    triton.add_model(repo, "mm_any_shape", packages["mm"], {
        "max_batch_size": 0, **instances,
        "input": [{"name": n, "data_type": "TYPE_FP32", "dims": [-1, -1]} for n in mm_in],
    })
    # Nothing but name, backend and max_batch_size (the issue 32 case): no instance_group either.
    triton.add_model(repo, "torch_flow", packages["torch_flow"], {"max_batch_size": 0})
    triton.add_model(repo, "torch_flow_batch", packages["torch_flow_batch"], {
        "dynamic_batching": {"max_queue_delay_microseconds": 20000},
        "parameters": {"key": "report_instance", "value": {"string_value": "true"}},
    })
    triton.add_model(repo, "broken_package", b"this is not a zip archive", {"max_batch_size": 0, **instances})
    triton.add_model(repo, "static_batched", packages["mm"], {"max_batch_size": 4, **instances})
    triton.add_model(repo, "wrong_dtype", packages["mm"], {
        "max_batch_size": 0, **instances,
        "input": [{"name": n, "data_type": "TYPE_FP64", "dims": d} for n, d in zip(mm_in, ([3, 4], [4, 5]))],
    })
    if DEVICE == "cuda":
        triton.add_model(repo, "resnet_graph", packages["resnet_block"], {
            "max_batch_size": MAX_BATCH, "dynamic_batching": {"max_queue_delay_microseconds": 20000},
            "instance_group": {"kind": KIND, "count": 1},
            "parameters": {"key": "cuda_graph", "value": {"string_value": "true"}},
        })
        triton.add_model(repo, "busy", packages["busy"], {
            "dynamic_batching": {"max_queue_delay_microseconds": 100},
            "instance_group": {"kind": KIND, "count": 2},
            "parameters": {"key": "report_instance", "value": {"string_value": "true"}},
        })
    return repo


@contextlib.contextmanager
def running_server(root: Path, repository: Path, ready: list[str], **server_args):
    """tritonserver with the aotrt backend of AOTRT_BUILD_DIR (else build/) serving
    `repository`, once `ready` are loaded; stopped at the end whatever happened, its log's last
    lines printed."""
    build = Path(os.environ.get("AOTRT_BUILD_DIR", REPO / "build"))
    try:
        binary = triton.tritonserver()
        backends = triton.backend_directory(build, root / "backends")
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    srv = triton.Server(binary, repository, backends, root / "tritonserver.log",
                        preload=os.environ.get("AOTRT_TRITON_PRELOAD") or None, **server_args)
    srv.start()
    try:
        srv.wait_ready(ready, timeout_s=240)
        yield srv
    finally:
        srv.stop()
        print(f"\n== tritonserver log ({srv.log_path}), last lines:\n{srv.log_text()[-3000:]}")


@pytest.fixture(scope="session")
def server(tmp_path_factory, packages):
    root = tmp_path_factory.mktemp("triton")
    with running_server(root, _repository(root, packages), GOOD_MODELS) as srv:
        yield srv


@pytest.fixture(scope="session")
def eager():
    """zoo name -> a function from numpy inputs to eager numpy outputs (fp32, TF32 off)."""
    import numpy as np
    import torch

    from aotrt_tools import zoo

    cache = {}

    def run(name: str, *inputs):
        if name not in cache:
            module, _, tol = zoo.get(name)
            cache[name] = (module.to(DEVICE), tol)
        module, _ = cache[name]
        with zoo.exact_fp32(), torch.no_grad():
            out = module(*[torch.from_numpy(np.ascontiguousarray(x)).to(DEVICE) for x in inputs])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.detach().cpu().numpy() for o in outs]

    run.tolerance = lambda name: cache[name][1] if name in cache else zoo.get(name)[2]
    return run


def pytest_terminal_summary(terminalreporter):
    if REPORT:
        terminalreporter.section("aotrt triton backend: max abs diff against eager")
        for line in REPORT:
            terminalreporter.write_line(line)


REPORT: list[str] = []
