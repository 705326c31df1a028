"""attnscope.connect: the module's API on an engine on another machine (docs/python.md, "On a remote engine").

A notebook on a laptop drives `attnscope-cli serve --stdio` on a GPU node through the user's own ssh (docs/remote.md).
Models and traces stay on the host; what is read crosses: the logits with each trace, a query's rows for an attention
map, a layer's tensor when it is asked for. Files of this machine (a model file, images) are sent once, by sha256.
The results are the local module's dicts and arrays, made by the same code from the same numbers.
"""

import os

from . import _native
from ._errors import Error
from ._summary import Summary

# What a model's loader reads beside its weights (docs/models.md): a file with one of these beside it is not sent
# alone, as the window refuses it too (it would load as something else on the host).
_BESIDE_MODEL = ("config.json", "preprocessor_config.json", "attnscope.json")
_TAPS = ("attention", "attn_branch", "residual", "blocks")

RemoteTrace = _native.RemoteTrace


def connect(target):
    """An engine on another machine: `[USER@]HOST[:PATH]` as ssh takes it, PATH where attnscope-cli is there (default:
    the one on the host's PATH). ATTNSCOPE_SSH names a command to use in ssh's place. Close it with .close(), a `with`
    block, or by dropping every reference to it and to what it made."""
    return RemoteEngine(target)


def _is_pil_image(x):
    return type(x).__module__.startswith("PIL.") and hasattr(x, "convert") and hasattr(x, "mode")


def _pixels(image):
    if _is_pil_image(image):
        import numpy

        grey = image.mode in ("1", "L", "LA", "I", "I;16", "F")
        return numpy.asarray(image.convert("L" if grey else "RGB"))
    return image


def _is_float_array(x):
    return hasattr(x, "__array_interface__") and getattr(x, "dtype", None) is not None and x.dtype.kind == "f"


class RemotePrepared:
    """An image prepared on the host (RemoteModel.prepare): .input float32 [C, H, W], .shown uint8, .preparation."""

    def __init__(self, handle, input, shown, preparation):
        self._handle = handle
        self.input = input
        self.shown = shown
        self.preparation = preparation


