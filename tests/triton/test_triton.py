"""The aotrt backend inside a real tritonserver: HTTP and gRPC results against eager PyTorch,
dynamic batching, two instances at once, and errors that leave the server serving.

Every request loop is bounded in count and in time; the server listens on 127.0.0.1 only.
Tolerances are the zoo's (fp32: atol = rtol = 1e-5, numpy allclose semantics).
"""

from __future__ import annotations

import concurrent.futures
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import DEVICE, FAILING_MODELS, GOOD_MODELS, MAX_BATCH, REPORT

RNG = np.random.default_rng(0)


def _infer(client, module, model: str, arrays: list[np.ndarray], names: list[str] | None = None):
    """Runs `model` on `arrays` through a tritonclient (http or grpc module); returns the
    result and the output names in the model's configured order."""
    meta = client.get_model_metadata(model)
    if module is grpcclient:
        inputs_meta = [{"name": i.name, "datatype": i.datatype} for i in meta.inputs]
        outputs = [o.name for o in meta.outputs]
    else:
        inputs_meta, outputs = meta["inputs"], [o["name"] for o in meta["outputs"]]
    inputs = []
    for spec, a in zip(inputs_meta, arrays):
        t = module.InferInput(spec["name"], list(a.shape), spec["datatype"])
        t.set_data_from_numpy(a)
        inputs.append(t)
    requested = [module.InferRequestedOutput(n) for n in (names or outputs)]
    return client.infer(model, inputs, outputs=requested), names or outputs


