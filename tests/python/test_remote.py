"""attnscope.connect: the module's API on a remote engine (docs/python.md, "On a remote engine") gives the local
module's numbers. The host is this machine, reached through tests/remote/local-ssh.sh (ssh's stand-in, ATTNSCOPE_SSH)
running the CLI of a build whose server has the methods Python uses; every comparison is exact (the wire carries
float32 tensors and float64 numbers as their bytes, and both ends run the same code on them)."""

import filecmp
import os
import shutil
import subprocess
import threading

import numpy
import pytest

import attnscope
from conftest import SAMPLES, SOURCE

LOCAL_SSH = os.path.join(SOURCE, "tests", "remote", "local-ssh.sh")
# The methods attnscope.connect asks for beyond the window's (remote/RemoteTensors.cpp).
PYTHON_METHODS = ("forward", "prepare", "trace_tensor")


@pytest.fixture(scope="module")
def host_env(tmp_path_factory):
    """ssh's stand-in, and a cache of sent files of this module's own (the server keeps them in XDG_CACHE_HOME)."""
    saved = {k: os.environ.get(k) for k in ("ATTNSCOPE_SSH", "XDG_CACHE_HOME")}
    os.environ["ATTNSCOPE_SSH"] = LOCAL_SSH
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def serve_cli(host_env):
    """An attnscope-cli of this LibTorch whose server answers Python's methods: ATTNSCOPE_CLI (ctest's), else the first
    of build/release, build/headless and build/python that does."""
    candidates = [os.environ.get("ATTNSCOPE_CLI")] + [os.path.join(SOURCE, "build", p, "app", "attnscope-cli")
                                                      for p in ("release", "headless", "python")]
    why = []
    for path in candidates:
        if not path or not os.access(path, os.X_OK):
            continue
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        if "(LibTorch %s)" % attnscope._native.torch_version not in version:
            why.append("%s is built against another LibTorch" % path)
            continue
        with attnscope.connect("localhost:" + path) as probe:
            try:
                probe._link.call("trace_tensor", {})
            except attnscope.Error as e:
                if "no method" in str(e):
                    why.append("%s's server predates %s (rebuild it)" % (path, ", ".join(PYTHON_METHODS)))
                    continue
        return path
    pytest.skip("no attnscope-cli to serve the remote tests: " + ("; ".join(why) or "build build/release (or set ATTNSCOPE_CLI)"))


@pytest.fixture(scope="module")
def engine(serve_cli):
    with attnscope.connect("localhost:" + serve_cli) as e:
        yield e


@pytest.fixture(scope="module")
def remote_fmnist(engine):
    return engine.load("builtin:fmnist-vit")


