"""attnscope.load, Model, prepare, run, Trace and predict, against the engine's own numbers and definitions."""

import os

import numpy
import pytest

import attnscope
from conftest import SAMPLES, SHARED, SOURCE


def test_builtins_load_with_their_config():
    names = attnscope.builtins()
    assert "fmnist-vit" in names and "fmnist-neutreno" in names
    model = attnscope.load("builtin:fmnist-vit")
    c = model.config
    assert (c["depth"], c["heads"], c["width"], c["patch_size"], c["image_size"], c["channels"]) == (12, 4, 64, 4, (28, 28), 1)
    assert c["tokens"] == 1 + 7 * 7 and c["grid"] == (7, 7) and c["preprocess"]["resize"] in ("exact", "shortest-edge", "none", "cover")
    assert model.classes[9] == "Ankle boot" and model.name == "fmnist-vit" and model.device == "cpu"
    assert model.info["naming"] == "timm" and model.info["parameters"] > 0


def test_prepare_takes_paths_arrays_and_pil_images_alike(fmnist, samples):
    from PIL import Image

    by_path = fmnist.prepare(samples[0])
    pixels = numpy.asarray(Image.open(samples[0]))
    by_array = fmnist.prepare(pixels)
    by_pil = fmnist.prepare(Image.open(samples[0]))
    by_rgb = fmnist.prepare(numpy.repeat(pixels[:, :, None], 3, axis=2))  # converted to grey as the model wants
    for p in (by_array, by_pil, by_rgb):
        numpy.testing.assert_array_equal(p.input, by_path.input)
    assert by_path.input.shape == (1, 28, 28) and by_path.input.dtype == numpy.float32
    assert by_path.shown.shape == (28, 28) and by_path.shown.dtype == numpy.uint8
    numpy.testing.assert_array_equal(by_path.shown, pixels)
    # (pixel / 255 - mean) / std, the model's own normalisation
    pre = fmnist.config["preprocess"]
    expected = (pixels.astype(numpy.float64) / 255 - pre["mean"][0]) / pre["std"][0]
    numpy.testing.assert_allclose(by_path.input[0], expected, atol=1e-6)
    assert not by_path.input.flags.writeable, "the arrays view the engine's tensors: read-only"


def test_a_larger_image_is_resized_as_described(fmnist):
    pixels = (numpy.arange(56 * 56) % 251).astype(numpy.uint8).reshape(56, 56)
    prepared = fmnist.prepare(pixels)
    assert prepared.shown.shape == (28, 28)
    assert "56×56 → 28×28" in fmnist.describe_preparation(56, 56, 1)
    assert fmnist.describe_preparation(28, 28, 1) == ""


def test_run_records_what_is_asked(fmnist, samples):
    trace = fmnist.run(fmnist.prepare(samples[0]))
    L, H, N, D = 12, 4, 50, 64
    assert trace.logits.shape == (10,) and trace.depth == L and trace.heads == H and trace.grid == (7, 7)
    for l in range(1, L + 1):
        a = trace.attention(l)
        assert a.shape == (H, N, N)
        numpy.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
        assert trace.attn_branch(l).shape == (N, D) and trace.residual(l).shape == (N, D)
        # R_l = X_{l-1} + U_l (docs/analyses.md, "Notation")
        numpy.testing.assert_allclose(trace.residual(l), trace.block(l - 1) + trace.attn_branch(l), atol=1e-5)
    assert trace.block(0).shape == (N, D)
    only = fmnist.run(samples[0], record=["attention"], layers=[3])
    numpy.testing.assert_array_equal(only.attention(3), trace.attention(3))
    with pytest.raises(attnscope.Error, match="attention of layer 4 was not recorded"):
        only.attention(4)
    with pytest.raises(attnscope.Error, match="block output of layer 1 was not recorded"):
        only.block(1)
    with pytest.raises(attnscope.Error, match="layers are 1..12"):
        trace.attention(13)
    numpy.testing.assert_array_equal(fmnist.run(samples[0], record="none").logits, trace.logits)