def _check(name: str, got: np.ndarray, want: np.ndarray, tol: dict, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, eager {want.shape}"
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    REPORT.append(f"{what}: max abs diff {diff:.3g} (atol {tol['atol']}, rtol {tol['rtol']})")
    np.testing.assert_allclose(got, want, atol=tol["atol"], rtol=tol["rtol"], err_msg=what)


@pytest.fixture(scope="module")
def http(server):
    client = httpclient.InferenceServerClient(server.http_url, connection_timeout=30, network_timeout=60)
    yield client
    client.close()


@pytest.fixture(scope="module")
def grpc(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    yield client
    client.close()


CASES = [
    # triton model, zoo model, input shapes
    ("mm", "mm", [(3, 4), (4, 5)]),
    ("two_outputs", "linear_chunk_two_outputs", [(12, 7)]),
    ("resnet_block", "resnet_basic_block", [(3, 32, 32, 32)]),
    ("resnet_block", "resnet_basic_block", [(1, 32, 32, 32)]),  # padded to the package's 2 rows
    # packages made by torch's own flow, served from a minimal config.pbtxt
    ("torch_flow", "linear_chunk_two_outputs", [(12, 7)]),
    ("torch_flow_batch", "resnet_basic_block", [(3, 32, 32, 32)]),
    ("torch_flow_batch", "resnet_basic_block", [(1, 32, 32, 32)]),
]
if DEVICE == "cuda":
    CASES.append(("resnet_graph", "resnet_basic_block", [(5, 32, 32, 32)]))


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model,zoo_name,shapes", CASES)
def test_outputs_match_eager(request, protocol, model, zoo_name, shapes, eager):
    client = request.getfixturevalue(protocol)
    module = httpclient if protocol == "http" else grpcclient
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    result, names = _infer(client, module, model, arrays)
    want = eager(zoo_name, *arrays)
    assert len(names) == len(want), f"{model}: {len(names)} outputs served, eager has {len(want)}"
    for name, w in zip(names, want):
        _check(model, result.as_numpy(name), w, eager.tolerance(zoo_name),
               f"{model} over {protocol}, inputs {shapes}, output {name}")


def test_autocompleted_config(server):
    status, config = server.get("/v2/models/resnet_block/config")
    assert status == 200, config
    assert config["max_batch_size"] == MAX_BATCH, "max_batch_size comes from the package's batch dim"
    [inp], [out] = config["input"], config["output"]
    assert (inp["data_type"], [int(d) for d in inp["dims"]]) == ("TYPE_FP32", [32, 32, 32])
    assert (out["data_type"], [int(d) for d in out["dims"]]) == ("TYPE_FP32", [64, 16, 16])
    status, mm = server.get("/v2/models/mm/config")
    assert status == 200 and mm.get("max_batch_size", 0) == 0
    assert [[int(d) for d in i["dims"]] for i in mm["input"]] == [[3, 4], [4, 5]]


def test_torch_flow_packages_get_their_config_from_the_package(server):
    """A package made by aoti_compile_and_package alone records nothing of its outputs: the
    backend found their names, dtypes and dims by running it (Note [Outputs of a package that
    records none]); a dynamic batch read from the generated source gives max_batch_size."""
    status, config = server.get("/v2/models/torch_flow/config")
    assert status == 200, config
    assert config.get("max_batch_size", 0) == 0
    [inp] = config["input"]
    assert (inp["data_type"], [int(d) for d in inp["dims"]]) == ("TYPE_FP32", [12, 7])
    outs = [(o["name"], o["data_type"], [int(d) for d in o["dims"]]) for o in config["output"]]
    assert outs == [("output0", "TYPE_FP32", [12, 8]), ("output1", "TYPE_FP32", [12, 8])], outs

    status, config = server.get("/v2/models/torch_flow_batch/config")
    assert status == 200, config
    assert config["max_batch_size"] == MAX_BATCH, "the batch range comes from the source's input checks"
    [inp], [out] = config["input"], config["output"]
    assert (inp["data_type"], [int(d) for d in inp["dims"]]) == ("TYPE_FP32", [32, 32, 32])
    assert (out["name"], out["data_type"], [int(d) for d in out["dims"]]) == \
        ("output0", "TYPE_FP32", [64, 16, 16])


def test_torch_flow_package_batches_requests(server, eager):
    before = server.statistics("torch_flow_batch")
    rows = [1, 3] * 4
    results = _concurrent_rows(server, rows, model="torch_flow_batch")
    tol = eager.tolerance("resnet_basic_block")
    for k, (x, y, _) in enumerate(results):
        _check("torch_flow_batch", y, eager("resnet_basic_block", x)[0], tol,
               f"torch_flow_batch client {k} of {len(rows)} ({x.shape[0]} rows)")
    after = server.statistics("torch_flow_batch")
    assert int(after["inference_count"]) - int(before["inference_count"]) == sum(rows)
    merged = [b for b in after["batch_stats"] if int(b["batch_size"]) > 3 and int(b["compute_infer"]["count"]) > 0]
    assert merged, f"no batch larger than one request in the statistics: {after['batch_stats']}"


def _concurrent_rows(server, rows_per_client: list[int], timeout_s: float = 120,
                     model: str = "resnet_block", row_shape: tuple[int, ...] = (32, 32, 32)):
    """One HTTP client per entry, all at once, each sending its own rows to `model`;
    returns (inputs, outputs, response parameters) per client."""
    def one(rows: int):
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
        try:
            x = RNG.standard_normal((rows, *row_shape)).astype(np.float32)
            result, names = _infer(client, httpclient, model, [x])
            return x, result.as_numpy(names[0]), result.get_response().get("parameters", {})
        finally:
            client.close()

    with concurrent.futures.ThreadPoolExecutor(len(rows_per_client)) as pool:
        futures = [pool.submit(one, r) for r in rows_per_client]
        return [f.result(timeout=timeout_s) for f in futures]


def test_dynamic_batching_merges_requests(server, eager):
    before = server.statistics("resnet_block")
    rows = [1, 2] * 6
    results = _concurrent_rows(server, rows)
    tol = eager.tolerance("resnet_basic_block")
    for k, (x, y, _) in enumerate(results):
        _check("resnet_block", y, eager("resnet_basic_block", x)[0], tol,
               f"resnet_block client {k} of {len(rows)} ({x.shape[0]} rows)")
    after = server.statistics("resnet_block")
    assert int(after["inference_count"]) - int(before["inference_count"]) == sum(rows)
    executions = int(after["execution_count"]) - int(before["execution_count"])
    assert executions < len(rows), f"{len(rows)} concurrent requests ran in {executions} executions"
    merged = [b for b in after["batch_stats"] if int(b["batch_size"]) > 2 and int(b["compute_infer"]["count"]) > 0]
    assert merged, f"no batch larger than one request in the statistics: {after['batch_stats']}"


def test_two_instances_serve_at_once(server):
    """Two instances of one model; some pair of runs on different instances overlaps in time
    (each response names its instance and its run's steady-clock interval). On the CPU that is
    resnet_block; on CUDA, whose graph replays of resnet_block end in tens of microseconds,
    before the next request has arrived (no overlap in 1600 responses on the H200), it is
    `busy`: milliseconds a run for 2 KB a request. Bounded by count and time."""
    model, row_shape = ("busy", (64,)) if DEVICE == "cuda" else ("resnet_block", (32, 32, 32))
    deadline = time.monotonic() + 90
    seen: list[tuple[str, int, int]] = []
    for _ in range(200):
        for _, _, params in _concurrent_rows(server, [MAX_BATCH] * 8, model=model,
                                             row_shape=row_shape):
            seen.append((params["aotrt_instance"], int(params["aotrt_compute_start_ns"]),
                         int(params["aotrt_compute_end_ns"])))
        overlap = any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in seen for b in seen)
        if overlap or time.monotonic() > deadline:
            break
    instances = sorted({s[0] for s in seen})
    assert len(instances) == 2, f"runs came from {instances}"
    assert overlap, f"no two runs on different instances overlapped in {len(seen)} responses"


def test_malformed_requests_get_errors_and_the_server_keeps_serving(http, grpc, eager):
    x = RNG.standard_normal((2, 32, 32, 32)).astype(np.float32)
    cases = [
        # the server's own checks against config.pbtxt
        (http, httpclient, "resnet_block", [RNG.standard_normal((2, 3, 32, 32)).astype(np.float32)], "shape"),
        (grpc, grpcclient, "mm", [np.zeros((3, 4), np.float32)], "input"),
        # shapes the server passes on (dims -1): refused by aotrt with its message
        (http, httpclient, "mm_any_shape", [np.zeros((3, 5), np.float32), np.zeros((5, 5), np.float32)],
         "aotrt: aotrt::Model::run: input 0"),
        (grpc, grpcclient, "mm_any_shape", [np.zeros((3, 4), np.float32), np.zeros((7, 5), np.float32)],
         "expected float32 [4, 5]"),
    ]
    for client, module, model, arrays, message in cases:
        meta = client.get_model_metadata(model)
        names = [i.name for i in meta.inputs] if module is grpcclient else [i["name"] for i in meta["inputs"]]
        inputs = []
        for n, a in zip(names, arrays):
            t = module.InferInput(n, list(a.shape), "FP32")
            t.set_data_from_numpy(a)
            inputs.append(t)
        with pytest.raises(InferenceServerException) as err:
            client.infer(model, inputs)
        assert message in str(err.value), f"{model}: {err.value}"
        # still serving, the same model and another one
        result, out = _infer(http, httpclient, "resnet_block", [x])
        np.testing.assert_allclose(result.as_numpy(out[0]), eager("resnet_basic_block", x)[0],
                                   **{k: v for k, v in eager.tolerance("resnet_basic_block").items() if k != "reason"})


def test_models_that_cannot_load_are_reported(server):
    index = server.repository_index()
    for name in GOOD_MODELS:
        assert index[name]["state"] == "READY", index[name]
    reasons = {
        "broken_package": "cannot load",
        "static_batched": "needs a package whose dim 0 is a dynamic batch",
        "wrong_dtype": "is TYPE_FP64 but the package's is float32",
    }
    for name in FAILING_MODELS:
        assert index[name]["state"] == "UNAVAILABLE", index[name]
        assert "aotrt" in index[name].get("reason", "") and reasons[name] in index[name]["reason"], index[name]
    assert server.get("/v2/health/live")[0] == 200
