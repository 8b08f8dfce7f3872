"""Two Python threads running two sessions at once give each its own, correct results;
run() releases the GIL (another Python thread progresses while it computes)."""
import threading

import numpy as np
import pytest

import gkrt


def model_and_feeds(build_dir, examples):
    """The zoo's transformer block when ctest wrote it (a run of a few ms), else MyNet."""
    tb = build_dir / "zoo" / "transformer_block.gkm"
    x = build_dir / "zoo" / "transformer_block_input_x.npy"
    if tb.exists() and x.exists():
        return tb, {"x": np.load(x)}
    return examples / "mynet.gkm", {"x": np.ones((4, 4), np.float32)}


def test_two_sessions_in_two_threads(build_dir, examples):
    path, feeds = model_and_feeds(build_dir, examples)
    rng = np.random.default_rng(1)
    inputs = [{k: (v + rng.standard_normal(v.shape).astype(v.dtype) * 0.1) for k, v in feeds.items()} for _ in range(2)]
    expected = [gkrt.InferenceSession(path, threads=1).run(None, f)[0] for f in inputs]
    sessions = [gkrt.InferenceSession(path, threads=1) for _ in range(2)]
    errors = []

    def work(k):
        try:
            for _ in range(20):
                np.testing.assert_allclose(sessions[k].run(None, inputs[k])[0], expected[k], rtol=1e-5, atol=1e-6)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_one_session_shared_by_threads(build_dir, examples):
    path, feeds = model_and_feeds(build_dir, examples)
    sess = gkrt.InferenceSession(path, threads=1)
    expected = sess.run(None, feeds)[0]
    results = []
    threads = [threading.Thread(target=lambda: results.append(sess.run(None, feeds)[0])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for r in results:
        np.testing.assert_array_equal(r, expected)


def test_run_releases_the_gil(build_dir, examples):
    path, feeds = model_and_feeds(build_dir, examples)
    if path.name == "mynet.gkm":
        pytest.skip("needs the zoo's transformer block (ctest writes it): MyNet runs too briefly to observe")
    sess = gkrt.InferenceSession(path, threads=1)
    sess.run(None, feeds)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        during = []
        for _ in range(5):
            before = count[0]
            sess.run(None, feeds)
            during.append(count[0] - before)
    finally:
        stop.set()
        t.join()
    # Holding the GIL through run() would leave the spinning thread at most a switch
    # interval (5 ms) per call; released, it counts through the whole run.
    assert max(during) > 1000, during
