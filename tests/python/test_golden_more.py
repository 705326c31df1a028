"""The module's relevance, token norms, rollout options and variants against the golden files of the C++ tests
(tests/golden/relevance, token_norms, rollout, variants; made by make_relevance.py, make_token_norms.py,
make_rollout.py and make_variants.py from independent PyTorch code). Tolerances as those tests state them."""

import json
import os

import numpy
import pytest

import attnscope
from conftest import GOLDEN


def fixture(name):
    folder = os.path.join(GOLDEN, "fixtures", name)
    return attnscope.load(folder), numpy.load(os.path.join(folder, "input.npy"))[0]


def close(got, ref, rel=1e-4):
    got, ref = numpy.asarray(got, dtype=numpy.float64).ravel(), numpy.asarray(ref, dtype=numpy.float64).ravel()
    assert got.shape == ref.shape
    assert numpy.abs(got - ref).max() <= rel * numpy.abs(ref).max()


def test_relevance():
    model, x = fixture("tv_grid16")
    classes = json.load(open(os.path.join(GOLDEN, "relevance", "classes.json")))
    for target in (-1, classes["other"]):
        r = attnscope.relevance(model, x, target_class=target)
        cls = classes["predicted"] if target == -1 else target
        assert r["target_class"] == cls and r["gradcam_layer"] == 2
        gae = numpy.load(os.path.join(GOLDEN, "relevance", "gae_%d.npy" % cls))
        close(r["gae_tokens"], gae)
        close(r["gae"], gae[1:])
        close(r["gradcam"], numpy.load(os.path.join(GOLDEN, "relevance", "gradcam_%d_L2.npy" % cls)))
        first = model.relevance(x, target_class=target, gradcam_layer=1)
        close(first["gradcam"], numpy.load(os.path.join(GOLDEN, "relevance", "gradcam_%d_L1.npy" % cls)))
    with pytest.raises(attnscope.Error, match="class 10 is outside the model's 0..9"):
        attnscope.relevance(model, x, target_class=10)


@pytest.mark.parametrize("name", ["tv_grid16", "timm_dinov2_reg"])
def test_token_norms(name):
    model, x = fixture(name)
    folder = os.path.join(GOLDEN, "token_norms", name)
    summary = json.load(open(os.path.join(folder, "summary.json")))
    norms_ref = numpy.load(os.path.join(folder, "norms.npy")).astype(numpy.float64)
    received_ref = numpy.load(os.path.join(folder, "received.npy")).astype(numpy.float64)
    got = attnscope.token_norms(model.run(x, record=["blocks", "attention"]), model, summary["ratio"])
    assert list(got["layer"]) == list(range(len(summary["layers"])))
    flagged = 0
    for l, ref in enumerate(summary["layers"]):
        assert numpy.abs(got["norms"][l] - norms_ref[l]).max() <= 1e-5 * norms_ref[l].max()
        for column, key in (("patch_median", "median"), ("max_ratio", "max_ratio"), ("cls_ratio", "cls_ratio"),
                            ("register_ratio", "register_ratio")):
            if ref[key] is None:
                assert numpy.isnan(got[column][l])
            else:
                assert abs(got[column][l] - ref[key]) <= 1e-5 * abs(ref[key])
        assert list(got["outlier_tokens"][l]) == ref["outliers"] and got["outliers"][l] == len(ref["outliers"])
        flagged += len(ref["outliers"])
        if "outlier_attention" in ref:
            assert numpy.abs(got["attention_received"][l] - received_ref[l]).max() <= 1e-6
            assert abs(got["outlier_attention"][l] - ref["outlier_attention"]) <= 1e-6
            assert abs(got["prefix_attention"][l] - ref["prefix_attention"]) <= 1e-6
        else:
            assert numpy.isnan(got["outlier_attention"][l]) and numpy.isnan(got["attention_received"][l]).all()
    assert flagged > 0


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("share", ["0.0", "0.5", "0.9"])
def test_rollout_fusions_and_discards(fusion, share):
    model, x = fixture("tv_grid16")
    ref = numpy.load(os.path.join(GOLDEN, "rollout", "rollout_%s_%s.npy" % (fusion, share)))  # rows 0 and 137 of R
    got = attnscope.rollout(model.run(x, record="attention"), fusion=fusion, discard=float(share))
    close(got[[0, 137]], ref)


VARIANTS = sorted(d for d in os.listdir(os.path.join(GOLDEN, "variants")) if os.path.isdir(os.path.join(GOLDEN, "variants", d)))


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants(variant):
    folder = os.path.join(GOLDEN, "variants", variant)
    model, x = fixture("tv_timm")
    parts = variant.split("_")
    options = {parts[i]: float(parts[i + 1]) for i in range(0, len(parts), 2)}
    trace = model.run(x, **options)
    close(trace.logits, numpy.load(os.path.join(folder, "logits.npy")))
    for file in sorted(os.listdir(folder)):
        if file.startswith("attn_L"):
            close(trace.attention(int(file[6:-4])), numpy.load(os.path.join(folder, file)))
        elif file.startswith("block_L"):
            close(trace.block(int(file[7:-4])), numpy.load(os.path.join(folder, file)))


