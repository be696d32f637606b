"""Serving aotrt packages with NVIDIA Triton Inference Server (the aotrt backend).

A model repository holds one folder per model: `config.pbtxt` and `<version>/model.pt2`.
The backend directory holds `aotrt/libtriton_aotrt.so` (and libaotrt beside it). The server
is the `tritonserver` 2.51.0 of PyPI's nvidia-pytriton 0.7.0 wheel, unpacked by
`scripts/fetch_tritonserver.sh` (installing the wheel would pull numpy<2).

    server = Server(tritonserver(), repository, backend_directory(Path("build")))
    with server:            # starts on 127.0.0.1 ports, stops (and kills) on exit
        server.wait_ready(["resnet_block"], timeout_s=120)

Everything listens on loopback only, and every wait is bounded.

Generation models (decoupled, TensorRT-LLM's tensor names: Note [Generation models] in
src/triton/config.h) are served over gRPC streaming; `GenerationStream` is a bounded client:

    stream = GenerationStream(server.grpc_url)
    tokens = stream.generate("llm", [1, 15043, 29892], max_new_tokens=32, seed=7).tokens
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

PYTRITON_VERSION = "0.7.0"
DEFAULT_HOME = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aotrt" / f"pytriton-{PYTRITON_VERSION}"


def tritonserver() -> Path:
    """The tritonserver binary: $AOTRT_TRITONSERVER, else the one fetch_tritonserver.sh unpacked."""
    path = Path(os.environ.get("AOTRT_TRITONSERVER", DEFAULT_HOME / "pytriton" / "tritonserver" / "bin" / "tritonserver"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(
            f"tritonserver not found at {path}: run scripts/fetch_tritonserver.sh, or point "
            "AOTRT_TRITONSERVER at a tritonserver binary")
    return path


def backend_directory(build_dir: Path, into: Path) -> Path:
    """A --backend-directory holding aotrt/libtriton_aotrt.so, the libaotrt it links and
    libaotrt_abi.so, which libaotrt opens beside itself (Note [The ABI face])."""
    lib = build_dir / "libtriton_aotrt.so"
    if not lib.is_file():
        raise FileNotFoundError(f"{lib} not found: build it (cmake --build {build_dir} --target triton_aotrt)")
    dest = into / "aotrt"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(lib, dest / lib.name)
    # The backend needs libaotrt by its soname only (libaotrt.so.0); copying the unversioned
    # and fully versioned names too tripled the 79 MB a server start writes.
    for so in [build_dir / "libaotrt.so.0", build_dir / "libaotrt_abi.so"]:
        shutil.copy2(so, dest / so.name, follow_symlinks=True)
    return into


def pbtxt(value: Any, indent: int = 0) -> str:
    """A dict as protobuf text format: nested dicts are messages, lists repeat the field,
    strings that are enum names (KIND_CPU, TYPE_FP32) stay bare."""
    pad = "  " * indent
    lines = []
    for key, v in value.items():
        for item in (v if isinstance(v, list) else [v]):
            if isinstance(item, dict):
                lines.append(f"{pad}{key} {{\n{pbtxt(item, indent + 1)}{pad}}}")
            elif isinstance(item, bool):
                lines.append(f"{pad}{key}: {'true' if item else 'false'}")
            elif isinstance(item, str) and not (item.isupper() and item.replace("_", "").isalnum()):
                lines.append(f"{pad}{key}: {json.dumps(item)}")
            else:
                lines.append(f"{pad}{key}: {item}")
    return "".join(line + "\n" for line in lines)


def add_model(repository: Path, name: str, package: Path | bytes, config: dict[str, Any], version: int = 1) -> Path:
    """repository/name/config.pbtxt (backend "aotrt" plus `config`) and version/model.pt2
    (a copy of `package`, or these bytes)."""
    folder = repository / name
    (folder / str(version)).mkdir(parents=True, exist_ok=True)
    target = folder / str(version) / "model.pt2"
    if isinstance(package, bytes):
        target.write_bytes(package)
    else:
        shutil.copy2(package, target)
    (folder / "config.pbtxt").write_text(pbtxt({"name": name, "backend": "aotrt", **config}))
    return folder


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A tritonserver process on 127.0.0.1, stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, binary: Path, repository: Path, backends: Path, log_path: Path,
                 extra_args: Iterable[str] = (), metrics: bool = False, preload: str | None = None):
        self.binary, self.repository, self.backends, self.log_path = binary, repository, backends, log_path
        self.extra_args = list(extra_args)
        self.preload = preload  # a library the server process preloads (a sanitizer's runtime)
        self.metrics = metrics  # the Prometheus endpoint, on 127.0.0.1 too
        self.http_port = self.grpc_port = self.metrics_port = 0
        self.process: subprocess.Popen | None = None

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> None:
        self.http_port, self.grpc_port = free_port(), free_port()
        if self.metrics:
            self.metrics_port = free_port()
            metrics = ["--allow-metrics=true", "--allow-gpu-metrics=false", "--allow-cpu-metrics=false",
                       "--metrics-address=127.0.0.1", f"--metrics-port={self.metrics_port}"]
        else:
            metrics = ["--allow-metrics=false"]
        args = [str(self.binary), f"--model-repository={self.repository}",
                f"--backend-directory={self.backends}",
                "--http-address=127.0.0.1", f"--http-port={self.http_port}",
                "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
                *metrics, "--allow-sagemaker=false", "--allow-vertex-ai=false",
                # A model that fails to load is reported, the others keep serving.
                "--exit-on-error=false", "--strict-readiness=false", *self.extra_args]
        self.log = open(self.log_path, "wb")
        env = {**os.environ, "LD_PRELOAD": self.preload} if self.preload else None
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True, env=env)

    def stop(self, timeout_s: float = 30) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
        self.process = None

    def __enter__(self) -> "Server":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def get(self, path: str, timeout_s: float = 10) -> tuple[int, Any]:
        """(HTTP status, parsed JSON body or None) of GET http://127.0.0.1:port/path."""
        return self._request(urllib.request.Request(f"http://{self.http_url}{path}"), timeout_s)

    def post(self, path: str, body: Any, timeout_s: float = 10) -> tuple[int, Any]:
        req = urllib.request.Request(f"http://{self.http_url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        return self._request(req, timeout_s)

    @staticmethod
    def _request(req: urllib.request.Request, timeout_s: float) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                data = r.read()
                return r.status, json.loads(data) if data else None
        except urllib.error.HTTPError as e:
            data = e.read()
            return e.code, json.loads(data) if data else None

    def wait_ready(self, models: Iterable[str], timeout_s: float = 180) -> None:
        """Waits until the server is live and each model is ready; raises TimeoutError (with
        the end of the server's log) or RuntimeError if the process exits."""
        deadline = time.monotonic() + timeout_s
        pending = list(models)
        live = False
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"tritonserver exited ({self.process and self.process.returncode}):\n"
                                   f"{self.log_text()[-4000:]}")
            try:
                if not live:
                    live = self.get("/v2/health/live", timeout_s=2)[0] == 200
                while live and pending and self.get(f"/v2/models/{pending[0]}/ready", timeout_s=2)[0] == 200:
                    pending.pop(0)
                if live and not pending:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.25)
        raise TimeoutError(f"tritonserver not ready after {timeout_s} s (waiting for {pending or 'liveness'}):\n"
                           f"{self.log_text()[-4000:]}")

    def metric(self, name: str, **labels: str) -> float | None:
        """The value of Prometheus metric `name` whose labels include `labels`; None when the
        endpoint lists none (metrics=True is needed)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            head, _, value = line.rpartition(" ")
            found = dict(re.findall(r'(\w+)="([^"]*)"', head))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(value)
        return None

    def repository_index(self) -> dict[str, dict[str, Any]]:
        """name -> {state, reason, ...} of every model in the repository."""
        status, body = self.post("/v2/repository/index", {})
        if status != 200:
            raise RuntimeError(f"repository index: HTTP {status} {body}")
        return {m["name"]: m for m in body}

    def statistics(self, model: str) -> dict[str, Any]:
        status, body = self.get(f"/v2/models/{model}/stats")
        if status != 200:
            raise RuntimeError(f"stats of {model}: HTTP {status} {body}")
        return body["model_stats"][0]


def generation_inputs(prompt: list[int], max_new_tokens: int, *, streaming: bool = True,
                      temperature: float | None = None, top_k: int | None = None,
                      top_p: float | None = None, seed: int | None = None, end_id: int | None = None,
                      exclude_input: bool | None = None, id_type: str = "INT32",
                      batched: bool = False, extra: dict[str, tuple[str, Any]] | None = None) -> list:
    """tritonclient.grpc InferInputs for a generation model, named as TensorRT-LLM's backend
    names them; `batched` adds the leading batch dim of a model with max_batch_size > 0; `extra`
    adds inputs {name: (Triton type, value)} as given (for requests a test wants refused)."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    np_types = {"INT32": np.int32, "INT64": np.int64, "UINT64": np.uint64, "FP32": np.float32,
                "FP64": np.float64, "BOOL": np.bool_}
    values: dict[str, tuple[str, Any]] = {
        "input_ids": (id_type, list(prompt)), "request_output_len": (id_type, [max_new_tokens]),
        "streaming": ("BOOL", [streaming])}
    for name, kind, v in (("temperature", "FP32", temperature), ("runtime_top_k", "INT32", top_k),
                          ("runtime_top_p", "FP32", top_p), ("random_seed", "UINT64", seed),
                          ("end_id", id_type, end_id), ("exclude_input_in_output", "BOOL", exclude_input)):
        if v is not None:
            values[name] = (kind, [v])
    for name, (kind, v) in (extra or {}).items():
        values[name] = (kind, v if isinstance(v, list) else [v])
    inputs = []
    for name, (kind, v) in values.items():
        a = np.asarray(v, dtype=np_types[kind])
        if batched:
            a = a[None]
        t = grpcclient.InferInput(name, list(a.shape), kind)
        t.set_data_from_numpy(a)
        inputs.append(t)
    return inputs


