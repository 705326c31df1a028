"""attnscope: where vision transformers attend, from Python.

The engine of the attnscope window and of ``attnscope-cli`` (the same C++ code, the same numbers): load a ViT
checkpoint (timm, Hugging Face, torchvision, a description .json or ``builtin:NAME``), run images through it with its
attention and token streams recorded, and compute the analyses of docs/analyses.md on one image or on a dataset.
docs/python.md has the whole API and a worked example.

    >>> import attnscope
    >>> model = attnscope.load("builtin:fmnist-vit")
    >>> trace = model.run(model.prepare("shirt.png"))
    >>> trace.attention(12).shape          # [heads, tokens, tokens], rows sum to 1
    >>> attnscope.token_similarity(trace)   # a dict of numpy columns, named as the CLI's CSVs

On a GPU node, through ssh (docs/python.md, "On a remote engine"): the same calls, run there.

    >>> engine = attnscope.connect("gpu-07")
    >>> model = engine.load("builtin:fmnist-vit")
    >>> trace = model.run("shirt.png")          # a file here is sent once; the trace stays on the host
    >>> attnscope.attention_map(trace, 12)      # its rows cross, the map is made here
"""

import functools as _functools
import inspect as _inspect
import os as _os
import sys as _sys

from ._errors import Error, FileNotFound
from . import _native
from ._summary import Summary

_native._set_error_classes(Error, FileNotFound)

from . import _remote  # noqa: E402 (after the error classes, which its native half raises)
from ._remote import RemoteEngine, RemoteModel, RemotePrepared, RemoteTrace, connect  # noqa: E402

# A wheel carries the embedded models beside the module; the build tree's module finds them in the sources.
_resources = _os.path.join(_os.path.dirname(__file__), "resources")
if _os.path.isdir(_os.path.join(_resources, "models")) and "ATTNSCOPE_RESOURCES" not in _os.environ:
    _os.environ["ATTNSCOPE_RESOURCES"] = _resources

__version__ = _native.version()
Prepared = _native.Prepared
Trace = _native.Trace

__all__ = [
    "Error", "FileNotFound", "Model", "Prepared", "Trace", "Summary", "Prediction", "load", "builtins", "analyze", "fashion_mnist",
    "set_threads", "token_similarity", "token_cosine_similarity", "token_cosine_matrix", "attention_map", "rollout",
    "rollout_map", "attention_grid", "attention_similarity", "head_centres", "snr", "token_norms", "head_ablation", "query_key_map", "logit_decomposition",
    "relevance", "TAPS", "ANALYSES", "connect", "RemoteEngine", "RemoteModel", "RemoteTrace", "RemotePrepared",
]

# The taps a run can record (docs/analyses.md, "Notation"): A_l, U_l, R_l, X_l.
TAPS = ("attention", "attn_branch", "residual", "blocks")
# The analyses of a dataset run (attnscope-cli analyze --analyses).
ANALYSES = ("similarity", "attention", "centres", "snr", "decomposition", "relevance", "norms", "ablation", "qkmap")


def _loaded_libtorch():
    """The LibTorch CPU libraries mapped into this process, as real paths (Linux; empty elsewhere)."""
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ")[-1]
                if _os.path.basename(path).startswith("libtorch_cpu.so"):
                    found.add(_os.path.realpath(path))
    except OSError:
        pass
    return sorted(found)


def _check_one_libtorch():
    loaded = _loaded_libtorch()
    if len(loaded) > 1:
        raise ImportError(
            "two LibTorch builds are loaded in this process (" + " and ".join(loaded) + "): attnscope was built against "
            "LibTorch " + _native.torch_version + "; rebuild it against this Python's torch (pip install "
            "--no-build-isolation . in the environment that has it; docs/python.md, One LibTorch)")


_check_one_libtorch()


class Prediction(tuple):
    """One of a model's top classes: (index, label, probability); label is "class k" where the model names none."""

    __slots__ = ()

    def __new__(cls, index, label, probability):
        return tuple.__new__(cls, (index, label, probability))

    index = property(lambda self: self[0])
    label = property(lambda self: self[1])
    probability = property(lambda self: self[2])

    def __repr__(self):
        return "Prediction(index=%d, label=%r, probability=%.6f)" % self