@pytest.mark.parametrize("name,golden", [("tv_timm", "tv_timm"), ("tv_hf", "tv_timm"), ("timm_dinov2_reg", "timm_dinov2_reg")])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_head_ablation(name, golden, mode):
    import csv

    model, x = fixture(name)
    with open(os.path.join(GOLDEN, "ablation", "%s_%s.csv" % (golden, mode)), newline="") as f:
        rows = list(csv.DictReader(f))
    got = attnscope.head_ablation(model, x, mode=mode)
    assert got["mode"] == mode and len(got["layer"]) == len(rows)
    for column in ("dlogit", "dprob", "kl"):
        ref = numpy.array([float(r[column]) for r in rows])
        assert numpy.abs(got[column] - ref).max() <= 1e-4 * numpy.abs(ref).max(), column
    assert list(got["flip"]) == [int(r["flip"]) for r in rows]
    # One ablated run, as the window makes it: its logit of the clean class moves by dlogit.
    clean = model.run(x, record="none").logits
    c = int(numpy.argmax(clean))
    assert got["predicted"] == c
    i = int(numpy.argmax(numpy.abs(got["dlogit"])))
    one = model.run(x, record="none", ablate=(int(got["layer"][i]), int(got["head"][i])), ablation=mode).logits
    assert abs((one[c] - clean[c]) - got["dlogit"][i]) <= 1e-4 * numpy.abs(got["dlogit"]).max()
    # ... and its prediction is the one head_ablation gives for that head, with its probability.
    assert got["ablated_class"][i] == int(numpy.argmax(one))
    p = numpy.exp(one - one.max()) / numpy.exp(one - one.max()).sum()
    assert abs(got["ablated_probability"][i] - p[int(numpy.argmax(one))]) <= 1e-5
    with pytest.raises(attnscope.Error, match="unknown ablation"):
        model.run(x, ablate=(1, 0), ablation="half")


@pytest.mark.parametrize("name", ["tv_timm", "timm_dinov2_reg"])
def test_query_key_map(name):
    model, x = fixture(name)
    golden = json.load(open(os.path.join(GOLDEN, "qkmap", name + ".json")))
    images = [x, numpy.ascontiguousarray(x[..., ::-1])]  # the input and its mirror, as make_qkmap.py
    for ref in golden["heads"]:
        got = attnscope.query_key_map(model, images, ref["layer"], ref["head"])
        assert abs(got["scale"] - ref["scale"]) <= 1e-5 * ref["scale"]
        assert abs(got["agreement"] - ref["agreement"]) <= 1e-3
        largest = max(numpy.abs(ref["x"]).max(), numpy.abs(ref["y"]).max())
        assert numpy.abs(got["x"] - ref["x"]).max() <= 1e-4 * largest
        assert numpy.abs(got["y"] - ref["y"]).max() <= 1e-4 * largest
        n = len(got["x"]) // 4
        assert list(got["kind"][:2 * n]) == ["query"] * (2 * n) and got["image"][n] == 1 and got["row"][0] == -1


def test_families_open_as_in_the_engine():
    """The folders of tests/golden/families open in Python as in the CLI (docs/models.md, "Families"): vit-pytorch's
    SimpleViT by its tensor names with vit-pytorch's logits, timm's RoPE-Mixed ViT and EVA-02 with timm's logits,
    Hugging Face's DINOv3 with transformers' pooled output, and timm's relpos ViT refused naming what it lacks."""
    folder = os.path.join(GOLDEN, "families", "vitpytorch_simplevit")
    model = attnscope.load(os.path.join(folder, "model.pt"))
    assert model.info["family"] == "vit-pytorch SimpleViT"
    assert "position: fixed 2-D sin-cos (posemb_sincos_2d), vit-pytorch SimpleViT's layout" in model.info["inferred"]
    assert model.config["position"] == "sincos2d" and model.config["attention_width"] == 48
    x = numpy.load(os.path.join(folder, "input.npy"))[0]
    close(model.run(x, record="none").logits, numpy.load(os.path.join(folder, "logits.npy")))
    for name, position in (("timm_vit_rope_mixed", "rotary"), ("timm_eva02", "learned+rotary"), ("hf_dinov3", "rotary")):
        folder = os.path.join(GOLDEN, "families", name)
        model = attnscope.load(folder)
        assert model.config["position"] == position
        x = numpy.load(os.path.join(folder, "input.npy"))[0]
        close(model.run(x, record="none").logits, numpy.load(os.path.join(folder, "logits.npy")))
    folder = os.path.join(GOLDEN, "families", "timm_siglip")  # SigLIP's attention-pool head: its map is pool_attention
    model = attnscope.load(folder)
    assert model.config["pooling"] == "attention-pool"
    trace = model.run(numpy.load(os.path.join(folder, "input.npy"))[0], record="attention")
    close(trace.logits, numpy.load(os.path.join(folder, "logits.npy")))
    close(trace.pool_attention, numpy.load(os.path.join(folder, "pool.npy")))
    with pytest.raises(attnscope.Error, match=r"vit_relpos_small_patch16_224: attnscope does not run relative position embedding"):
        attnscope.load(os.path.join(GOLDEN, "families", "timm_relpos"))


