"""The module's numbers against the golden files the C++ tests use (tests/golden: timm, Hugging Face and torchvision
computed them; README there): every fixture's logits, attention and block outputs, and the analyses of two cases."""

import csv
import json
import os

import numpy
import pytest

import attnscope
from conftest import GOLDEN, golden_tolerance, near

FIXTURES = sorted(d for d in os.listdir(os.path.join(GOLDEN, "fixtures")) if os.path.isfile(os.path.join(GOLDEN, "fixtures", d, "model.safetensors")))


def cases_of(name):
    """(folder of the reference files, input size or None): the fixture itself, or its at_HxW folders (timm_size_*)."""
    folder = os.path.join(GOLDEN, "fixtures", name)
    meta = json.load(open(os.path.join(folder, "meta.json")))
    if os.path.isfile(os.path.join(folder, "input.npy")):
        size = meta["input_size"] if "native_input_size" in meta else None
        return [(folder, size)]
    sizes = []
    for sub in sorted(os.listdir(folder)):
        if sub.startswith("at_"):
            h, w = sub[3:].split("x")
            sizes.append((os.path.join(folder, sub), [int(h), int(w)]))
    return sizes


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_matches_its_reference(name):
    fixture = os.path.join(GOLDEN, "fixtures", name)
    meta = json.load(open(os.path.join(fixture, "meta.json")))
    loaded = attnscope.load(fixture)
    cases = cases_of(name)
    assert cases
    for folder, size in cases:
        model = loaded.at_input_size(*size) if size else loaded
        x = numpy.load(os.path.join(folder, "input.npy"))[0]
        trace = model.run(x)
        checked = 0
        for file in sorted(os.listdir(folder)):
            stem, _ = os.path.splitext(file)
            ref = numpy.load(os.path.join(folder, file)) if file.endswith(".npy") else None
            if stem == "logits":
                actual = trace.logits
            elif stem.startswith("attn_L"):
                actual = trace.attention(int(stem[6:]))
            elif stem.startswith("block_L"):
                actual = trace.block(int(stem[7:]))
            else:
                continue
            assert actual.shape == ref.shape, (folder, file)
            assert numpy.abs(actual - ref).max() <= golden_tolerance(ref), (folder, file)
            checked += 1
        assert checked >= 1 + meta["num_layers"], folder


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(params=["tv_timm_image", "tv_grid16_image"])
def case(request):
    folder = os.path.join(GOLDEN, "analyses", request.param)
    spec = json.load(open(os.path.join(folder, "case.json")))
    model = attnscope.load(os.path.join(GOLDEN, "fixtures", os.path.basename(spec["fixture"])))
    clean = model.run(numpy.load(os.path.join(folder, "input.npy"))[0])
    noisy = model.run(numpy.load(os.path.join(folder, "input_noisy.npy"))[0])
    return folder, spec, model, clean, noisy


def test_token_similarity(case):
    folder, _, _, clean, _ = case
    rows = read_rows(os.path.join(folder, "token_similarity.csv"))
    got = attnscope.token_similarity(clean)
    assert len(got["value"]) == len(rows)
    for i, r in enumerate(rows):
        assert (got["layer"][i], got["tap"][i], got["tokens"][i]) == (int(r["layer"]), r["tap"], r["tokens"])
        assert near(got["value"][i], float(r["value"]))
    L = clean.depth
    ref = numpy.load(os.path.join(folder, "cosine_matrix_L%d.npy" % L))
    assert numpy.abs(attnscope.token_cosine_matrix(clean.block(L)) - ref).max() <= 1e-4 * max(numpy.abs(ref).max(), 1e-2)


def test_attention_maps_and_rollout(case):
    folder, _, _, clean, _ = case
    maps = json.load(open(os.path.join(folder, "attention_maps.json")))
    for m in maps["maps"]:
        got = attnscope.attention_map(clean, m["layer"], m["head"], m["query"])
        numpy.testing.assert_allclose(got["patches"].ravel(), numpy.ravel(m["map"]), atol=1e-4 * max(numpy.abs(m["map"]).max(), 1e-2))
        assert near(got["prefix_mass"], m["prefix_mass"])
        renorm = attnscope.attention_map(clean, m["layer"], m["head"], m["query"], renormalise=True)
        numpy.testing.assert_allclose(renorm["patches"].ravel(), numpy.ravel(m["map_renormalised"]), atol=1e-4)
    ref = numpy.load(os.path.join(folder, "rollout.npy"))
    assert numpy.abs(attnscope.rollout(clean) - ref).max() <= 1e-4 * numpy.abs(ref).max()
    grid = attnscope.attention_grid(clean, query=0)
    assert grid["maps"].shape == (clean.depth, clean.heads + 1) + clean.grid
    numpy.testing.assert_allclose(grid["rollout"], attnscope.rollout_map(clean, attnscope.rollout(clean), 0)["patches"], atol=1e-12)


