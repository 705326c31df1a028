"""attnscope.analyze: the CLI's dataset run, file for file; resuming; Ctrl-C; its errors."""

import filecmp
import os
import signal
import subprocess

import numpy
import pytest

import attnscope
from conftest import SAMPLES

OPTIONS = dict(analyses="similarity,attention,centres,snr,norms", noise=["gaussian:sigma=8", "blur:sigma=1"], draws=2, seed=5,
               neutreno=0.6, batch=3)
CLI_OPTIONS = ["--analyses", "similarity,attention,centres,snr,norms", "--noise", "gaussian:sigma=8", "--noise", "blur:sigma=1",
               "--draws", "2", "--seed", "5", "--neutreno", "0.6", "--batch", "3", "--formats", ""]


def data_files(folder):
    """The CSVs (the analyses', the predictions', the figures') and the statistics of a run folder, relative."""
    out = []
    for root, _, files in os.walk(folder):
        for f in files:
            if f.endswith((".csv", ".npy")) or f in ("stats.json", "run.json"):
                out.append(os.path.relpath(os.path.join(root, f), folder))
    return sorted(out)


def test_the_folder_is_the_clis_byte_for_byte(cli, fmnist, tmp_path):
    compare = attnscope.load("builtin:fmnist-quadratic")
    ours = tmp_path / "python"
    summary = attnscope.analyze(fmnist, SAMPLES, out=ours, compare=compare, progress=False, **OPTIONS)
    theirs = tmp_path / "cli"
    subprocess.run([cli, "analyze", "--model", "builtin:fmnist-vit", "--compare", "builtin:fmnist-quadratic", "--images", SAMPLES,
                    "--out", str(theirs)] + CLI_OPTIONS, check=True, capture_output=True, cwd=tmp_path)
    files = data_files(ours)
    assert files == data_files(theirs)
    assert len(files) >= 20 and "runs/fmnist-quadratic/token_norms.csv" in files and "figures/snr.csv" in files
    match, mismatch, errors = filecmp.cmpfiles(ours, theirs, files, shallow=False)
    assert mismatch == [] and errors == [] and len(match) == len(files)
    # The summary is those files, read back.
    assert summary.runs == ["fmnist-vit", "fmnist-quadratic", "fmnist-vit (NeuTRENO 0.6)"]
    assert summary.outcome["done"] == 10 and summary.outcome["complete"]
    snr = summary.tables["snr_gaussian-sigma-8"]
    quadratic = snr["label"] == "fmnist-quadratic"
    with open(ours / "runs" / "fmnist-quadratic" / "snr_gaussian-sigma-8.csv") as f:
        assert quadratic.sum() == len(f.readlines()) - 1
    assert set(summary.tables) >= {"token_similarity", "head_centres", "attention_similarity", "snr_blur-sigma-1", "token_norms"}
    own = summary.run("fmnist-vit")["token_similarity"]
    with open(ours / "token_similarity.csv") as f:
        header = f.readline().strip().split(",")
        first = f.readline().strip().split(",")
    assert list(own) == header and own["mean"][0] == float(first[3]) and own["n"][0] == 10
    assert summary.predictions["label"][0] == "Ankle boot"
    with pytest.raises(attnscope.Error, match="no run 'nothing'"):
        summary.run("nothing")