def _record_flags(record):
    if record is None or record == "none":
        return set()
    if record == "all":
        return set(TAPS)
    names = {record} if isinstance(record, str) else set(record)
    unknown = sorted(names - set(TAPS))
    if unknown:
        raise Error("record: unknown tap %s (expected \"all\", \"none\" or some of %s)" % (", ".join(map(repr, unknown)), ", ".join(TAPS)))
    return names


def _is_pil_image(x):
    return type(x).__module__.startswith("PIL.") and hasattr(x, "convert") and hasattr(x, "mode")


class Model:
    """A loaded vision transformer (attnscope.load). Immutable; safe to share between threads."""

    def __init__(self, native):
        self._native = native

    def __repr__(self):
        c = self.config
        return "<attnscope.Model %s: %d layers x %d heads, width %d, %dx%d input, on %s>" % (
            self.name, c["depth"], c["heads"], c["width"], c["image_size"][0], c["image_size"][1], self.device)

    @property
    def path(self):
        """What it was loaded from (a file, a folder or builtin:NAME)."""
        return self._native.path

    @property
    def name(self):
        """The name figures and output folders use: builtin:fmnist-vit -> fmnist-vit, /m/vit.safetensors -> vit."""
        return _native.model_name(self._native.path)

    @property
    def config(self):
        """The resolved architecture and preprocessing, as a dict (depth, heads, width, patch_size, grid, ...)."""
        return self._native.config

    @property
    def info(self):
        """Where the model came from: weights file, format, naming convention, family, guesses, ignored config keys."""
        return self._native.info

    @property
    def device(self):
        return self._native.device

    @property
    def classes(self):
        """The class names the checkpoint or its description gives, or None where it gives none."""
        labels = self._native.labels
        return list(labels) if labels else None

    def prepare(self, image):
        """The image as the model sees it: a path, a numpy uint8 array (H x W grey, H x W x 3 RGB) or a PIL image.

        Returns a Prepared with .input (float32 [C, H, W], normalised) and .shown (uint8: the resized, cropped image).
        """
        if isinstance(image, Prepared):
            return image
        if isinstance(image, (str, bytes, _os.PathLike)):
            return self._native.prepare_path(_os.fsdecode(image))
        if _is_pil_image(image):
            import numpy
            grey = image.mode in ("1", "L", "LA", "I", "I;16", "F")
            image = numpy.asarray(image.convert("L" if grey else "RGB"))
        if hasattr(image, "__array_interface__"):
            return self._native.prepare_pixels(image)
        raise TypeError("prepare: expected a path, a numpy uint8 array or a PIL image, got %s" % type(image).__name__)

    def describe_preparation(self, width, height, channels=3):
        """What prepare() does to an image of width x height, in words ("" when nothing but normalising)."""
        return self._native.describe_preparation(width, height, channels)

    def _inputs(self, x):
        if isinstance(x, Prepared):
            return [x.input], False
        if isinstance(x, (list, tuple)):
            return [self._input(item) for item in x], True
        if hasattr(x, "__array_interface__") and getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
            if x.ndim == 4:
                return [x[i] for i in range(x.shape[0])], True
            return [x], False
        return [self.prepare(x).input], False

    def _input(self, x):
        if hasattr(x, "__array_interface__") and getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
            return x
        return self.prepare(x).input

    def run(self, x, record="all", layers=None, neutreno=None, boost=None, precision="fp32", ablate=None, ablation="zero"):
        """One forward pass with the taps `record` asks for ("all", "none", or some of TAPS), at `layers` (default all).

        x: a Prepared, a float32 input [C, H, W] (or a batch [B, C, H, W]), a list of those, or an image prepare()
        takes. neutreno (lambda) and boost (t) run the inference-time variants of docs/analyses.md section 6; precision
        is fp32, tf32 (CUDA) or bf16. ablate: a head (layer, head) to run with its output ablated (docs/analyses.md
        section 8; `ablation` zero or mean), or one such head (or None) per input of a batch. Returns a Trace, or a list
        of Traces for a batch or a list.
        """
        inputs, many = self._inputs(x)
        flags = _record_flags(record)
        if ablate is None:
            ablated = []
        elif len(ablate) == 2 and all(isinstance(v, int) for v in ablate):
            ablated = [tuple(ablate)] * len(inputs)
        else:
            ablated = [(0, 0) if a is None else tuple(a) for a in ablate]
        traces = self._native.run(inputs, "attention" in flags, "attn_branch" in flags, "residual" in flags, "blocks" in flags,
                                  list(layers or []), neutreno, boost, precision, ablated, ablation)
        return traces if many else traces[0]

    def predict(self, image, k=5):
        """The k most probable classes of an image (softmax in float64), most probable first, as Predictions."""
        if self.config["classes"] == 0 or self.config["head_is_projection"]:
            raise Error("%s: the model has no classification head (its output is pooled features)" % self.name)
        trace = self.run(image, record="none")
        names = self.classes
        return [Prediction(i, names[i] if names and i < len(names) else "class %d" % i, p)
                for i, p in self._native.top_classes(trace.logits, k)]

    def perturb(self, image, spec="gaussian:sigma=8", seed=0):
        """The perturbed input [C, H, W] of the SNR (docs/analyses.md section 4): gaussian:sigma=S,
        saltpepper:fraction=F, blur:sigma=S, jpeg:quality=Q, fgsm:eps=E, pgd:eps=E[,steps=T]; seeded as the CLI's draw
        `seed`."""
        return self._native.perturb(self.prepare(image), spec, seed)

    def at_input_size(self, height, width=None):
        """The same model run at another input size (multiples of the patch size), as timm resamples it."""
        return Model(self._native.with_input_size(height, height if width is None else width))

    def ablate_heads(self, image, mode="zero", neutreno=None, boost=None, batch=0):
        return head_ablation(self, image, mode, neutreno, boost, batch)

    def logit_decomposition(self, image):
        return logit_decomposition(self, image)

    def relevance(self, image, target_class=-1, gradcam_layer=-1):
        return relevance(self, image, target_class, gradcam_layer)