def test_attention_similarity(case):
    folder, _, _, clean, _ = case
    rows = read_rows(os.path.join(folder, "attention_similarity.csv"))
    got = attnscope.attention_similarity(clean)
    for i, r in enumerate(rows):
        assert near(got["successive_cos"][i], float(r["successive_cos"]))
        assert near(got["head_redundancy"][i], float(r["head_redundancy"]))


def test_head_centres(case):
    folder, _, model, clean, _ = case
    rows = read_rows(os.path.join(folder, "head_centres.csv"))
    got = attnscope.head_centres(clean, model)
    maps = numpy.load(os.path.join(folder, "offset_maps.npy"))
    assert len(got["layer"]) == len(rows)
    for i, r in enumerate(rows):
        assert (got["layer"][i], got["head"][i]) == (int(r["layer"]), int(r["head"]))
        for column in ("centre_dy", "centre_dx", "peak_dy", "peak_dx", "mean_distance_px", "bandwidth", "prefix_mass", "window_mass",
                       "contour50", "contour90"):
            assert near(got[column][i], float(r[column])), (i, column)
        expected = maps[got["layer"][i] - 1, got["head"][i]]
        if not numpy.isnan(expected[0, 0]):
            assert numpy.abs(got["offset_map"][i] - expected).max() <= 1e-4 * max(numpy.abs(expected).max(), 1e-2)


def test_signal_to_noise(case):
    folder, _, _, clean, noisy = case
    got = attnscope.snr(clean, noisy)
    rows = read_rows(os.path.join(folder, "snr.csv"))
    assert list(got["snr"]["tap"]) == [r["tap"] for r in rows]
    for value, r in zip(got["snr"]["snr_db"], rows):
        assert near(value, float(r["snr_db"]))
    diag = read_rows(os.path.join(folder, "snr_diagnostics.csv"))
    for i, r in enumerate(diag):
        for column in ("alpha", "beta", "gamma", "gain", "bound", "sensitivity"):
            assert near(got["diagnostics"][column][i], float(r[column])), column
        assert got["diagnostics"]["condition_holds"][i] == float(r["condition_holds"])


def test_logit_decomposition(case):
    folder, spec, model, _, _ = case
    got = attnscope.logit_decomposition(model, numpy.load(os.path.join(folder, "input.npy"))[0])
    queries = spec["decomposition_queries"]
    for name, key in (("tt", "tt"), ("tp", "tp"), ("pt", "pt"), ("pp", "pp"), ("s1", "logits")):
        ref = numpy.load(os.path.join(folder, "decomposition_%s.npy" % name))
        assert numpy.abs(got[key][:, queries] - ref).max() <= 1e-4 * numpy.abs(ref).max(), name
    total = got["tt"].astype(numpy.float64) + got["tp"] + got["pt"] + got["pp"]
    assert numpy.abs(total - got["logits"]).max() < 1e-4


def test_the_perturbation_is_the_engines_seeded_draw(case):
    folder, spec, model, clean, _ = case
    if "image.png" not in os.listdir(os.path.join(GOLDEN, "fixtures", os.path.basename(spec["fixture"]))):
        pytest.skip("the fixture has no image")
    prepared = model.prepare(os.path.join(GOLDEN, "fixtures", os.path.basename(spec["fixture"]), "image.png"))
    a = model.perturb(prepared, "gaussian:sigma=8", seed=3)
    b = model.perturb(prepared, "gaussian:sigma=8", seed=3)
    c = model.perturb(prepared, "gaussian:sigma=8", seed=4)
    numpy.testing.assert_array_equal(a, b)
    assert not numpy.array_equal(a, c)
    std = numpy.array(model.config["preprocess"]["std"]).reshape(-1, 1, 1)
    # gaussian:sigma=8 in 0..255 units, through the normalisation: sd 8 / 255 / std per channel
    numpy.testing.assert_allclose(((a - prepared.input) * std * 255).std(), 8.0, rtol=0.25)
