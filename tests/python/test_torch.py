"""import torch and import attnscope in one process: one LibTorch, and arrays that torch takes without a copy."""

import warnings

import numpy
import pytest

import attnscope

torch = pytest.importorskip("torch", reason="this Python has no torch")


def same_libtorch():
    mine = attnscope._native.torch_version.split(".")[:2]
    theirs = torch.__version__.split("+")[0].split(".")[:2]
    return mine == theirs


pytestmark = pytest.mark.skipif(not same_libtorch(), reason="attnscope was built against another LibTorch than this Python's torch")


def test_one_libtorch_is_loaded(fmnist):
    fmnist.run(numpy.zeros((1, 28, 28), dtype=numpy.float32), record="none")
    torch.ones(2) @ torch.ones(2)
    loaded = attnscope._loaded_libtorch()
    assert len(loaded) == 1, loaded


def test_attention_round_trips_through_torch(fmnist, samples):
    trace = fmnist.run(samples[0])
    for layer in (1, 6, 12):
        a = trace.attention(layer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch warns of read-only arrays (docs/python.md)
            t = torch.from_numpy(a)
        assert t.dtype == torch.float32 and tuple(t.shape) == a.shape
        assert t.data_ptr() == a.__array_interface__["data"][0], "a view, not a copy"
        assert torch.equal(t, torch.tensor(numpy.array(a)))
        torch.testing.assert_close(t.sum(-1), torch.ones(a.shape[:2]), atol=1e-5, rtol=0)


def test_torch_computes_the_same_token_similarity(fmnist, samples):
    """cs(Z) = (|sum z^|^2 - M) / (M (M - 1)) of docs/analyses.md section 1, in torch float64, against the engine's."""
    trace = fmnist.run(samples[1])
    got = attnscope.token_similarity(trace)
    for i in range(len(got["value"])):
        if got["tap"][i] != "block":
            continue
        z = torch.from_numpy(trace.block(int(got["layer"][i]))).double()
        if got["tokens"][i] == "patches":
            z = z[trace.prefix_tokens:]
        unit = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
        m = z.shape[0]
        expected = (unit.sum(0).pow(2).sum() - m) / (m * (m - 1))
        assert abs(got["value"][i] - expected.item()) <= 1e-6