def load(path, description=None, device="auto", input_size=None):
    """A model from a checkpoint file or folder (timm, Hugging Face, torchvision naming), a description .json, or
    builtin:NAME (attnscope.builtins()). description: the model description .json for a checkpoint that follows no
    convention. device: auto, cpu, cuda or cuda:<i>. input_size: (height, width) or N to run at another size.

    Raises attnscope.FileNotFound for a file that is not there, attnscope.Error for one that cannot be loaded."""
    height = width = 0
    if input_size is not None:
        height, width = (input_size, input_size) if isinstance(input_size, int) else input_size
    model = Model(_native.load(_os.fspath(path), _os.fspath(description) if description else "", device, height, width))
    _check_one_libtorch()
    return model


def builtins():
    """The names of the embedded models (load("builtin:NAME"))."""
    return list(_native.builtins())


def fashion_mnist(split="test", limit=0, folder=None):
    """Fashion-MNIST from its IDX files (Debian's dataset-fashion-mnist by default, or `folder`): (images uint8
    [n, 28, 28], labels int64 [n], class names). `limit` > 0 keeps the first `limit` images."""
    return _native.fashion_mnist(_os.fspath(folder) if folder else "", split, limit)


def set_threads(threads):
    """CPU threads for the forwards (0: the engine's default)."""
    _native.set_threads(threads)


def _remote_aware(f):
    """The function as it is, and for a remote model or trace as first argument (attnscope.connect) the remote
    engine's own of that name (attnscope/_remote.py), which takes the same arguments."""
    remote = getattr(_remote, f.__name__)
    first_name = next(iter(_inspect.signature(f).parameters))

    @_functools.wraps(f)
    def call(*args, **kwargs):
        first = args[0] if args else kwargs.get(first_name)
        if isinstance(first, (RemoteModel, RemoteTrace)):
            return remote(*args, **kwargs)
        return f(*args, **kwargs)

    return call


def _trace(trace):
    if not isinstance(trace, Trace):
        raise TypeError("expected an attnscope.Trace (Model.run), got %s" % type(trace).__name__)
    return trace


@_remote_aware
def token_similarity(trace):
    """1. Over-smoothing: the mean pairwise cosine of the tokens of every recorded tap and layer, for all tokens and for
    the patches alone. Columns layer, tap, tokens, value."""
    return _native.token_similarity(_trace(trace))


def token_cosine_similarity(tokens):
    """cs(Z) of docs/analyses.md section 1 over the rows of tokens [M, D]."""
    return _native.token_cosine_similarity(tokens)