@dataclass
class Generated:
    """One request's answer: the tokens of every response in order, the time each response
    arrived (seconds since the request was sent), how many responses carried tokens, and
    whether an empty response flagged final closed it."""
    tokens: list[int] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    responses: list[list[int]] = field(default_factory=list)
    final_empty: bool = False
    error: str | None = None
    cut: bool = False  # `stop_at` came before the final response


class GenerationTimeout(TimeoutError):
    """A request's final response did not come in time; `generated` holds what did."""

    def __init__(self, generated: Generated, timeout_s: float):
        super().__init__(f"no final response after {timeout_s} s ({len(generated.tokens)} tokens so far)")
        self.generated = generated


# Note [Cancelling a finished stream]
# tritonserver 2.51's gRPC stream handler sometimes keeps a request's state, and with it the
# model, when the client cancels the stream (stop_stream(cancel_requests=True)) just as the
# request's final response goes out, or when that response comes some time after the
# cancellation: the model then unloads only at the server's exit timeout (30 s). With every
# stream cancelled at close, tests/triton/test_generation.py left its model held in 3 of 5
# runs; closed without cancelling once their requests were answered, in none of 4. Related
# server reports: triton-inference-server/server #7368 and #8034 (cancellation racing a
# response's completion). So a stream is cancelled only while a request of it still runs.
class GenerationStream:
    """A gRPC bi-directional stream to the server for one request at a time: `generate` sends
    a request and collects its responses until the final one (an empty response flagged
    final, or a response flagged final) or an error, bounded by `timeout_s`."""

    def __init__(self, url: str):
        import tritonclient.grpc as grpcclient

        self.client = grpcclient.InferenceServerClient(url)
        self.responses: queue.Queue = queue.Queue()
        self.unfinished = 0  # requests sent whose final response or error has not come
        self.client.start_stream(callback=lambda result, error: self.responses.put((result, error, time.perf_counter())))

    def send(self, model: str, inputs: list, request_id: str = "") -> float:
        """Sends a request without waiting; returns the time it was sent."""
        t0 = time.perf_counter()
        self.client.async_stream_infer(model, inputs, request_id=request_id,
                                       enable_empty_final_response=True)
        self.unfinished += 1
        return t0

    def receive(self, t0: float, timeout_s: float = 120, output: str = "output_ids",
                stop_at: float | None = None) -> Generated:
        """The responses of the request sent at `t0`, until its final one; raises TimeoutError
        after `timeout_s`. At time.monotonic() `stop_at` it returns what came so far, `cut`
        (the request still runs: cancel() it)."""
        out = Generated()
        deadline = time.monotonic() + timeout_s
        while True:
            now = time.monotonic()
            if stop_at is not None and now >= stop_at:
                out.cut = True
                return out
            left = min(deadline, stop_at if stop_at is not None else deadline) - now
            if now >= deadline:
                raise GenerationTimeout(out, timeout_s)
            try:
                result, error, arrived = self.responses.get(timeout=max(left, 0.001))
            except queue.Empty:
                continue
            if error is not None:
                self.unfinished -= 1
                out.error = str(error)
                return out
            response = result.get_response()
            final = response.parameters["triton_final_response"].bool_param \
                if "triton_final_response" in response.parameters else False
            ids = result.as_numpy(output)
            if ids is not None:
                toks = [int(t) for t in ids.reshape(-1)]
                out.tokens += toks
                out.responses.append(toks)
                out.arrivals.append(arrived - t0)
            elif final:
                out.final_empty = True
            if final:
                self.unfinished -= 1
                return out

    def generate(self, model: str, prompt: list[int], max_new_tokens: int, timeout_s: float = 120,
                 request_id: str = "", **kwargs: Any) -> Generated:
        return self.receive(self.send(model, generation_inputs(prompt, max_new_tokens, **kwargs),
                                      request_id), timeout_s)

    def cancel(self) -> None:
        """Closes the stream, cancelling its requests on the server."""
        self.client.stop_stream(cancel_requests=True)

    def close(self) -> None:
        """Ends the stream: cancelled while a request runs, else closed as a client that is done
        closes it (a cancellation racing a final response trips tritonserver 2.51's gRPC
        handler: Note [Cancelling a finished stream])."""
        self.client.stop_stream(cancel_requests=self.unfinished > 0)
        self.client.close()

    def __enter__(self) -> "GenerationStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def package_tensor_names(package: Path) -> tuple[list[str], list[str]]:
    """The input and output names the compiled model reports (its wrapper's inputs_info_ /
    outputs_info_), which a config.pbtxt that lists tensors must use."""
    import re
    import zipfile

    with zipfile.ZipFile(package) as z:
        name = next(n for n in z.namelist() if n.endswith(".wrapper.cpp"))
        text = z.read(name).decode()
    def names(kind: str) -> list[str]:
        found = {int(i): n for i, n in re.findall(kind + r'_info_\[(\d+)\]\.name = "([^"]+)";', text)}
        return [found[i] for i in sorted(found)]
    return names("inputs"), names("outputs")