def test_without_out_nothing_is_left_behind(fmnist, samples, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    tempfile.tempdir = None
    try:
        summary = attnscope.analyze(fmnist, samples[:2], analyses=["similarity"], progress=False)
    finally:
        tempfile.tempdir = None
    assert summary.out is None and summary.outcome["done"] == 2
    assert list(summary.tables) == ["token_similarity"] and summary.tables["token_similarity"]["n"][0] == 2
    assert os.listdir(tmp_path) == []


def test_progress_is_reported(fmnist, samples):
    seen = []
    attnscope.analyze(fmnist, samples, analyses="similarity", batch=2, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(samples), len(samples))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_ctrl_c_keeps_what_was_done_and_resumes(fmnist, tmp_path):
    images = [os.path.join(SAMPLES, f) for f in sorted(os.listdir(SAMPLES))] * 30  # 300 images
    out = tmp_path / "run"
    sent = []

    # Ctrl-C once 10 images are done, from the run's own progress: the KeyboardInterrupt comes in the callback or at the
    # engine's next check of signals, whichever sees it first.
    def progress(done, total):
        if done >= 10 and not sent:
            sent.append(done)
            os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, whatever started this process: a shell that puts a command in the background without
    # job control ignores SIGINT for it, and Python then installs no handler (test-fresh started by `nohup ... &` did).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            attnscope.analyze(fmnist, images, analyses="similarity,centres", out=out, batch=2, checkpoint_seconds=0, progress=progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sent
    import json

    manifest = json.load(open(out / "manifest.json"))
    assert manifest["complete"] is False and 10 <= len(manifest["images"]) < 300
    resumed = attnscope.analyze(fmnist, images, analyses="similarity,centres", out=out, batch=2, progress=False)
    assert resumed.outcome["complete"] and resumed.outcome["resumed_at"] > 0 and resumed.outcome["done"] == 300
    fresh = attnscope.analyze(fmnist, images, analyses="similarity,centres", out=tmp_path / "fresh", batch=2, progress=False)
    for name in ("token_similarity", "head_centres"):
        for column, values in fresh.tables[name].items():
            numpy.testing.assert_array_equal(resumed.tables[name][column], values, err_msg=name + " " + column)


def test_bad_options_and_files_are_named(fmnist, samples, tmp_path):
    with pytest.raises(attnscope.Error, match="batch -1: expected 0"):
        attnscope.analyze(fmnist, samples, batch=-1, progress=False)
    with pytest.raises(attnscope.Error, match="grid_images -2"):
        attnscope.analyze(fmnist, samples, grid_images=-2, progress=False)
    with pytest.raises(attnscope.Error, match="unknown analysis|similarty"):
        attnscope.analyze(fmnist, samples, analyses="similarty", progress=False)
    with pytest.raises(attnscope.Error, match="target_class 10"):
        attnscope.analyze(fmnist, samples, analyses="relevance", target_class=10, progress=False)
    with pytest.raises(attnscope.Error, match="tf32"):
        attnscope.analyze(fmnist, samples, precision="tf32", progress=False)
    with pytest.raises(attnscope.FileNotFound, match="no-such-folder"):
        attnscope.analyze(fmnist, str(tmp_path / "no-such-folder"), progress=False)
    with pytest.raises(attnscope.Error, match="noise|perturbation"):
        attnscope.analyze(fmnist, samples, noise="thunder:sigma=3", progress=False)
    broken = tmp_path / "images"
    broken.mkdir()
    (broken / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\ntruncated")
    (broken / "good.png").write_bytes(open(samples[0], "rb").read())
    summary = attnscope.analyze(fmnist, broken, analyses="similarity", progress=False)
    assert summary.outcome["skipped"] == 1 and summary.outcome["done"] == 1
    assert len(summary.skipped) == 1 and "bad.png" in summary.skipped[0]
    with pytest.raises(attnscope.Error, match="bad.png"):
        attnscope.analyze(fmnist, broken, analyses="similarity", strict=True, progress=False)


def test_ablation_over_a_set_is_the_mean_of_its_images(fmnist, samples):
    summary = attnscope.analyze(fmnist, samples[:3], analyses="ablation", ablation="mean", progress=False)
    table = summary.tables["ablation"]
    assert len(table["layer"]) == 12 * 4 and (table["n"] == 3).all()
    assert summary.manifest["options"]["ablation"] == "mean"
    per_image = [fmnist.ablate_heads(s, mode="mean") for s in samples[:3]]
    expected = numpy.mean([a["kl"] for a in per_image], axis=0)
    numpy.testing.assert_allclose(table["kl_mean"], expected, rtol=1e-6, atol=1e-10)  # the CSV's 10 digits
    numpy.testing.assert_allclose(table["flip_share"], numpy.mean([a["flip"] for a in per_image], axis=0), atol=1e-9)
    with pytest.raises(attnscope.Error, match="ablation: unknown ablation"):
        attnscope.analyze(fmnist, samples[:1], analyses="ablation", ablation="half", progress=False)


def test_query_key_maps_are_the_engines_over_the_first_images(fmnist, samples):
    summary = attnscope.analyze(fmnist, samples[:4], analyses="qkmap", qk_layer=2, qk_head=1, qk_images=3, progress=False)
    table = summary.tables["qkmap"]
    one = attnscope.query_key_map(fmnist, samples[:3], 2, 1)
    assert len(table["x"]) == len(one["x"]) == 2 * 3 * 50
    numpy.testing.assert_allclose(table["x"], one["x"], rtol=1e-9, atol=1e-12)  # the CSV's 10 digits
    assert list(table["kind"][:1]) == ["query"] and (table["layer"] == 2).all()
    assert summary.manifest["query_key"]["heads"] == 1
    heads = summary.tables["qkmap_heads"]
    numpy.testing.assert_allclose(heads["agreement"], [one["agreement"]], rtol=1e-9)
    tsne = attnscope.query_key_map(fmnist, samples[:2], 2, 1, method="tsne", seed=4)
    assert tsne["method"] == "tsne" and tsne["components"].size == 0
    numpy.testing.assert_array_equal(tsne["x"], attnscope.query_key_map(fmnist, samples[:2], 2, 1, method="tsne", seed=4)["x"])
    with pytest.raises(attnscope.Error, match="qk_layer 13: the model has layers 1..12"):
        attnscope.analyze(fmnist, samples[:1], analyses="qkmap", qk_layer=13, progress=False)
    with pytest.raises(attnscope.Error, match="are options of the qkmap analysis"):
        attnscope.analyze(fmnist, samples[:1], analyses="similarity", qk_head=1, progress=False)


def test_the_keywords_are_the_option_tables():
    """attnscope.analyze has every option of the one table (report/RunSpec.h) as a keyword with the table's default,
    and no other run option: an option added to the table and not here fails this test."""
    import inspect

    from attnscope import _native

    parameters = inspect.signature(attnscope.analyze).parameters
    doors = {"model", "images", "compare", "out", "progress"}  # what the door itself takes: files and callbacks
    table = {keyword: default for keyword, default, _ in _native.run_options()}
    assert set(parameters) - doors == set(table), "analyze()'s keywords and the option table differ"
    unset = {"noise": [], "batch": 0}  # Python's None: the table's empty list, the device's default batch
    for keyword, default in table.items():
        python = parameters[keyword].default
        if keyword == "analyses":
            python = ",".join(python)
        if python is None and keyword in unset:
            python = unset[keyword]
        assert python == default, "%s: analyze() says %r, the table %r" % (keyword, python, default)


def test_a_keyword_the_table_lacks_or_of_the_wrong_type_is_named(fmnist, samples):
    from attnscope import _native

    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        _native.analyze(fmnist._native, samples[:1], "/tmp/unused", None, None, None, {"colour": 3})
    with pytest.raises(TypeError, match="draws='two' is not an integer"):
        _native.analyze(fmnist._native, samples[:1], "/tmp/unused", None, None, None, {"draws": "two"})
    with pytest.raises(attnscope.Error, match="cuda_graph: needs a CUDA device"):
        attnscope.analyze(fmnist, samples[:1], cuda_graph=True, progress=False)