class RemoteEngine:
    """A link to attnscope-cli serve on a host (attnscope.connect). Its load and analyze, and the analyses as methods,
    take and give what the module's functions do; attnscope's own functions take its models and traces too."""

    def __init__(self, target):
        self._link = _native.RemoteLink(os.fspath(target))
        self.target = os.fspath(target)

    def __repr__(self):
        if not self._link.alive:
            return "<attnscope.RemoteEngine %s: closed>" % self.host
        h = self.hello
        return "<attnscope.RemoteEngine %s: %s, LibTorch %s, on %s>" % (self.host, h.get("server"), h.get("libtorch"), h.get("device"))

    @property
    def host(self):
        return self._link.host

    @property
    def hello(self):
        """The server's hello: its build (server), libtorch, device, cpu_threads and limits."""
        return self._link.hello

    @property
    def device(self):
        return self._link.hello.get("device")

    @property
    def closed(self):
        return not self._link.alive

    def statistics(self):
        """The link's requests, bytes sent and received so far, and the last round trip in ms."""
        return self._link.statistics()

    def close(self):
        """Asks the server to shut down and ends the link: the models and traces made through it answer no more."""
        self._link.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _file(self, path, what):
        """A path as a request takes it: a file of this machine sent (once), anything else the host's."""
        path = os.fsdecode(path)
        if path.startswith("builtin:") or not os.path.exists(path):
            return path
        if os.path.isdir(path) and what != "model":
            raise Error("%s: a folder, not %s" % (path, "an image" if what == "image" else "a file"))
        folder = os.path.dirname(os.path.abspath(path))
        if what == "model" and (os.path.isdir(path) or any(os.path.exists(os.path.join(folder, n)) for n in _BESIDE_MODEL)):
            raise Error("%s: a model folder on this machine cannot be sent to %s yet (docs/remote.md); copy it there and load "
                        "the host's path" % (path, self.host))
        return self._link.send_file(path)

    def _image(self, image, what):
        """An image as the host's methods take it: a RemotePrepared's, a file (sent), a host path, or pixels (sent as a
        PNG, which the host decodes to the same pixels)."""
        if isinstance(image, RemotePrepared):
            return image._handle
        if isinstance(image, (str, bytes, os.PathLike)):
            return self._file(image, "image")
        image = _pixels(image)
        if _is_float_array(image) or isinstance(image, _native.Prepared):
            raise Error("%s: %s on a remote engine takes an image (a path, uint8 pixels, a PIL image or a RemotePrepared), "
                        "not an input tensor" % (self.host, what))
        if hasattr(image, "__array_interface__"):
            return self._link.send_pixels(image)
        raise TypeError("%s: expected a path, a numpy uint8 array or a PIL image, got %s" % (what, type(image).__name__))

    def load(self, path, description=None, device="auto", input_size=None):
        """A model on the host: builtin:NAME or a path there, or a model file of this machine (sent once). As
        attnscope.load; `device` is the server's (attnscope-cli serve --device), only "auto" is taken here."""
        if device != "auto":
            raise Error("%s: the device is the server's (attnscope-cli serve --device); load takes device=\"auto\"" % self.host)
        height = width = 0
        if input_size is not None:
            height, width = (input_size, input_size) if isinstance(input_size, int) else input_size
        given = os.fsdecode(path)
        handle = self._file(given, "model")
        desc = self._file(description, "description") if description else None
        native = self._link.load(handle, desc, height, width, given, os.fsdecode(description) if description else "")
        return RemoteModel(self, native, (given, description))

    def analyze(self, model, images, analyses=("similarity", "attention", "centres", "snr"), noise=None, compare=None, batch=None,
                out=None, progress=True, neutreno=None, boost=None, draws=1, seed=0, precision="fp32", analyses_on="auto",
                cuda_graph=False, grid_images=1, query="cls", rollout="mean", discard=0.0, target_class=-1, gradcam_layer=-1,
                outlier_ratio=4.0, ablation="zero", qk_layer=0, qk_head=-1, qk_images=16, qk_method="pca", dump_tensors=False,
                strict=False, fresh=False, checkpoint_seconds=5.0):
        """attnscope.analyze on the host: the images (files here are sent once; other paths are the host's) through
        its image-set runs, batched as a local run, their statistics summarised here as a local run's are: the same
        tables. `out` gets each run's data files (CSVs, stats.json, run.json); no figures, predictions or manifest.
        The figure-only analyses (decomposition, relevance, qkmap) are refused; fresh and checkpoint_seconds have no
        journal to act on."""
        import tempfile

        from . import _progress_bar

        if not isinstance(model, RemoteModel) or model._engine is not self:
            raise TypeError("analyze: expected a model loaded on %s, got %s" % (self.host, type(model).__name__))
        if compare is not None and not isinstance(compare, RemoteModel):
            compare = self.load(compare)
        if not isinstance(analyses, str):
            analyses = ",".join(analyses)
        noise = [] if noise is None else [noise] if isinstance(noise, str) else list(noise)
        images = [os.fsdecode(images)] if isinstance(images, (str, bytes, os.PathLike)) else [os.fsdecode(i) for i in images]
        update, bar = _progress_bar(progress)
        skipped = []
        temporary = tempfile.TemporaryDirectory(prefix="attnscope-") if out is None else None
        folder = temporary.name if temporary else os.fspath(out)
        try:
            options = dict(analyses=analyses, noise=noise, draws=draws, seed=seed, neutreno=neutreno, boost=boost,
                           batch=0 if batch is None else batch, precision=precision, analyses_on=analyses_on,
                           cuda_graph=cuda_graph, grid_images=grid_images, query=query, rollout=rollout, discard=discard,
                           target_class=target_class, gradcam_layer=gradcam_layer, outlier_ratio=outlier_ratio,
                           ablation=ablation, qk_layer=qk_layer, qk_head=qk_head, qk_images=qk_images, qk_method=qk_method,
                           dump_tensors=dump_tensors, strict=strict, fresh=fresh, checkpoint_seconds=checkpoint_seconds)
            outcome = _native.remote_analyze(model._native, images, folder, compare._native if compare is not None else None,
                                             update, skipped.append, options)
            return Summary.read(folder, outcome, skipped, None if temporary else folder)
        finally:
            if bar and "bar" in bar:
                bar["bar"].close()
            if temporary:
                temporary.cleanup()

    # The analyses, as attnscope's functions (which take this engine's models and traces too).
    def token_similarity(self, trace):
        return token_similarity(trace)

    def attention_map(self, trace, layer, head=-1, query=0, renormalise=False):
        return attention_map(trace, layer, head, query, renormalise)

    def rollout(self, trace, fusion="mean", discard=0.0):
        return rollout(trace, fusion, discard)

    def rollout_map(self, trace, rollout_matrix, query=0):
        return rollout_map(trace, rollout_matrix, query)

    def attention_grid(self, trace, query=None, fusion="mean", discard=0.0):
        return attention_grid(trace, query, fusion, discard)

    def attention_similarity(self, trace):
        return attention_similarity(trace)

    def head_centres(self, trace, patch_size, radius=3):
        return head_centres(trace, patch_size, radius)

    def snr(self, clean, noisy, centre=True):
        return snr(clean, noisy, centre)

    def token_norms(self, trace, model, outlier_ratio=4.0):
        return token_norms(trace, model, outlier_ratio)

    def logit_decomposition(self, model, image):
        return logit_decomposition(model, image)

    def head_ablation(self, model, image, mode="zero", neutreno=None, boost=None, batch=0):
        return head_ablation(model, image, mode, neutreno, boost, batch)

    def query_key_map(self, model, images, layer, head, method="pca", seed=0):
        return query_key_map(model, images, layer, head, method, seed)

    def relevance(self, model, image, target_class=-1, gradcam_layer=-1):
        return relevance(model, image, target_class, gradcam_layer)


