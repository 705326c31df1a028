"""What a notebook user meets around a run: the GIL released while the engine works, tqdm's bar, pandas' frames."""

import threading
import time

import numpy
import pytest

import attnscope


def test_other_threads_run_while_the_engine_works(fmnist, samples):
    """Ticks of the main thread strictly inside a worker's native call: none if the call held the GIL."""
    batch = numpy.stack([fmnist.prepare(s).input for s in samples] * 12)  # 120 images, one native call
    window = {}

    def work():
        window["start"] = time.perf_counter()
        fmnist.run(batch)
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=work)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    assert window["end"] - window["start"] > 0.1, "the call is too short to tell"
    inside = [t for t in ticks if window["start"] + 0.02 < t < window["end"] - 0.02]
    assert len(inside) >= 20, "the main thread stood still during the forward: the GIL was held"


def test_analyze_draws_a_tqdm_bar(fmnist, samples, capsys):
    pytest.importorskip("tqdm", reason="Debian's python3-tqdm is not installed")
    attnscope.analyze(fmnist, samples, analyses="similarity", progress=True)
    err = capsys.readouterr().err
    assert "analyze" in err and "10/10" in err


def test_to_pandas(fmnist, samples):
    pandas = pytest.importorskip("pandas", reason="Debian's python3-pandas is not installed")
    summary = attnscope.analyze(fmnist, samples, analyses="similarity,centres", progress=False)
    frames = summary.to_pandas()
    assert set(frames) == set(summary.tables)
    frame = summary.to_pandas("head_centres")
    assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == list(summary.tables["head_centres"])
    assert len(frame) == 12 * 4 and (frame["label"] == "fmnist-vit").all()
    numpy.testing.assert_array_equal(frame["mean_distance_px"].to_numpy(), summary.tables["head_centres"]["mean_distance_px"])
