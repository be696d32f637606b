"""Programs, sessions and generation from Python (aotrt.load_program, aotrt.load_generator), on
a tiny gpt-fast-style decoder (tests/python/small_models.py: TinyKVDecoder, its own KV cache
buffers written with index_copy_), exported two ways:

  torch_flow.pt2   torch.export + aoti_compile_and_package with only link_libtorch=False: one
                   graph "model", one token a step (idx [1, 1], input_pos [1]), as Hugging Face's
                   TorchExportableModuleForDecoderOnlyLM exports it; no aotrt metadata.
  two_graphs.pt2   graphs "decode" (T = 1) and "prefill" (T dynamic: torch.export makes its
                   minimum 2) of the same module in one archive (aot_compile + package_aoti),
                   each with its own copy of the weights.

Tokens are compared with eager greedy decoding of the same module (fp32), token for token.
With AOTRT_TEST_CUDA=1 (the GPU machine: scripts/python_gpu.sh) the packages are exported for
cuda and the same tests run there, plus sessions generating from several threads at once.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import numpy as np
import pytest

import aotrt

torch = pytest.importorskip("torch")  # the tests export with torch; aotrt itself never imports it

from small_models import TinyKVDecoder, tiny_kv_greedy  # noqa: E402

MAX_LEN = 48
OPTIONS = {"aot_inductor.link_libtorch": False}
DEVICE = "cuda" if os.environ.get("AOTRT_TEST_CUDA") == "1" else "cpu"


def _export(module, T_dynamic: bool):
    module = module.to(DEVICE)
    idx = torch.zeros(1, 4 if T_dynamic else 1, dtype=torch.int64, device=DEVICE)
    pos = torch.arange(idx.shape[1], device=DEVICE)
    dyn = None
    if T_dynamic:
        T = torch.export.Dim("T", min=1, max=MAX_LEN)
        dyn = ({1: T}, {0: T})
    return torch.export.export(module, (idx, pos), dynamic_shapes=dyn)


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("generation")
    with torch.no_grad():
        ep = _export(TinyKVDecoder(max_len=MAX_LEN), T_dynamic=False)
        torch._inductor.aoti_compile_and_package(ep, package_path=str(out / "torch_flow.pt2"),
                                                 inductor_configs=OPTIONS)
        from torch._inductor.package import package_aoti
        files = {}
        for name, dynamic in (("decode", False), ("prefill", True)):
            ep = _export(TinyKVDecoder(max_len=MAX_LEN), T_dynamic=dynamic)
            files[name] = torch._inductor.aot_compile(
                ep.module(), ep.example_inputs[0], options=dict(OPTIONS, **{"aot_inductor.package": True}))
        package_aoti(str(out / "two_graphs.pt2"), files)
    return {p.stem: p for p in out.glob("*.pt2")}


def eager_logits(tokens_by_step: list[list[int]]) -> list[np.ndarray]:
    m = TinyKVDecoder(max_len=MAX_LEN).eval()
    out, pos = [], 0
    with torch.no_grad():
        for toks in tokens_by_step:
            out.append(m(torch.tensor([toks]), torch.arange(pos, pos + len(toks))).numpy())
            pos += len(toks)
    return out


def run_steps(session, graph: str, tokens_by_step: list[list[int]]) -> list[np.ndarray]:
    out, pos = [], 0
    for toks in tokens_by_step:
        (logits,) = session.run(graph, np.array([toks], np.int64), np.arange(pos, pos + len(toks)))
        out.append(logits.numpy().copy())
        pos += len(toks)
    return out


def test_program_reads_state_from_the_package(packages):
    p = aotrt.load_program(packages["two_graphs"])
    assert sorted(p.graphs) == ["decode", "prefill"]
    names = sorted(s["name"] for s in p.state)
    assert names == ["k_cache_0", "k_cache_1", "v_cache_0", "v_cache_1"], p.state
    for s in p.state:
        assert s["sizes"] == [1, 2, MAX_LEN, 16] and s["dtype"] == "float32"
        assert sorted(s["graphs"]) == ["decode", "prefill"]
    assert p.session_state_bytes == 4 * 2 * MAX_LEN * 16 * 4
    # The weights (emb, wqkv, wo, head) are held once: the second graph's copy was given up.
    weights = sum(c.nbytes for c in p.info("decode").constants if not c.session_state)
    assert weights > 0 and p.shared_constant_bytes >= weights * 0.9, (p.shared_constant_bytes, weights)
    info = p.info("prefill")
    state = {c.original_fqn or c.name for c in info.constants if c.session_state}
    assert state == set(names)
    assert all(c.type == "parameter" for c in info.constants if c.original_fqn.startswith(("emb", "head")))


def test_two_graphs_share_a_session_cache(packages):
    p = aotrt.load_program(packages["two_graphs"])
    s = p.new_session()
    steps = [[3, 9, 4, 11], [7], [12], [5]]
    pos, got = 0, []
    for toks in steps:
        graph = "prefill" if len(toks) > 1 else "decode"
        (logits,) = s.run(graph, np.array([toks], np.int64), np.arange(pos, pos + len(toks)))
        got.append(logits.numpy().copy())
        pos += len(toks)
    for g, e in zip(got, eager_logits(steps)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_sessions_interleaved_equal_each_alone(packages):
    p = aotrt.load_program(packages["torch_flow"])
    a_steps = [[1], [2], [3], [4], [5]]
    b_steps = [[9], [8], [7], [6], [5]]
    alone_a = run_steps(p.new_session(), "model", a_steps)
    alone_b = run_steps(p.new_session(), "model", b_steps)
    sa, sb = p.new_session(), p.new_session()
    got_a, got_b, pos = [], [], 0
    for ta, tb in zip(a_steps, b_steps):
        (la,) = sa.run("model", np.array([ta], np.int64), np.array([pos]))
        (lb,) = sb.run("model", np.array([tb], np.int64), np.array([pos]))
        got_a.append(la.numpy().copy())
        got_b.append(lb.numpy().copy())
        pos += 1
    for x, y in zip(got_a, alone_a):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(got_b, alone_b):
        np.testing.assert_array_equal(x, y)
    for x, e in zip(alone_a, eager_logits(a_steps)):
        np.testing.assert_allclose(x, e, rtol=1e-5, atol=1e-5)


def test_reset_and_fork(packages):
    p = aotrt.load_program(packages["torch_flow"])
    s = p.new_session()
    first = run_steps(s, "model", [[4], [5]])
    second = run_steps(s, "model", [[4], [5]])  # positions 0, 1 again, over a written cache
    s.reset()
    again = run_steps(s, "model", [[4], [5]])
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    assert second[0].shape == first[0].shape
    # A fork carries the cache: continuing it equals continuing the original.
    s.reset()
    run_steps(s, "model", [[4], [5]])
    f = s.fork()
    (a,) = s.run("model", np.array([[6]], np.int64), np.array([2]))
    (b,) = f.run("model", np.array([[6]], np.int64), np.array([2]))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(a.numpy(), eager_logits([[4], [5], [6]])[2], rtol=1e-5, atol=1e-5)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_thousand_sessions_leave_memory_flat(packages):
    p = aotrt.load_program(packages["torch_flow"])
    for _ in range(50):  # warm the allocators
        s = p.new_session()
        s.run("model", np.array([[1]], np.int64), np.array([0]))
        del s
    gc.collect()
    before = _rss_mb()
    for i in range(1000):
        s = p.new_session()
        if i % 10 == 0:
            s.run("model", np.array([[1]], np.int64), np.array([0]))
        assert s.memory_bytes >= p.session_state_bytes
        del s
    gc.collect()
    grew = _rss_mb() - before
    # 1000 sessions of 24 KiB state each would be 24 MB if any stayed.
    assert grew < 8, f"resident memory grew {grew:.1f} MB over 1000 sessions"


def test_generate_equals_eager_greedy(packages):
    lm = aotrt.load_generator(packages["torch_flow"])
    cfg = lm.config
    assert cfg["source"] == "inferred" and cfg["max_cache_len"] == MAX_LEN
    assert cfg["decode_graph"] == "model" and cfg["prefill_graph"] == ""  # one token a step
    assert cfg["vocab_size"] == 64  # read from a scratch step: the package records no output sizes
    with pytest.raises(aotrt.InvalidArgumentError, match="outside the vocabulary"):
        lm.generate([1, 64], max_new_tokens=1)
    prompt = [3, 9, 4, 11, 2]
    expect = tiny_kv_greedy(TinyKVDecoder(max_len=MAX_LEN).eval(), prompt, 30)
    got = lm.generate(prompt, max_new_tokens=30)
    assert got == expect
    assert list(lm.stream(prompt, max_new_tokens=30)) == expect


def test_generate_two_graph_package_and_continue_a_sequence(packages):
    lm = aotrt.load_generator(packages["two_graphs"])
    assert lm.config["decode_graph"] == "decode" and lm.config["prefill_graph"] == "prefill"
    assert lm.config["max_prefill_len"] == MAX_LEN
    prompt = [3, 9, 4, 11, 2]
    expect = tiny_kv_greedy(TinyKVDecoder(max_len=MAX_LEN).eval(), prompt, 20)
    seq = lm.new_sequence()
    first = lm.generate(prompt, sequence=seq, max_new_tokens=10)
    rest = lm.generate([], sequence=seq, max_new_tokens=10)  # continues after the last token
    assert first + rest == expect
    assert seq.length == len(prompt) + 20 - 1 or seq.length == len(prompt) + 20


def test_sequences_generate_from_four_threads(packages):
    import threading
    lm = aotrt.load_generator(packages["torch_flow"])
    prompts = [[3, 9, 4], [1, 2, 3, 4], [7], [12, 5, 6, 30]]
    alone = [lm.generate(p, max_new_tokens=40) for p in prompts]
    got: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            seq = lm.new_sequence()
            for _ in range(3):  # graphs captured on the second step, replayed after
                seq.reset()
                got[i] = lm.generate(prompts[i], sequence=seq, max_new_tokens=40)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert [got[i] for i in range(4)] == alone
    expect = tiny_kv_greedy(TinyKVDecoder(max_len=MAX_LEN).eval(), prompts[0], 40)
    assert alone[0] == expect


def test_seeded_sampling_is_reproducible(packages):
    lm = aotrt.load_generator(packages["torch_flow"])
    kw = dict(max_new_tokens=24, temperature=1.5, top_k=20, top_p=0.95)
    a = lm.generate([1, 2, 3], seed=7, **kw)
    b = lm.generate([1, 2, 3], seed=7, **kw)
    c = lm.generate([1, 2, 3], seed=8, **kw)
    assert a == b
    assert a != c  # 24 draws at temperature 1.5 from ~20 tokens: equal by chance ~never


def test_generation_errors_leave_the_sequence_usable(packages):
    lm = aotrt.load_generator(packages["torch_flow"])
    seq = lm.new_sequence()
    with pytest.raises(aotrt.InvalidArgumentError, match="does not fit the cache"):
        lm.generate(list(range(MAX_LEN + 1)), sequence=seq, max_new_tokens=1)
    with pytest.raises(aotrt.InvalidArgumentError, match="outside the vocabulary|top_p"):
        lm.generate([1, 2], sequence=seq, max_new_tokens=1, top_p=0.0, temperature=1.0)
    with pytest.raises(aotrt.InvalidArgumentError, match="temperature must be >= 0"):
        lm.generate([1, 2], sequence=seq, max_new_tokens=1, temperature=-0.5)
    assert seq.length == 0
    expect = tiny_kv_greedy(TinyKVDecoder(max_len=MAX_LEN).eval(), [1, 2], 5)
    assert lm.generate([1, 2], sequence=seq, max_new_tokens=5) == expect
    # Generation stops at the end of the cache.
    r = lm.generate([1], max_new_tokens=1000, return_result=True)
    assert r.stop_reason == "cache_full" and len(r.tokens) == MAX_LEN


def test_a_session_refuses_a_position_past_the_cache_and_a_wrong_dtype(packages):
    p = aotrt.load_program(packages["torch_flow"])
    s = p.new_session()
    good = run_steps(s, "model", [[4], [5]])
    # Past the cache: on the CPU the generated code's bounds check refuses the index (no write
    # happens). On CUDA that check is a device-side assert, which ends the process's CUDA
    # context: the generation API refuses such positions on the host before anything runs
    # (test_generation_errors_leave_the_sequence_usable); a raw session run cannot tell a
    # position input from any other.
    if DEVICE == "cpu":
        with pytest.raises(aotrt.Error, match="out of bounds|index"):
            s.run("model", np.array([[6]], np.int64), np.array([MAX_LEN]))
    with pytest.raises(aotrt.Error):
        s.run("model", np.array([[6]], np.int32), np.array([2]))  # int32 ids: the model's input checks
    with pytest.raises(aotrt.Error):
        s.run("model", np.array([[6, 7]], np.int64), np.array([2, 3]))  # two tokens into a 1-token graph
    # The session is as it was: continuing gives eager's logits for the third token.
    (third,) = s.run("model", np.array([[6]], np.int64), np.array([2]))
    np.testing.assert_allclose(third.numpy(), eager_logits([[4], [5], [6]])[2], rtol=1e-5, atol=1e-5)
    assert good[0].shape == third.numpy().shape


def test_sequences_destroyed_mid_stream_leak_nothing(packages):
    lm = aotrt.load_generator(packages["torch_flow"])

    def cycle():
        seq = lm.new_sequence()
        stream = lm.stream([1, 2, 3], sequence=seq, max_new_tokens=40)
        taken = [next(stream) for _ in range(3)]
        stream.close()  # the generation stops after the token being made
        del seq
        return taken

    for _ in range(20):
        first = cycle()
    gc.collect()
    before = _rss_mb()
    for _ in range(300):
        assert cycle() == first
    gc.collect()
    grew = _rss_mb() - before
    assert grew < 8, f"resident memory grew {grew:.1f} MB over 300 sequences stopped mid-stream"