def same(a, b, path="result"):
    """Equal to the bit: arrays of one dtype and shape (NaN where NaN), numbers, strings, and dicts and lists of them."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), path
        for k in a:
            same(a[k], b[k], "%s[%r]" % (path, k))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (path, i))
    elif isinstance(a, numpy.ndarray):
        b = numpy.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert numpy.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, float):
        assert (a != a and b != b) or a == b, "%s: %r != %r" % (path, a, b)
    else:
        assert a == b, "%s: %r != %r" % (path, a, b)


def test_the_model_is_described_as_locally(fmnist, remote_fmnist, engine):
    assert remote_fmnist.config == fmnist.config
    info, local = remote_fmnist.info, fmnist.info
    assert {k: v for k, v in info.items()} == {k: v for k, v in local.items()}
    assert remote_fmnist.classes == fmnist.classes and remote_fmnist.name == "fmnist-vit"
    assert "fmnist-vit on localhost" in repr(remote_fmnist) and engine.device == remote_fmnist.device
    assert engine.hello["server"].startswith("attnscope-cli ")


def test_logits_predictions_and_taps_are_the_local_ones(fmnist, remote_fmnist, samples):
    for path in samples:
        here, there = fmnist.run(path), remote_fmnist.run(path)
        same(here.logits, there.logits)
        assert remote_fmnist.predict(path, k=3) == fmnist.predict(path, k=3)
    here, there = fmnist.run(samples[0]), remote_fmnist.run(samples[0])
    assert (there.depth, there.heads, there.prefix_tokens, there.grid) == (here.depth, here.heads, here.prefix_tokens, here.grid)
    same(here.input, there.input)
    for layer in range(1, here.depth + 1):
        same(here.attention(layer), there.attention(layer))
        same(here.attn_branch(layer), there.attn_branch(layer))
        same(here.residual(layer), there.residual(layer))
    for layer in range(0, here.depth + 1):
        same(here.block(layer), there.block(layer))
    same(here.attention(7)[2], there.attention_head(7, 2))
    same(fmnist.prepare(samples[0]).shown, there.shown)
    prepared = remote_fmnist.prepare(samples[0])
    same(fmnist.prepare(samples[0]).input, prepared.input)
    same(here.logits, remote_fmnist.run(prepared).logits)
    # An input tensor crosses as it is; pixels as a PNG the host decodes to the same pixels.
    same(here.logits, remote_fmnist.run(fmnist.prepare(samples[0]).input).logits)
    pixels = numpy.array(fmnist.prepare(samples[1]).shown)
    same(fmnist.run(pixels).logits, remote_fmnist.run(pixels).logits)
    # Model.run's options.
    same(fmnist.run(samples[2], neutreno=0.6, ablate=(3, 1)).logits, remote_fmnist.run(samples[2], neutreno=0.6, ablate=(3, 1)).logits)
    batch = remote_fmnist.run(samples[:3])
    assert len(batch) == 3 and all(numpy.array_equal(fmnist.run(p).logits, t.logits) for p, t in zip(samples[:3], batch))


def test_the_analyses_are_the_local_ones(fmnist, remote_fmnist, engine, samples):
    image = samples[4]
    here, there = fmnist.run(image), remote_fmnist.run(image)
    for layer, head, query, renormalise in ((12, -1, 0, False), (1, 2, 17, True), (6, 0, 49, False)):
        same(attnscope.attention_map(here, layer, head, query, renormalise),
             attnscope.attention_map(there, layer, head, query, renormalise))
    same(attnscope.attention_grid(here), engine.attention_grid(there))
    same(attnscope.attention_grid(here, query=20, fusion="max", discard=0.5),
         attnscope.attention_grid(there, query=20, fusion="max", discard=0.5))
    same(attnscope.rollout(here, "min", 0.2), attnscope.rollout(there, "min", 0.2))
    same(attnscope.rollout_map(here, attnscope.rollout(here), 3), attnscope.rollout_map(there, attnscope.rollout(there), 3))
    same(attnscope.token_similarity(here), attnscope.token_similarity(there))
    same(attnscope.attention_similarity(here), attnscope.attention_similarity(there))
    same(attnscope.head_centres(here, fmnist, radius=2), attnscope.head_centres(there, remote_fmnist, radius=2))
    same(attnscope.token_norms(here, fmnist, 3.0), attnscope.token_norms(there, remote_fmnist, 3.0))
    same(attnscope.relevance(fmnist, image, target_class=3), attnscope.relevance(remote_fmnist, image, target_class=3))
    same(attnscope.logit_decomposition(fmnist, image), attnscope.logit_decomposition(remote_fmnist, image))
    same(attnscope.query_key_map(fmnist, samples[:3], 4, 1), attnscope.query_key_map(remote_fmnist, samples[:3], 4, 1))
    # The host ablates one head per request, each ablated forward alone: the local run's with batch=1.
    same(attnscope.head_ablation(fmnist, image, batch=1), attnscope.head_ablation(remote_fmnist, image))
    # The SNR of a perturbed input made on the host.
    noisy_here = fmnist.run(fmnist.perturb(image, "gaussian:sigma=8", seed=3))
    noisy_input = remote_fmnist.perturb(image, "gaussian:sigma=8", seed=3)
    same(fmnist.perturb(image, "gaussian:sigma=8", seed=3), noisy_input)
    same(attnscope.snr(here, noisy_here), attnscope.snr(there, remote_fmnist.run(noisy_input)))
    # What the local module refuses, the remote refuses with the same words.
    for call in (lambda t: attnscope.attention_map(t, 13), lambda t: t.attention(0), lambda t: attnscope.attention_map(t, 2, head=4)):
        with pytest.raises(attnscope.Error) as local_error:
            call(here)
        with pytest.raises(attnscope.Error) as remote_error:
            call(there)
        assert str(remote_error.value) == str(local_error.value)
    sparse = remote_fmnist.run(image, record=["blocks"])
    with pytest.raises(attnscope.Error, match=r"attention of layer 2 was not recorded"):
        sparse.attention(2)


def test_a_trace_the_host_dropped_is_made_again(fmnist, remote_fmnist, samples):
    first = remote_fmnist.run(samples[0])
    for path in samples[1:10]:  # the host keeps 8 (serve --max-traces)
        remote_fmnist.run(path)
    same(fmnist.run(samples[0]).attention(5), first.attention(5))


def test_threads_share_a_remote_trace_as_a_local_one(fmnist, remote_fmnist, samples):
    here, there = fmnist.run(samples[3]), remote_fmnist.run(samples[3])
    read = {}

    def reader(layer):
        read[layer] = (there.attention(layer), attnscope.attention_map(there, layer, 1, 5 + layer), attnscope.token_similarity(there))

    threads = [threading.Thread(target=reader, args=(layer,)) for layer in range(1, here.depth + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for layer in range(1, here.depth + 1):
        same((here.attention(layer), attnscope.attention_map(here, layer, 1, 5 + layer), attnscope.token_similarity(here)), read[layer])


def test_analyze_summarises_as_locally(fmnist, remote_fmnist, engine, tmp_path):
    options = dict(analyses="similarity,attention,centres,snr,norms,ablation", noise=["gaussian:sigma=8", "blur:sigma=1"], draws=2, seed=5,
                   neutreno=0.6, batch=3, progress=False)
    here = attnscope.analyze(fmnist, SAMPLES, out=tmp_path / "here", compare=attnscope.load("builtin:fmnist-quadratic"), **options)
    seen = []
    there = attnscope.analyze(remote_fmnist, SAMPLES, out=tmp_path / "there", compare="builtin:fmnist-quadratic",
                              **dict(options, progress=lambda done, total: seen.append((done, total))))
    assert there.runs == here.runs == ["fmnist-vit", "fmnist-quadratic", "fmnist-vit (NeuTRENO 0.6)"]
    same(here.tables, there.tables)
    assert there.outcome["done"] == 10 and seen[-1] == (10, 10)
    # Each run's statistics and CSVs, file for file.
    written = sorted(os.path.relpath(os.path.join(r, f), tmp_path / "there") for r, _, fs in os.walk(tmp_path / "there") for f in fs)
    data = [f for f in written if not f.endswith("run.json")]
    assert "stats.json" in data and "runs/fmnist-quadratic/token_norms.csv" in data and "ablation.csv" in data
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "here", tmp_path / "there", data, shallow=False)
    assert mismatch == [] and errors == [], (mismatch, errors)
    # Without out, in a temporary folder; an image the host cannot read is named by its path here.
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    skipped = engine.analyze(remote_fmnist, [SAMPLES, str(broken)], analyses="similarity", progress=False)
    assert skipped.outcome["skipped"] == 1 and skipped.skipped[0].startswith(str(broken) + ": ") and skipped.out is None
    with pytest.raises(attnscope.Error, match=r"^localhost: analyze: decomposition, relevance and qkmap"):
        engine.analyze(remote_fmnist, SAMPLES, analyses="relevance", progress=False)


def test_a_model_file_here_is_sent_once(engine, tmp_path, samples):
    source = os.path.join(SOURCE, "resources", "models", "fmnist-vit")
    alone = tmp_path / "fmnist.safetensors"  # without the config.json beside it: inferred, as it loads here
    shutil.copy(os.path.join(source, "model.safetensors"), alone)
    local = attnscope.load(alone)
    before = engine.statistics()["bytes_sent"]
    first = engine.load(alone)
    sent = engine.statistics()["bytes_sent"] - before
    assert sent > os.path.getsize(alone)
    again = engine.load(alone)
    assert engine.statistics()["bytes_sent"] - before - sent < 4096  # has_file and load_model only
    assert first.path == str(alone) and again.config == local.config and again.name == "fmnist"
    same(local.run(samples[0]).logits, again.run(samples[0]).logits)
    # A checkpoint and its description, each a file of this machine.
    family = os.path.join(SOURCE, "tests", "golden", "families", "vitpytorch_vit")
    (tmp_path / "weights").mkdir()
    (tmp_path / "descriptions").mkdir()
    shutil.copy(os.path.join(family, "model.pt"), tmp_path / "weights" / "vit.pt")
    shutil.copy(os.path.join(family, "attnscope.json"), tmp_path / "descriptions" / "vit.json")
    local = attnscope.load(tmp_path / "weights" / "vit.pt", description=tmp_path / "descriptions" / "vit.json")
    remote = engine.load(tmp_path / "weights" / "vit.pt", description=tmp_path / "descriptions" / "vit.json")
    assert remote.config == local.config
    pixels = numpy.random.default_rng(7).integers(0, 256, (16, 16, 3), dtype=numpy.uint8)
    same(local.run(pixels).logits, remote.run(pixels).logits)
    # A file whose folder holds what its loader reads beside it is not sent without them.
    with pytest.raises(attnscope.Error, match=r"model\.safetensors: a model folder on this machine cannot be sent to localhost yet"):
        engine.load(os.path.join(source, "model.safetensors"))


def test_an_unreachable_host_says_so_with_ssh_s_last_line(host_env, tmp_path, monkeypatch):
    ssh = tmp_path / "ssh"
    ssh.write_text("#!/bin/sh\necho \"ssh: connect to host $1 port 22: Connection refused\" >&2\nexit 255\n")
    ssh.chmod(0o755)
    monkeypatch.setenv("ATTNSCOPE_SSH", str(ssh))
    with pytest.raises(attnscope.Error) as e:
        attnscope.connect("me@gpu-07")
    assert str(e.value).startswith("me@gpu-07: the engine is unreachable (")
    assert str(e.value).endswith(": ssh: connect to host me@gpu-07 port 22: Connection refused") and "\n" not in str(e.value)
    monkeypatch.setenv("ATTNSCOPE_SSH", LOCAL_SSH)
    with pytest.raises(attnscope.Error, match=r"^localhost: the engine is unreachable \(.*/nowhere/attnscope-cli.*not found"):
        attnscope.connect("localhost:/nowhere/attnscope-cli")
    with pytest.raises(attnscope.Error, match=r"is not \[USER@\]HOST\[:PATH\]"):
        attnscope.connect("@")


def test_the_link_closes_with_the_handle(serve_cli, samples):
    with attnscope.connect("localhost:" + serve_cli) as e:
        model = e.load("builtin:fmnist-vit")
        trace = model.run(samples[0])
        assert not e.closed
    assert e.closed and "closed" in repr(e)
    with pytest.raises(attnscope.Error, match=r"^localhost: the link is closed"):
        trace.attention(3)
    with pytest.raises(attnscope.Error, match=r"^localhost: the link is closed"):
        model.run(samples[0])


def test_python_s_methods_refuse_wrong_params_by_name(engine, remote_fmnist, samples):
    """forward, prepare and trace_tensor (remote/RemoteTensors.cpp) check their params before anything runs."""
    kept = remote_fmnist.run(samples[0])  # released on the host when it goes
    model, trace = remote_fmnist._native.id, kept.id
    cases = [
        ("forward", {"model": model}, r"give one of \"image\""),
        ("forward", {"model": model, "input": {"dtype": "float32", "shape": [3, 28, 28], "data": None}}, r"\"input\""),
        ("forward", {"model": model, "image": samples[0], "ablate": [1]}, r"\"ablate\" is \[1\], not \[layer, head\]"),
        ("forward", {"model": model, "image": samples[0], "precision": "fp8"}, r"\"precision\""),
        ("forward", {"model": model, "image": "/nonexistent/cat.png"}, r"/nonexistent/cat\.png"),
        ("prepare", {"model": model, "image": samples[0], "perturbation": "fog:density=3"}, r"\"perturbation\""),
        ("prepare", {"model": model, "image": samples[0], "perturbation": "gaussian:sigma=8", "seed": -1}, r"\"seed\""),
        ("trace_tensor", {"trace": trace, "tensor": "values", "layer": 1}, r"\"tensor\" is \"values\""),
        ("trace_tensor", {"trace": trace, "tensor": "block", "layer": 13}, r"block of layer 13: the trace's layers are 0 to 12"),
        ("trace_tensor", {"trace": trace, "tensor": "attention", "layer": 1, "head": 4}, r"\"head\" 4"),
        ("trace_tensor", {"trace": trace, "tensor": "residual", "layer": 1, "head": 0}, r"\"head\" 0"),
        ("trace_tensor", {"trace": trace, "tensor": "rollout", "rollout": {"discard": 1.5}}, r"discard 1\.5"),
        ("trace_tensor", {"trace": 99999, "tensor": "input"}, r"no trace 99999"),
    ]
    for method, params, message in cases:
        with pytest.raises(attnscope.Error, match=r"^localhost: .*" + message):
            engine._link.call(method, params)


def test_a_swin_on_the_host_is_the_local_one(serve_cli, samples, tmp_path, monkeypatch):
    """A Swin over the link (docs/python.md, "Swin"; docs/remote.md, "A Swin"): its blocks, maps per block at the stage
    grid, the grid per block, the per-window attention and one head of it, the query-key map and analyze's tables are
    the local module's, bit for bit; the rollout and token norms refused in the same words."""
    folder = os.path.join(SOURCE, "tests", "golden", "swin", "timm_swin")
    home = tmp_path / "home"
    (home / "models" / "timm_swin").mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(folder, name), home / "models" / "timm_swin" / name)
    monkeypatch.setenv("ATTNSCOPE_LINK_HOME", str(home))  # the host's home: a folder here is not sent
    local = attnscope.load(folder)
    with attnscope.connect("localhost:" + serve_cli) as engine:
        remote = engine.load("models/timm_swin")
        assert remote.config == local.config and remote.config["hierarchy"] == "swin"
        here, there = local.run(samples[0]), remote.run(samples[0])
        same(here.logits, there.logits)
        assert there.windows == here.windows and [b["heads"] for b in there.windows] == [2, 2, 4, 4, 8, 8]
        for layer, head, query in ((2, 1, 5 * 16 + 6), (3, -1, 86), (6, 7, 0), (4, 3, 255)):
            same(attnscope.attention_map(here, layer, head, query), attnscope.attention_map(there, layer, head, query))
        same(attnscope.attention_grid(here), attnscope.attention_grid(there))
        same(attnscope.attention_grid(here, query=40), attnscope.attention_grid(there, query=40))
        same(here.attention(3), there.attention(3))
        same(numpy.ascontiguousarray(here.attention(5)[:, 6]), there.attention_head(5, 6))
        same(attnscope.head_centres(here, local), attnscope.head_centres(there, remote))
        same(attnscope.query_key_map(local, samples[:2], 3, 1), attnscope.query_key_map(remote, samples[:2], 3, 1))
        for call in (lambda t, m: attnscope.rollout(t), lambda t, m: attnscope.token_norms(t, m),
                     lambda t, m: attnscope.attention_map(t, 1, head=2)):
            with pytest.raises(attnscope.Error) as local_error:
                call(here, local)
            with pytest.raises(attnscope.Error) as remote_error:
                call(there, remote)
            assert str(remote_error.value) == str(local_error.value)
        options = dict(analyses="similarity,attention,centres,snr,ablation", noise="gaussian:sigma=8", seed=3, progress=False)
        a = attnscope.analyze(local, SAMPLES, out=tmp_path / "here", **options)
        b = engine.analyze(remote, SAMPLES, out=tmp_path / "there", **options)
        same(a.tables, b.tables)
        assert list(b.tables["head_centres"])[1:3] == ["layer", "stage"]