class RemoteModel:
    """A model loaded on a host (RemoteEngine.load): attnscope.Model's properties and methods, run there."""

    def __init__(self, engine, native, loaded):
        self._engine = engine
        self._native = native
        self._loaded = loaded  # (path, description) as given: at_input_size loads them again

    def __repr__(self):
        c = self.config
        return "<attnscope.RemoteModel %s on %s: %d layers x %d heads, width %d, %dx%d input, on %s>" % (
            self.name, self._engine.host, c["depth"], c["heads"], c["width"], c["image_size"][0], c["image_size"][1], self.device)

    engine = property(lambda self: self._engine)
    path = property(lambda self: self._native.path)
    name = property(lambda self: _native.model_name(self._native.path))
    config = property(lambda self: self._native.config)
    info = property(lambda self: self._native.info)
    device = property(lambda self: self._native.device)

    @property
    def classes(self):
        labels = self._native.labels
        return list(labels) if labels else None

    def prepare(self, image):
        """The image as the model sees it, prepared on the host: a RemotePrepared (.input, .shown, .preparation)."""
        if isinstance(image, RemotePrepared):
            return image
        handle = self._engine._image(image, "prepare")
        return RemotePrepared(handle, *self._native.prepare(handle))

    def perturb(self, image, spec="gaussian:sigma=8", seed=0):
        """The SNR's perturbed input [C, H, W], made on the host as Model.perturb makes it."""
        return self._native.prepare(self._engine._image(image, "perturb"), spec, seed)[0]

    def at_input_size(self, height, width=None):
        path, description = self._loaded
        return self._engine.load(path, description, input_size=(height, height if width is None else width))

    def _one(self, x):
        if isinstance(x, RemotePrepared):
            return x._handle, None
        if isinstance(x, _native.Prepared):
            return None, x.input
        if _is_float_array(x):
            return None, x
        return self._engine._image(x, "run"), None

    def run(self, x, record="all", layers=None, neutreno=None, boost=None, precision="fp32", ablate=None, ablation="zero"):
        """Model.run on the host: a RemoteTrace (a list of them for a list or a batch [B, C, H, W], one forward each).
        The taps stay there; `record` and `layers` say which of them the trace reads, as locally."""
        from . import _record_flags

        if isinstance(x, (list, tuple)):
            items, many = list(x), True
        elif _is_float_array(x) and x.ndim == 4:
            items, many = [x[i] for i in range(x.shape[0])], True
        else:
            items, many = [x], False
        flags = _record_flags(record)
        if ablate is None:
            ablated = [None] * len(items)
        elif len(ablate) == 2 and all(isinstance(v, int) for v in ablate):
            ablated = [tuple(ablate)] * len(items)
        else:
            ablated = [None if a is None or tuple(a) == (0, 0) else tuple(a) for a in ablate]
        traces = []
        for item, head in zip(items, ablated):
            image, tensor = self._one(item)
            traces.append(self._native.forward(image, tensor, "attention" in flags, "attn_branch" in flags, "residual" in flags,
                                               "blocks" in flags, list(layers or []), neutreno, boost, precision, head, ablation))
        return traces if many else traces[0]

    def predict(self, image, k=5):
        from . import Prediction

        if self.config["classes"] == 0 or self.config["head_is_projection"]:
            raise Error("%s: the model has no classification head (its output is pooled features)" % self.name)
        trace = self.run(image, record="none")
        names = self.classes
        return [Prediction(i, names[i] if names and i < len(names) else "class %d" % i, p)
                for i, p in self._native.top_classes(trace.logits, k)]

    def ablate_heads(self, image, mode="zero", neutreno=None, boost=None, batch=0):
        return head_ablation(self, image, mode, neutreno, boost, batch)

    def logit_decomposition(self, image):
        return logit_decomposition(self, image)

    def relevance(self, image, target_class=-1, gradcam_layer=-1):
        return relevance(self, image, target_class, gradcam_layer)