def test_a_batch_gives_the_traces_of_its_images(fmnist, samples):
    prepared = [fmnist.prepare(s) for s in samples[:3]]
    batch = fmnist.run(prepared)
    stacked = fmnist.run(numpy.stack([p.input for p in prepared]), record="none")
    assert len(batch) == len(stacked) == 3
    for p, t, s in zip(prepared, batch, stacked):
        alone = fmnist.run(p)
        numpy.testing.assert_allclose(t.logits, alone.logits, atol=1e-5)
        numpy.testing.assert_allclose(t.attention(12), alone.attention(12), atol=1e-5)
        numpy.testing.assert_allclose(s.logits, alone.logits, atol=1e-5)


def test_predict_is_the_softmax_of_the_logits(fmnist, samples):
    for path in samples:
        logits = fmnist.run(path, record="none").logits.astype(numpy.float64)
        probabilities = numpy.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        order = numpy.argsort(-probabilities, kind="stable")[:5]
        top = fmnist.predict(path)
        assert [p.index for p in top] == list(order)
        numpy.testing.assert_allclose([p.probability for p in top], probabilities[order], rtol=1e-12, atol=1e-15)
        assert top[0].label == fmnist.classes[order[0]]
    # the sample files are named after their class
    assert fmnist.predict(os.path.join(SAMPLES, "test-0000-ankle-boot.png"), k=1)[0].label == "Ankle boot"


def test_variants_are_run_options(samples):
    vit = attnscope.load("builtin:fmnist-vit")
    plain = vit.run(samples[0])
    neutreno = vit.run(samples[0], neutreno=0.6)
    assert neutreno.neutreno_lambda == 0.6 and plain.neutreno_lambda == 0.0
    assert not numpy.allclose(neutreno.block(12), plain.block(12))
    numpy.testing.assert_array_equal(neutreno.block(0), plain.block(0))  # the variant acts inside the blocks
    boosted = vit.run(samples[0], boost=0.3)
    assert boosted.boost_t == 0.3
    # R_l = U_l + t X_0 + (1 - t) X_{l-1}
    numpy.testing.assert_allclose(boosted.residual(2), boosted.attn_branch(2) + 0.3 * boosted.block(0) + 0.7 * boosted.block(1), atol=1e-5)


def test_bad_input_raises_one_line_errors(fmnist, tmp_path):
    with pytest.raises(attnscope.FileNotFound, match="nothing-here.safetensors"):
        attnscope.load(tmp_path / "nothing-here.safetensors")
    with pytest.raises(FileNotFoundError):
        fmnist.prepare(str(tmp_path / "absent.png"))
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(attnscope.Error) as e:
        fmnist.prepare(broken)
    assert "broken.png" in str(e.value) and not isinstance(e.value, FileNotFoundError) and "\n" not in str(e.value)
    not_a_model = tmp_path / "notes.safetensors"
    not_a_model.write_text("hello")
    with pytest.raises(attnscope.Error, match="notes.safetensors"):
        attnscope.load(not_a_model)
    with pytest.raises(ValueError, match="uint8"):
        fmnist.prepare(numpy.zeros((28, 28), dtype=numpy.float32))
    with pytest.raises(attnscope.Error, match=r"\(H, W\), \(H, W, 1\) or \(H, W, 3\)"):
        fmnist.prepare(numpy.zeros((28, 28, 4), dtype=numpy.uint8))
    with pytest.raises(attnscope.Error, match="record: unknown tap 'attn'"):
        fmnist.run(numpy.zeros((1, 28, 28), dtype=numpy.float32), record="attn")
    with pytest.raises(attnscope.Error, match="precision"):
        fmnist.run(numpy.zeros((1, 28, 28), dtype=numpy.float32), precision="fp8")
    with pytest.raises(attnscope.Error):
        fmnist.run(numpy.zeros((1, 27, 28), dtype=numpy.float32))  # not a multiple of the patch size
    with pytest.raises(TypeError):
        fmnist.prepare(42)


def test_a_checkpoint_with_its_description(tmp_path):
    checkpoint = os.path.join(SHARED, "models", "cifar10-vit-tintn", "model_final.pt")
    description = os.path.join(SOURCE, "docs", "examples", "cifar10-vit-tintn.json")
    if not os.path.exists(checkpoint):
        pytest.skip("the shared CIFAR-10 checkpoint (../shared/models/cifar10-vit-tintn) is not here")
    with pytest.raises(attnscope.Error):
        attnscope.load(checkpoint)  # its tensor names follow no convention: it needs its description
    model = attnscope.load(checkpoint, description=description)
    assert model.config["classes"] == 10
