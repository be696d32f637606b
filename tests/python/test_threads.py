"""Several Python threads running one Model: every result bitwise equal to the serial run of
the same input, and the GIL released while a model runs (other threads make progress)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import aotrt

THREADS = 4
RUNS_PER_THREAD = 6


@pytest.mark.parametrize("name", ["resnet_basic_block"])
def test_threads_match_serial(exported, name):
    info = exported(name)
    x0 = np.load(Path(info["out_dir"]) / f"{name}.input_0.npy")
    model = aotrt.load(info["package"])
    rng = np.random.default_rng(1)
    inputs = [(x0 + rng.standard_normal(x0.shape, dtype=np.float32)).astype(np.float32)
              for _ in range(THREADS * RUNS_PER_THREAD)]
    serial = [model(x)[0].numpy().copy() for x in inputs]

    got: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def worker(k: int) -> None:
        try:
            start.wait()
            for j in range(k, len(inputs), THREADS):
                got[j] = model(inputs[j])[0].numpy()
        except BaseException as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(got) == list(range(len(inputs)))
    for j, want in enumerate(serial):
        assert np.array_equal(got[j], want), f"run {j}: differs from the serial run"


def test_gil_released_while_running(small_packages):
    """Another thread, waking every 0.5 ms, gets the GIL in the middle of a run.

    Were the GIL held for a run, that thread could only tick between runs (and around the
    call's two ends, where the interpreter may switch threads); the middle half of every
    run would see none."""
    model = aotrt.load(small_packages["slow_matmuls"])
    x = np.random.default_rng(0).standard_normal((512, 512), dtype=np.float32)
    model(x)  # warm up
    ticks: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            time.sleep(0.0005)
            ticks.append(time.perf_counter())

    windows = []
    t = threading.Thread(target=ticker)
    t.start()
    try:
        for _ in range(5):
            t0 = time.perf_counter()
            model(x)
            windows.append((t0, time.perf_counter()))
    finally:
        stop.set()
        t.join()
    runs_ms = [round(1e3 * (b - a), 2) for a, b in windows]
    assert min(runs_ms) > 4, f"runs too short to tell ({runs_ms} ms)"
    inside = [sum(1 for s in ticks if a + (b - a) / 4 < s < b - (b - a) / 4) for a, b in windows]
    assert any(n > 0 for n in inside), f"ticks in the middle half of each run: {inside} (runs {runs_ms} ms)"