def token_cosine_matrix(tokens):
    """The M x M cosine matrix of the rows of tokens [M, D]."""
    return _native.token_cosine_matrix(tokens)


@_remote_aware
def attention_map(trace, layer, head=-1, query=0, renormalise=False):
    """2. Row `query` of A_layer for `head` (-1: the mean of the heads): {"patches": [gh, gw], "prefix_mass": float,
    "padding_mass": float}. Of a Swin (trace.windows): `query` is a patch of the first grid, "patches" is at the block's
    stage grid, NaN outside the query's window, "padding_mass" the row's share on the padding (docs/python.md)."""
    return _native.attention_map(_trace(trace), layer, head, query, renormalise)


@_remote_aware
def rollout(trace, fusion="mean", discard=0.0):
    """Abnar & Zuidema's attention rollout [N, N]; fusion mean|max|min of the heads, `discard` the lowest share first."""
    return _native.rollout(_trace(trace), fusion, discard)


@_remote_aware
def rollout_map(trace, rollout_matrix, query=0):
    """Row `query` of a rollout as a map: {"patches": [gh, gw], "prefix_mass": float}."""
    return _native.rollout_map(_trace(trace), rollout_matrix, query)


@_remote_aware
def attention_grid(trace, query=None, fusion="mean", discard=0.0):
    """The layers x heads figure of one query (None: the CLS token, or the centre patch without one): "maps"
    [L, H + 1, gh, gw] (the head mean last), "prefix_mass" [L, H + 1], "rollout" [gh, gw]. Of a Swin: "maps" a list per
    block of [H_l + 1, h, w] at its stage grid, "padding_mass", "blocks" (their names), no rollout ("rollout_refused")."""
    return _native.attention_grid(_trace(trace), -1 if query is None else query, fusion, discard)


@_remote_aware
def attention_similarity(trace):
    """Columns layer, successive_cos (A_l against A_{l+1}), head_redundancy (mean pairwise cosine of the heads)."""
    return _native.attention_similarity(_trace(trace))


@_remote_aware
def head_centres(trace, patch_size, radius=3):
    """3. How convolution-like each head is: one row per layer and head (columns as head_centres.csv), and
    "offset_map" [rows, 2R + 1, 2R + 1]. patch_size: an int, or the Model the trace came from."""
    if isinstance(patch_size, Model):
        patch_size = patch_size.config["patch_size"]
    return _native.head_centres(_trace(trace), patch_size, radius)


@_remote_aware
def snr(clean, noisy, centre=True):
    """4. The signal-to-noise ratio through depth from a clean and a perturbed trace of one image (Model.perturb):
    {"snr": columns layer, tap, snr_db; "diagnostics": columns as snr_diagnostics.csv}."""
    return _native.snr(_trace(clean), _trace(noisy), centre)


@_remote_aware
def token_norms(trace, model, outlier_ratio=4.0):
    """7. Token norms, high-norm outliers and attention sinks per block output (columns as token_norms.csv), with
    "norms" and "attention_received" [rows, N] and "outlier_tokens" (a list of index arrays)."""
    return _native.token_norms(_trace(trace), model._native, outlier_ratio)


@_remote_aware
def logit_decomposition(model, image):
    """5. Layer 1's attention logits split into token-token, token-position, position-token and position-position
    terms: {"tt", "tp", "pt", "pp", "logits"}, each [H, N, N]."""
    return _native.decompose_logits(model._native, model._input(image))


@_remote_aware
def head_ablation(model, image, mode="zero", neutreno=None, boost=None, batch=0):
    """8. Every head of every layer ablated in turn (its output zeroed, or with mode="mean" replaced by the mean of its
    rows): columns layer, head, dlogit, dprob, kl, flip against the clean prediction ("predicted", "probability").
    batch: ablated forwards per run (0: all L x H at once)."""
    return _native.head_ablation(model._native, model._input(image), mode, neutreno, boost, batch)


