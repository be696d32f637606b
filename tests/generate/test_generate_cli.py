"""`aotrt generate` and `aotrt info`, the command-line tool (build/aotrt, or AOTRT_BIN), on the
CPU generation package of tests/generate/exports.py (llama-tiny: prefill and decode graphs):

- greedy with --json: the new tokens equal transformers' generate with its eos (the package's
  eos ids, as the CLI uses them by default), and the timing fields are there and consistent;
- without --json: the same ids printed as they come, the summary on stderr;
- seeded sampling: one seed, the same tokens; another seed, other tokens;
- bad input (a prompt longer than the cache, a malformed id list, a negative temperature): exit
  status 1 and one `aotrt: error:` line, never a signal;
- `aotrt info` on a package of several graphs shows each of them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from tests.generate import models

REPO = Path(__file__).resolve().parents[2]
NAME = "llama-tiny"


def _cli(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    path = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"aotrt binary not found at {path}: build it (scripts/build.sh) or set AOTRT_BIN", pytrace=False)
    return subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _ids(tokens: list[int]) -> str:
    return ",".join(str(t) for t in tokens)


@pytest.fixture(scope="module")
def reference() -> list[int]:
    """transformers' greedy tokens for PROMPT, stopping at the model's eos (included)."""
    with torch.no_grad():
        return models.hf_greedy(models.build(NAME), models.prompt_ids(), models.NEW_TOKENS, stop_at_eos=True).tokens


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
def test_cli_generate_json_equals_reference(name, package, cpu_packages, reference, generate_report, request):
    pkg = cpu_packages(name, package)["package"]
    r = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--max-new-tokens", models.NEW_TOKENS, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    generate_report[request.node.name] = (f"{len(out['tokens'])} tokens ({out['stop_reason']}), TTFT "
                                          f"{out['ttft_ms']:.1f} ms, {out['tokens_per_s']:.0f} tokens/s")
    assert out["tokens"] == reference, f"\n reference {reference}\n aotrt     {out['tokens']}"
    assert out["stop_reason"] == ("eos" if len(reference) < models.NEW_TOKENS else "max_new_tokens")
    assert out["prompt_tokens"] == len(models.PROMPT) and out["device"] == "cpu"
    assert out["ttft_ms"] > 0 and out["total_ms"] >= out["ttft_ms"] and out["tokens_per_s"] > 0
    itl = out["inter_token_ms"]
    assert 0 < itl["min"] <= itl["p50"] <= itl["p90"] <= itl["p99"] <= itl["max"], itl


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
def test_cli_generate_warmup_reports_the_call_after_it(name, package, cpu_packages, reference):
    """--warmup N (Note [Warm TTFT]): N calls in sequences of their own first, then the reported
    one, whose tokens are the reference's (the warm-up left no state behind); the first call's
    TTFT comes beside it."""
    pkg = cpu_packages(name, package)["package"]
    r = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--max-new-tokens", models.NEW_TOKENS,
             "--warmup", 2, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["tokens"] == reference, f"\n reference {reference}\n aotrt     {out['tokens']}"
    assert out["warmup"] == 2 and out["first_call_ttft_ms"] > 0 and out["ttft_ms"] > 0, out
    cold = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--max-new-tokens", 2, "--json")
    out = json.loads(cold.stdout.strip().splitlines()[-1])
    assert out["warmup"] == 0 and "first_call_ttft_ms" not in out, out
    bad = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--warmup", -1)
    assert bad.returncode == 1 and bad.stderr.startswith("aotrt: error:"), bad.stderr


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
def test_cli_generate_prints_tokens_as_they_come(name, package, cpu_packages, reference):
    pkg = cpu_packages(name, package)["package"]
    r = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--max-new-tokens", models.NEW_TOKENS)
    assert r.returncode == 0, r.stderr
    assert [int(t) for t in r.stdout.split()] == reference
    assert f"aotrt: {len(reference)} new tokens" in r.stderr and "tokens/s" in r.stderr, r.stderr


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
def test_cli_generate_seeded_sampling(name, package, cpu_packages):
    pkg = cpu_packages(name, package)["package"]

    def sample(seed: int) -> list[int]:
        r = _cli("generate", pkg, "--prompt-ids", _ids(models.PROMPT), "--max-new-tokens", 24, "--eos", 0,
                 "--temperature", 1.5, "--top-k", 50, "--top-p", 0.95, "--seed", seed, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])["tokens"]

    first = sample(7)
    assert sample(7) == first
    assert sample(8) != first, "seeds 7 and 8 drew the same 24 tokens"


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
@pytest.mark.parametrize("bad,says", [
    (("--prompt-ids", _ids([1] * (models.MAX_CACHE_LEN + 1))), "cache"),
    (("--prompt-ids", "1,x,3"), "--prompt-ids"),
    (("--prompt-ids", "1,2", "--temperature", -1), "temperature"),
], ids=["prompt-past-cache", "bad-ids", "negative-temperature"])
def test_cli_generate_refuses_bad_input(name, package, bad, says, cpu_packages):
    pkg = cpu_packages(name, package)["package"]
    r = _cli("generate", pkg, *bad, "--max-new-tokens", 4)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "aotrt: error:" in r.stderr and says in r.stderr, r.stderr


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [NAME])
def test_cli_info_shows_every_graph(name, package, cpu_packages):
    pkg = cpu_packages(name, package)["package"]
    r = _cli("info", pkg)
    assert r.returncode == 0, r.stdout + r.stderr
    for graph in ("decode", "prefill"):
        assert f"== graph {graph} " in r.stdout and f"model: {graph} (" in r.stdout, r.stdout
    one = _cli("info", pkg, "--model-name", "decode")
    assert one.returncode == 0 and "== graph" not in one.stdout and "model: decode (" in one.stdout, one.stdout
