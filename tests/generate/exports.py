"""The two packages each generation test model is exported to, and their cache.

- "generation": aotrt's generation package, made by aotrt_tools.llm (the code behind
  `python -m aotrt_tools.llm export`): prefill and decode (Whisper: encoder and decode) in one
  .pt2 with the "aotrt.generation" records (Note [Generation package] in aotrt_tools/llm.py).
- "torch": what a user of torch's own flow makes: transformers' exportable module (the
  gpt-fast model as it is), torch.export, then `aoti_compile_and_package(ep, inductor_configs=
  {"aot_inductor.link_libtorch": False})`: one graph named `model`, no aotrt metadata, torch's
  default layout (weights in the .so). Whisper gives two such packages: STEM.encoder.pt2
  (transformers' Seq2SeqLMEncoderExportableModule calls `encoder(input_ids=...)`, which Whisper
  does not take, so the encoder is aotrt_tools.llm.WhisperEncoderGraph) and STEM.pt2 (the
  decoder step, Seq2SeqLMDecoderExportableModuleWithStaticCache).
- "generation_bf16": the same in bfloat16 (weights and caches).
- "command": `python -m aotrt_tools.llm export` run as a user runs it, on the model saved as a
  Hugging Face folder with a tokenizer.json (the CLI's own path: loading, tokenizer copy, output).

Packages are cached as the e2e tests cache theirs (tests/e2e/conftest.py): under
$AOTRT_E2E_CACHE (here in its generate/ folder), STEM.pt2 beside STEM.json, whose
"fingerprint" (`fingerprint()`: torch's and transformers' versions, aotrt_tools' export code
(llm.py, llm_models.py, fuse_linears.py), this folder's models and exports) must match, else the
package is exported again.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from tests.generate import models  # the repository root is on sys.path (conftest.py)
from aotrt_tools import export as aotrt_export  # noqa: E402  (models puts python/ on sys.path)
from aotrt_tools import llm  # noqa: E402

HERE = Path(__file__).resolve().parent
KINDS = ("generation", "generation_bf16", "torch", "command")


def fingerprint() -> str:
    import transformers

    h = hashlib.sha256(aotrt_export.source_fingerprint().encode())
    h.update(transformers.__version__.encode())
    for f in (Path(llm.__file__), Path(llm.__file__).with_name("llm_models.py"),
              Path(llm.__file__).with_name("fuse_linears.py"), HERE / "models.py", HERE / "exports.py"):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def stem(name: str, kind: str, device: str) -> str:
    return f"{name}.{kind}.{device}"


def export_generation(name: str, out_dir: Path, device: str, dtype: torch.dtype = torch.float32,
                      kind: str = "generation") -> dict[str, Any]:
    src = llm.load_source(name, max_cache_len=models.MAX_CACHE_LEN)
    report = llm.export_generation(src, out_dir / stem(name, kind, device), models.MAX_CACHE_LEN,
                                   models.MAX_PREFILL_LEN, dtype, device)
    print(llm.summarize(report), flush=True)
    return report


def export_generation_bf16(name: str, out_dir: Path, device: str) -> dict[str, Any]:
    return export_generation(name, out_dir, device, torch.bfloat16, "generation_bf16")


def _torch_flow(program: Any, path: Path) -> str:
    return torch._inductor.aoti_compile_and_package(
        program, package_path=str(path), inductor_configs={"aot_inductor.link_libtorch": False})


def export_torch_flow(name: str, out_dir: Path, device: str) -> dict[str, Any]:
    case = models.CASES[name]
    model = models.build(name).to(device)
    dev = torch.device(device)
    s = stem(name, "torch", device)
    ids = torch.zeros(1, 1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    info: dict[str, Any] = {"package": str(out_dir / f"{s}.pt2")}
    t0 = time.perf_counter()
    with torch.no_grad():
        if case.family == "gptfast":
            program = torch.export.export(model, (ids, pos))
        elif case.kind == "encoder_decoder":
            cfg = model.config
            features = torch.zeros(1, cfg.num_mel_bins, 2 * cfg.max_source_positions, device=dev)
            encoder = torch.export.export(llm.WhisperEncoderGraph(model).eval(), (features,))
            info["encoder_package"] = _torch_flow(encoder, out_dir / f"{s}.encoder.pt2")
            hidden = torch.zeros(1, cfg.max_source_positions, cfg.d_model, device=dev)
            program = torch.export.export(llm.whisper_decoder_module(model, models.MAX_CACHE_LEN),
                                          (ids, hidden, pos), strict=True)
        else:
            from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

            program = TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=models.MAX_CACHE_LEN) \
                .export(input_ids=ids, cache_position=pos)
        _torch_flow(program, out_dir / f"{s}.pt2")
    info["total_s"] = round(time.perf_counter() - t0, 1)
    return info


def hf_folder(name: str, folder: Path) -> Path:
    """The model saved as a Hugging Face folder (config.json, safetensors) with a word-level
    tokenizer.json of its vocabulary (tokenizers, which transformers depends on)."""
    from tokenizers import Tokenizer, models as tok_models, pre_tokenizers

    model = models.build(name)
    model.save_pretrained(str(folder))
    vocab = model.config.vocab_size
    tok = Tokenizer(tok_models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def export_command(name: str, out_dir: Path, device: str) -> dict[str, Any]:
    """`python -m aotrt_tools.llm export` itself, on the model saved as a Hugging Face folder."""
    import subprocess
    import sys

    folder = hf_folder(name, out_dir / f"{stem(name, 'command', device)}.hf")
    out = out_dir / stem(name, "command", device)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(models.REPO / "python")] + [p for p in [env.get("PYTHONPATH")] if p])
    cmd = [sys.executable, "-m", "aotrt_tools.llm", "export", "--model", str(folder), "--out", str(out),
           "--max-cache-len", str(models.MAX_CACHE_LEN), "--max-prefill-len", str(models.MAX_PREFILL_LEN),
           "--dtype", "float32", "--device", device]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}:\n{run.stdout}\n{run.stderr[-4000:]}")
    return {"package": str(out) + ".pt2", "generation_json": str(out) + ".generation.json",
            "tokenizer_json": str(out) + ".tokenizer.json", "hf_folder": str(folder), "stdout": run.stdout}


def export_one(job: dict[str, Any]) -> dict[str, Any]:
    """Process-pool entry point: exports one (name, kind, device) into out_dir; never raises."""
    name, kind, device, out_dir = job["name"], job["kind"], job["device"], Path(job["out_dir"])
    s = stem(name, kind, device)
    try:
        t0 = time.perf_counter()
        info = {"generation": export_generation, "generation_bf16": export_generation_bf16,
                "torch": export_torch_flow, "command": export_command}[kind](name, out_dir, device)
        info.update(name=name, kind=kind, device=device, fingerprint=job["fingerprint"],
                    total_s=round(time.perf_counter() - t0, 1))
        (out_dir / f"{s}.json").write_text(json.dumps(info, indent=1, default=str))
        return info
    except Exception as e:  # noqa: BLE001 - reported to the test that needs the package
        return dict(name=name, kind=kind, device=device, error=f"{type(e).__name__}: {e}",
                    traceback=traceback.format_exc())


def export_all(jobs: list[tuple[str, str]], out_dir: Path, device: str, processes: int) -> dict[tuple[str, str], dict]:
    """(name, kind) -> export info (or {'error', 'traceback'}), reusing cached packages."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fp = fingerprint()
    results: dict[tuple[str, str], dict] = {}
    todo = []
    for name, kind in jobs:
        hit = aotrt_export.cached_export(out_dir, stem(name, kind, device), fp)
        if hit is not None:
            results[(name, kind)] = hit
        else:
            todo.append(dict(name=name, kind=kind, device=device, out_dir=str(out_dir), fingerprint=fp))
    if not todo:
        return results
    if processes <= 1 or len(todo) == 1:
        done = [export_one(j) for j in todo]
    else:  # spawned, not forked: a forked torch with OpenMP threads running is not safe
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=processes, mp_context=ctx) as pool:
            done = list(pool.map(export_one, todo))
    for info in done:
        results[(info["name"], info["kind"])] = info
    return results