@_remote_aware
def query_key_map(model, images, layer, head, method="pca", seed=0):
    """9. The query-key joint embedding of one head over a set of images (AttentionViz): every token's query and key,
    normalised and projected by `method`, "pca" (exact, signs fixed) or "tsne" (exact, perplexity 30, seeded): columns
    image, token, kind (query|key), row, col (-1 for prefix tokens), x, y; "scale", "agreement" (the mean rank
    correlation of q . k with closeness in the plane), "components" [2, d] (PCA; empty for t-SNE)."""
    images = images if isinstance(images, (list, tuple)) else [images]
    return _native.query_key_map(model._native, [model._input(i) for i in images], layer, head, method, seed)


@_remote_aware
def relevance(model, image, target_class=-1, gradcam_layer=-1):
    """6. Class relevance: GAE (Chefer et al.) and Grad-CAM of `target_class` (-1: the predicted one)."""
    return _native.relevance(model._native, model._input(image), target_class, gradcam_layer)


def _image_list(images):
    if isinstance(images, (str, bytes, _os.PathLike)):
        return [_os.fsdecode(images)]
    return [_os.fsdecode(i) for i in images]


def _progress_bar(progress):
    """A callable(done, total) drawing progress: tqdm's when installed, else None (quiet)."""
    if callable(progress):
        return progress, None
    if not progress:
        return None, None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, None
    bar = {}

    def update(done, total):
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, unit="img", desc="analyze")
        bar["bar"].update(done - bar["bar"].n)

    return update, bar


@_remote_aware
def analyze(model, images, analyses=("similarity", "attention", "centres", "snr"), noise=None, compare=None, batch=None,
            out=None, progress=True, neutreno=None, boost=None, draws=1, seed=0, precision="fp32", analyses_on="auto",
            cuda_graph=False, grid_images=1, query="cls", rollout="mean", discard=0.0, target_class=-1, gradcam_layer=-1,
            outlier_ratio=4.0, ablation="zero", qk_layer=0, qk_head=-1, qk_images=16, qk_method="pca", dump_tensors=False,
            strict=False, fresh=False, checkpoint_seconds=5.0):
    """The dataset run of `attnscope-cli analyze`: every image through the model (and `compare`, and the variant
    `neutreno` or `boost` beside the model as trained), batched, on the model's device, into the statistics of
    docs/analyses.md. Returns a Summary (its .tables named as the CLI's CSVs).

    images: files, folders (recursive) or list files. out: the output folder, written exactly as the CLI writes it (its
    data files; figures come from the CLI or the window); an unfinished run there is resumed unless fresh=True. Without
    out the files go to a temporary folder that is removed. Ctrl-C stops the run as the CLI's SIGINT does: what was done
    is written (a partial manifest, resumable) and KeyboardInterrupt is raised.
    """
    import tempfile

    if not isinstance(model, Model):
        raise TypeError("analyze: expected an attnscope.Model, got %s" % type(model).__name__)
    if compare is not None and not isinstance(compare, Model):
        compare = load(compare)
    if not isinstance(analyses, str):
        analyses = ",".join(analyses)
    noise = [] if noise is None else [noise] if isinstance(noise, str) else list(noise)
    update, bar = _progress_bar(progress)
    skipped = []
    temporary = tempfile.TemporaryDirectory(prefix="attnscope-") if out is None else None
    folder = temporary.name if temporary else _os.fspath(out)
    try:
        # The run's options by the names of the one table of them (_native.run_options(); tests/python checks that this
        # signature has each of them with its default).
        options = dict(analyses=analyses, noise=noise, draws=draws, seed=seed, neutreno=neutreno, boost=boost,
                       batch=0 if batch is None else batch, precision=precision, analyses_on=analyses_on,
                       cuda_graph=cuda_graph, grid_images=grid_images, query=query, rollout=rollout, discard=discard,
                       target_class=target_class, gradcam_layer=gradcam_layer, outlier_ratio=outlier_ratio,
                       ablation=ablation, qk_layer=qk_layer, qk_head=qk_head, qk_images=qk_images, qk_method=qk_method,
                       dump_tensors=dump_tensors, strict=strict, fresh=fresh, checkpoint_seconds=checkpoint_seconds)
        outcome = _native.analyze(model._native, _image_list(images), folder,
                                  compare._native if compare is not None else None, update, skipped.append, options)
        return Summary.read(folder, outcome, skipped, None if temporary else folder)
    finally:
        if bar and "bar" in bar:
            bar["bar"].close()
        if temporary:
            temporary.cleanup()
