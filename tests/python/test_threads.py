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


@pytest.mark.parametrize("name", ["transformer_encoder_layer"])
def test_gil_released_while_running(exported, name):
    info = exported(name)
    x = np.load(Path(info["out_dir"]) / f"{name}.input_0.npy")
    model = aotrt.load(info["package"])
    model(x)  # warm up
    # One call long enough to be seen: the same run repeated inside one model call would
    # need a bigger model, so time a run and let the other thread count while it lasts.
    ticks: list[float] = []
    stop = threading.Event()

    def counter() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())

    windows = []
    t = threading.Thread(target=counter)
    t.start()
    try:
        for _ in range(20):
            t0 = time.perf_counter()
            model(x)
            windows.append((t0, time.perf_counter()))
    finally:
        stop.set()
        t.join()
    # With the GIL held for a whole run, the counter could not tick inside any run (beyond
    # the moments at its two ends where the GIL is taken and given back).
    inside = sum(1 for a, b in windows for s in ticks if a + 0.25 * (b - a) < s < b - 0.25 * (b - a))
    assert inside > 0, f"no tick of another thread inside {len(windows)} runs ({windows[0][1] - windows[0][0]:.4f} s each)"