def _trace(trace):
    if not isinstance(trace, RemoteTrace):
        raise TypeError("expected an attnscope.RemoteTrace (RemoteModel.run), got %s" % type(trace).__name__)
    return trace


def _model(model):
    if not isinstance(model, RemoteModel):
        raise TypeError("expected an attnscope.RemoteModel (RemoteEngine.load), got %s" % type(model).__name__)
    return model


# The analyses of a remote trace. Where the server has a method for one (attention_rows, trace_tensor's rollout,
# explain, ablate, query_key_map, trace's decomposition) it runs on the host; the rest run here, by the local
# module's code, on the trace's tensors, each fetched once.

def token_similarity(trace):
    return _native.token_similarity(_trace(trace).local(["attn_branch", "residual", "block"]))


def attention_map(trace, layer, head=-1, query=0, renormalise=False):
    return _trace(trace).attention_map(layer, head, query, renormalise)


def rollout(trace, fusion="mean", discard=0.0):
    return _trace(trace).rollout(fusion, discard)


def rollout_map(trace, rollout_matrix, query=0):
    return _native.rollout_map(_trace(trace).local([]), rollout_matrix, query)


def attention_grid(trace, query=None, fusion="mean", discard=0.0):
    return _trace(trace).attention_grid(-1 if query is None else query, fusion, discard)


def attention_similarity(trace):
    return _native.attention_similarity(_trace(trace).local(["attention"]))


def head_centres(trace, patch_size, radius=3):
    if isinstance(patch_size, RemoteModel):
        patch_size = patch_size.config["patch_size"]
    return _native.head_centres(_trace(trace).local(["attention"]), patch_size, radius)


def snr(clean, noisy, centre=True):
    taps = ["attention", "attn_branch", "residual", "block"]
    return _native.snr(_trace(clean).local(taps), _trace(noisy).local(taps), centre)


def token_norms(trace, model, outlier_ratio=4.0):
    _model(model)
    return _trace(trace).token_norms(outlier_ratio)


def logit_decomposition(model, image):
    return _model(model)._native.decompose_logits(model._engine._image(image, "logit_decomposition"))


def head_ablation(model, image, mode="zero", neutreno=None, boost=None, batch=0):
    _model(model)
    if mode != "zero" or neutreno is not None or boost is not None:
        raise Error("%s: head_ablation on a remote engine zeroes each head of the model as trained (the host's ablate); "
                    "mode=\"mean\", neutreno and boost are not sent" % model._engine.host)
    return model._native.head_ablation(model._engine._image(image, "head_ablation"))


def query_key_map(model, images, layer, head, method="pca", seed=0):
    _model(model)
    if seed != 0:
        raise Error("%s: query_key_map on a remote engine draws t-SNE with seed 0 (the host's query_key_map takes none)"
                    % model._engine.host)
    images = images if isinstance(images, (list, tuple)) else [images]
    return model._native.query_key_map([model._engine._image(i, "query_key_map") for i in images], layer, head, method)


def relevance(model, image, target_class=-1, gradcam_layer=-1):
    return _model(model)._native.relevance(model._engine._image(image, "relevance"), target_class, gradcam_layer)


def analyze(model, *args, **kwargs):
    return _model(model)._engine.analyze(model, *args, **kwargs)