def test_a_swin_per_stage(samples):
    """A Swin in Python (docs/python.md, "Swin"): timm's logits and per-window maps, its blocks' stages; a patch's map
    at block 3 (stage 2) is its window's row at the 8x8 stage grid, placed as timm places tokens in windows
    (window_tokens_L3.npy), NaN outside; the grid per block, no rollout; token norms refused; analyze's CSVs with the
    stage column."""
    folder = os.path.join(GOLDEN, "swin", "timm_swin")
    model = attnscope.load(folder)
    assert model.config["hierarchy"] == "swin" and [s["heads"] for s in model.config["stages"]] == [2, 4, 8]
    trace = model.run(numpy.load(os.path.join(folder, "input.npy"))[0])
    close(trace.logits, numpy.load(os.path.join(folder, "logits.npy")))
    close(trace.attention(2), numpy.load(os.path.join(folder, "attn_L2.npy")))
    assert [b["stage"] for b in trace.windows] == [1, 1, 2, 2, 3, 3] and trace.windows[1]["shift"] == (2, 2)
    query = 5 * 16 + 6  # patch (5, 6): token (2, 3) of stage 2's 8x8 grid
    m = attnscope.attention_map(trace, 3, 1, query)
    assert m["patches"].shape == (8, 8)
    keys = numpy.load(os.path.join(folder, "window_tokens_L3.npy")).astype(int)
    w, r = [(w, r) for w in range(keys.shape[0]) for r in range(keys.shape[1]) if keys[w, r] == 2 * 8 + 3][0]
    expected = numpy.full(64, numpy.nan)
    expected[keys[w]] = numpy.load(os.path.join(folder, "attn_L3.npy"))[w, 1, r]  # no padding at this grid
    numpy.testing.assert_allclose(m["patches"].ravel(), expected, atol=1e-4)
    grid = attnscope.attention_grid(trace, query)
    assert [g.shape for g in grid["maps"]][::2] == [(3, 16, 16), (5, 8, 8), (9, 4, 4)] and grid["rollout"] is None
    assert grid["blocks"][1] == "stage 1, block 2 (shifted)"
    with pytest.raises(attnscope.Error, match="no rollout of a hierarchical model"):
        attnscope.rollout(trace)
    with pytest.raises(attnscope.Error, match=r"token norms: not of a hierarchical \(Swin\) model yet"):
        attnscope.token_norms(trace, model)
    # The query-key map of block 3: timm's queries and keys of the merged 8x8 tokens (make_swin_qk.py), normalised and
    # projected as docs/analyses.md section 9 says, in numpy.
    qk = attnscope.query_key_map(model, [numpy.load(os.path.join(folder, "input.npy"))[0]], 3, 1)
    assert qk["stage"] == 1 and qk["grid"] == (8, 8) and not qk["cosine"] and len(qk["x"]) == 128
    rows = numpy.load(os.path.join(folder, "qk_L3.npy")).astype(numpy.float64)[:, :, 8:16]  # head 1 of 4, d = 8
    q, k = rows[0], rows[1] - rows[1].mean(0) + rows[0].mean(0)
    a = numpy.sqrt(numpy.linalg.norm(k, axis=1).mean() / numpy.linalg.norm(q, axis=1).mean())
    joint = numpy.concatenate([q * a, k / a])
    joint -= joint.mean(0)
    top = numpy.linalg.eigh(joint.T @ joint)[1][:, ::-1][:, :2].T
    top *= numpy.sign(top[numpy.arange(2), numpy.abs(top).argmax(1)])[:, None]
    xy = joint @ top.T
    numpy.testing.assert_allclose(numpy.stack([qk["x"], qk["y"]], 1), xy, atol=1e-3 * numpy.abs(xy).max())
    summary = attnscope.analyze(model, samples[:2], analyses=("similarity", "centres"), progress=False)
    assert list(summary.tables["token_similarity"])[1:3] == ["layer", "stage"]  # after the run's label
    assert list(summary.tables["head_centres"]["stage"])[-1] == 3
