#!/usr/bin/env python3
"""Generate the golden test fixtures for attnscope from independent reference
implementations (torchvision, timm, transformers).

Every model is built from a config with seeded random weights (no hub access,
no from_pretrained on a hub name).  See tests/golden/README.md for what each
fixture contains and how to regenerate them.

Usage:
    python make_golden.py [--only NAME ...] [--out DIR]

Run with an interpreter that has torch + torchvision only (e.g. Debian's
/usr/bin/python3) to produce the torchvision fixtures; fixtures whose
reference library (timm / transformers) is missing are skipped with a
message.  Run with the venv described in the README to produce everything.
"""

import argparse
import json
import math
import os
import re
import shutil
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

try:
    from PIL import Image
except ImportError:  # pragma: no cover
    Image = None

import torchvision

try:
    import timm
    import timm.layers
except ImportError:
    timm = None

try:
    import transformers
except ImportError:
    transformers = None

try:
    import safetensors
    import safetensors.numpy
except ImportError:
    safetensors = None

torch.set_num_threads(1)  # bit-reproducible CPU reductions
torch.use_deterministic_algorithms(True)

HERE = os.path.dirname(os.path.abspath(__file__))

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)
FMNIST_MEAN = (0.2860,)
FMNIST_STD = (0.3530,)

CIFAR10 = ["airplane", "automobile", "bird", "cat", "deer",
           "dog", "frog", "horse", "ship", "truck"]
FASHION = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

TOKEN_PARAM_KEYS = ("cls_token", "dist_token", "reg_token", "pos_embed", "class_token",
                    "pos_embedding", "position_embedding", "position_embeddings",
                    "class_embedding", "mask_token")
LAYERSCALE_KEYS = ("ls1.gamma", "ls2.gamma", "lambda1")


def versions():
    v = {"torch": torch.__version__, "torchvision": torchvision.__version__,
         "numpy": np.__version__}
    if timm is not None:
        v["timm"] = timm.__version__
    if transformers is not None:
        v["transformers"] = transformers.__version__
    if safetensors is not None:
        v["safetensors"] = safetensors.__version__
    return v


# --------------------------------------------------------------------------
# synthetic "natural-looking" images (pure numpy, deterministic)
# --------------------------------------------------------------------------

def _smooth(v, edge):
    """Soft step: 0 -> 1 as v crosses 0, width ~edge."""
    return 1.0 / (1.0 + np.exp(-np.clip(v / edge, -50, 50)))


def synth_landscape(h, w, seed):
    """A small landscape (sky gradient, sun, two hill ranges, house, tree),
    rendered at 8x and box-downsampled. Returns uint8 [h, w, 3]."""
    rng = np.random.RandomState(seed)
    S = 8
    H, W = h * S, w * S
    Y, X = np.meshgrid((np.arange(H) + 0.5) / H, (np.arange(W) + 0.5) / W, indexing="ij")

    def tex(n, amp):
        t = np.zeros_like(X)
        for _ in range(n):
            fx, fy = rng.uniform(-9, 9, 2)
            t += np.sin(2 * np.pi * (fx * X + fy * Y) + rng.uniform(0, 2 * np.pi))
        return amp * t / math.sqrt(n)

    top = np.array([0.20, 0.40, 0.80]) + rng.uniform(-0.08, 0.08, 3)
    bot = np.array([0.88, 0.80, 0.68]) + rng.uniform(-0.05, 0.05, 3)
    img = top * (1 - Y[..., None]) + bot * Y[..., None]
    img = img + tex(4, 0.03)[..., None]

    cx, cy, r = rng.uniform(0.2, 0.8), rng.uniform(0.12, 0.3), rng.uniform(0.07, 0.12)
    d = np.sqrt((X - cx) ** 2 + (Y - cy) ** 2)
    img = img + (0.3 * np.exp(-(d / (3 * r)) ** 2))[..., None] * np.array([1.0, 0.85, 0.5])
    sun = _smooth(r - d, 0.006)[..., None]
    img = img * (1 - sun) + sun * np.array([1.0, 0.93, 0.6])

    p1, p2 = rng.uniform(0, 1, 2)
    hz = 0.52 + 0.07 * np.sin(2 * np.pi * (1.2 * X + p1)) + 0.03 * np.sin(2 * np.pi * (3.3 * X + p2))
    m = _smooth(Y - hz, 0.004)[..., None]
    far = np.array([0.38, 0.45, 0.58]) * (1 - 0.4 * (Y - 0.5))[..., None] + tex(5, 0.04)[..., None]
    img = img * (1 - m) + m * far

    p3 = rng.uniform(0, 1)
    hz2 = 0.70 + 0.09 * np.sin(2 * np.pi * (0.8 * X + p3))
    m2 = _smooth(Y - hz2, 0.004)[..., None]
    near = (np.array([0.30, 0.55, 0.18]) * (1.1 - 0.6 * (Y - 0.7))[..., None]
            + (tex(6, 0.06) * np.array([1.0, 0.8, 0.5])[:, None, None]).transpose(1, 2, 0))
    img = img * (1 - m2) + m2 * near

    # house: wall + roof triangle + door
    hx, hw_, hy = rng.uniform(0.15, 0.45), rng.uniform(0.14, 0.2), rng.uniform(0.72, 0.8)
    wall = (_smooth(X - hx, 0.003) * _smooth(hx + hw_ - X, 0.003)
            * _smooth(Y - (hy - 0.12), 0.003) * _smooth(hy + 0.08 - Y, 0.003))[..., None]
    img = img * (1 - wall) + wall * (np.array([0.85, 0.78, 0.62]) - 0.15 * (X - hx)[..., None])
    apex_x, apex_y = hx + hw_ / 2, hy - 0.25
    roof = (_smooth(Y - apex_y - np.abs(X - apex_x) * 1.4, 0.003)
            * _smooth((hy - 0.12) - Y, 0.003))[..., None]
    img = img * (1 - roof) + roof * np.array([0.62, 0.18, 0.14])
    door = (_smooth(X - (hx + hw_ * 0.4), 0.003) * _smooth(hx + hw_ * 0.62 - X, 0.003)
            * _smooth(Y - (hy - 0.03), 0.003) * _smooth(hy + 0.08 - Y, 0.003))[..., None]
    img = img * (1 - door) + door * np.array([0.30, 0.20, 0.12])

    # tree: trunk + round canopy
    tx, ty = rng.uniform(0.6, 0.85), rng.uniform(0.74, 0.84)
    trunk = (_smooth(0.02 - np.abs(X - tx), 0.003) * _smooth(Y - (ty - 0.12), 0.003)
             * _smooth(ty + 0.05 - Y, 0.003))[..., None]
    img = img * (1 - trunk) + trunk * np.array([0.35, 0.22, 0.10])
    dc = np.sqrt((X - tx) ** 2 + ((Y - (ty - 0.17)) * 1.1) ** 2)
    canopy = _smooth(0.1 - dc, 0.004)[..., None]
    leaf = np.array([0.12, 0.40, 0.12]) * (1.2 - 2.5 * (Y - (ty - 0.17)))[..., None] + tex(6, 0.05)[..., None]
    img = img * (1 - canopy) + canopy * leaf

    img = np.clip(img, 0.0, 1.0)
    img = img.reshape(h, S, w, S, 3).mean(axis=(1, 3))
    return np.round(img * 255.0).astype(np.uint8)


def synth_garment(h, w, seed):
    """A Fashion-MNIST-like greyscale shirt on a black background. uint8 [h, w]."""
    rng = np.random.RandomState(seed)
    S = 8
    H, W = h * S, w * S
    Y, X = np.meshgrid((np.arange(H) + 0.5) / H, (np.arange(W) + 0.5) / W, indexing="ij")
    e = 0.004
    torso = _smooth(0.22 - np.abs(X - 0.5), e) * _smooth(Y - 0.14, e) * _smooth(0.92 - Y, e)
    # sleeves: slanted bands from the shoulders
    ang = rng.uniform(0.55, 0.75)
    sl = np.zeros_like(X)
    for sgn in (-1, 1):
        u = (X - 0.5) * sgn - 0.2          # distance outward from the shoulder
        v = (Y - 0.17) - ang * u            # along the sleeve slant
        sl = np.maximum(sl, _smooth(u, e) * _smooth(0.22 - u, e) * _smooth(v, e) * _smooth(0.17 - v, e))
    shape = np.maximum(torso, sl)
    neck = _smooth(0.085 - np.sqrt((X - 0.5) ** 2 + ((Y - 0.12) * 1.3) ** 2), e)
    shape = shape * (1 - neck)
    shade = 0.62 + 0.18 * np.cos(2 * np.pi * (X - 0.5) * 1.5) - 0.15 * (Y - 0.5)
    for _ in range(3):
        fx, fy = rng.uniform(-6, 6, 2)
        shade += 0.05 * np.sin(2 * np.pi * (fx * X + fy * Y) + rng.uniform(0, 6.3))
    stripe = 0.12 * _smooth(0.025 - np.abs(Y - 0.55), e)
    img = np.clip(shape * (shade - stripe), 0, 1)
    img = img.reshape(h, S, w, S).mean(axis=(1, 3))
    return np.round(img * 255.0).astype(np.uint8)


def save_png_and_input(path, u8, mean, std):
    """Save uint8 image as PNG, read it back, and compute the model input from
    the saved pixels: (img/255 - mean)/std per channel, float32 [1, C, H, W]."""
    if u8.ndim == 2:
        Image.fromarray(u8, mode="L").save(path, format="PNG")
    else:
        Image.fromarray(u8, mode="RGB").save(path, format="PNG")
    back = np.asarray(Image.open(path))
    assert back.dtype == np.uint8 and np.array_equal(back, u8), "PNG round trip failed"
    return image_to_input(back, mean, std)


def image_to_input(u8, mean, std):
    a = u8.astype(np.float32)
    if a.ndim == 2:
        a = a[..., None]
    a = a / np.float32(255.0)
    m = np.asarray(mean, dtype=np.float32)
    s = np.asarray(std, dtype=np.float32)
    assert a.shape[-1] == m.shape[0] == s.shape[0]
    a = (a - m) / s
    return np.ascontiguousarray(a.transpose(2, 0, 1)[None].astype(np.float32))


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------

PATCH_EMBED_KEYS = ("patch_embed.proj.", "conv_proj.", "patch_embeddings.projection.",
                    "embeddings.patch_embedding.")
MLP_IN_RE = re.compile(r"(mlp\.fc1|mlp\.0|intermediate\.dense)\.(weight|bias)$")
MLP_OUT_RE = re.compile(r"(mlp\.fc2|mlp\.3|layer\.\d+\.output\.dense)\.(weight|bias)$")


def randomize_(model, seed, linear_gain=1.0, qk_gain=1.6, token_std=0.5, embed_scale=0.01,
               fc1_bias_mean=-2.0, fc1_bias_std=0.25, fc2_gain=8.0):
    """Overwrite EVERY parameter with seeded random values so that each tensor
    matters: weights ~ N(0, gain^2/fan_in), biases ~ N(0, 0.1^2), LayerNorm
    weights ~ 1 + N(0, 0.1^2), layer-scale gammas ~ U(0.5, 1.5), tokens and
    position embeddings ~ N(0, token_std^2).

    Two deliberate distortions make the fixtures sensitive to details that
    would otherwise hide below the 1e-4 tolerance:
      * embed_scale: patch embedding, class/dist/register tokens and position
        embeddings are scaled by this, so the token stream entering the first
        LayerNorm has variance ~1e-4 and the LayerNorm eps (1e-5 vs 1e-6 vs
        1e-12) changes the outputs by >1e-3 relative.
      * the MLP's first bias is centred at fc1_bias_mean (-2) so most hidden
        pre-activations sit in the negative tail, where the GELU variants
        (erf / tanh / quick) differ by a large fraction of their value; fc2 is
        scaled up (fc2_gain) to keep the MLP branch O(1).
    """
    g = torch.Generator().manual_seed(seed)
    ln_w, ln_b = set(), set()
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            if m.weight is not None:
                ln_w.add(id(m.weight))
            if m.bias is not None:
                ln_b.add(id(m.bias))
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.split(".")[-1]
            emb = any(k in name for k in PATCH_EMBED_KEYS)
            if id(p) in ln_w:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif id(p) in ln_b:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif leaf.endswith("bias"):
                if MLP_IN_RE.search(name):
                    p.copy_(fc1_bias_mean + fc1_bias_std * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
                if emb:
                    p.mul_(embed_scale)
            elif any(name.endswith(k) for k in LAYERSCALE_KEYS):
                p.copy_(0.5 + torch.rand(p.shape, generator=g))
            elif any(k in name for k in TOKEN_PARAM_KEYS):
                p.copy_(embed_scale * token_std * torch.randn(p.shape, generator=g))
            elif p.ndim >= 2:
                fan_in = int(np.prod(p.shape[1:]))
                gain = linear_gain
                if any(k in name for k in ("qkv", "in_proj", "query", "key", "q_proj", "k_proj")):
                    gain = qk_gain
                elif MLP_OUT_RE.search(name):
                    gain = fc2_gain
                elif emb:
                    gain = embed_scale
                p.copy_(gain / math.sqrt(fan_in) * torch.randn(p.shape, generator=g))
            else:
                raise RuntimeError(f"unhandled parameter {name} {tuple(p.shape)}")


# --------------------------------------------------------------------------
# sensitivity: would a wrong LayerNorm eps / activation be caught at 1e-4?
# --------------------------------------------------------------------------

def _rel_change(ref, alt):
    worst = 0.0
    for r, a in zip(ref, alt):
        r, a = f32(r).astype(np.float64), f32(a).astype(np.float64)
        worst = max(worst, float(np.abs(a - r).max() / max(np.abs(r).max(), 1e-30)))
    return worst


def _act_children(model):
    out = []
    for parent in model.modules():
        for cname, child in parent.named_children():
            if "gelu" in type(child).__name__.lower():
                out.append((parent, cname, child))
    assert out, "no activation modules found"
    return out


def sensitivity(name, model, fwd, alt_eps, alt_acts, min_rel=1e-3):
    """fwd() -> list of output tensors (logits, blocks...). Re-run with every
    LayerNorm eps replaced by each of alt_eps and every GELU-like activation
    replaced by each of alt_acts; assert each change moves some output by
    >= min_rel (relative to that tensor's max abs), i.e. 10x the test tolerance."""
    ref = fwd()
    lns = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    res = {}
    for eps in alt_eps:
        old = [m.eps for m in lns]
        for m in lns:
            m.eps = eps
        res[f"eps={eps:g}"] = _rel_change(ref, fwd())
        for m, e in zip(lns, old):
            m.eps = e
    acts = _act_children(model)
    for label, make in alt_acts:
        for parent, cname, _ in acts:
            setattr(parent, cname, make())
        res[f"act={label}"] = _rel_change(ref, fwd())
        for parent, cname, child in acts:
            setattr(parent, cname, child)
    assert _rel_change(ref, fwd()) == 0.0, "sensitivity probe did not restore the model"
    for k, v in res.items():
        assert v >= min_rel, f"{name}: outputs insensitive to {k} (rel change {v:.2e})"
    return res


F32ERR = {}


def f64_check(name, model, fwd, x, max_rel=1e-5):
    """Re-run a float64 copy of the model; the float32 reference must agree to
    max_rel (relative to each tensor's max abs), so that a correct float32
    engine with a different summation order can meet the 1e-4 tolerance."""
    import copy
    m64 = copy.deepcopy(model).double()
    with torch.no_grad():
        a = fwd(model, x)
        b = fwd(m64, x.double())
    err = _rel_change(b, a)
    assert err <= max_rel, f"{name}: float32 reference deviates from float64 by {err:.2e}"
    F32ERR[name] = err
    return err


class _QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


ACT_EXACT = ("gelu_erf", lambda: nn.GELU())
ACT_TANH = ("gelu_tanh", lambda: nn.GELU(approximate="tanh"))
ACT_QUICK = ("quick_gelu", lambda: _QuickGELU())
SENS = {}


def save_safetensors(path, tensors, metadata=None):
    """Minimal safetensors writer: u64le header length, JSON header (keys
    sorted, padded with spaces to a multiple of 8), raw little-endian F32."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for k in sorted(tensors):
        t = tensors[k]
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu().numpy()
        a = np.ascontiguousarray(t, dtype="<f4")
        b = a.tobytes()
        header[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    if safetensors is not None:  # cross-check the hand-written file
        back = safetensors.numpy.load_file(path)
        assert sorted(back) == sorted(tensors)
        for k in tensors:
            v = tensors[k].detach().cpu().numpy() if isinstance(tensors[k], torch.Tensor) else tensors[k]
            assert np.array_equal(back[k], v), k


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


# --------------------------------------------------------------------------
# fixture output
# --------------------------------------------------------------------------

def f32(t):
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    return np.ascontiguousarray(t, dtype=np.float32)


def fresh_dir(root, name):
    d = os.path.join(root, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def write_outputs(d, x, logits, attns, blocks, meta):
    """attns: list (len L) of [H, N, N]; blocks: list (len L+1) of [N, D]."""
    L = meta["num_layers"]
    assert len(attns) == L and len(blocks) == L + 1
    np.save(os.path.join(d, "input.npy"), f32(x))
    np.save(os.path.join(d, "logits.npy"), f32(logits).reshape(-1))
    for l, a in enumerate(attns, start=1):
        a = f32(a)
        assert a.ndim == 3 and a.shape[0] == meta["num_heads"] and a.shape[1] == a.shape[2]
        # tv_grid16's [4, 257, 257] maps (1 MB each) are not kept: make_analyses.py checks its attention and
        # the analyses built on it.
        if meta.get("name") != "tv_grid16":
            np.save(os.path.join(d, f"attn_L{l}.npy"), a)
    for l, b in enumerate(blocks):
        b = f32(b)
        assert b.ndim == 2 and b.shape[1] == meta["width"]
        np.save(os.path.join(d, f"block_L{l}.npy"), b)
    write_json(os.path.join(d, "meta.json"), meta)


def check_attention(name, attns, n_tokens):
    """Row sums, non-degeneracy. Returns (max |rowsum-1|, mean row-max)."""
    dev, rowmax = 0.0, []
    for a in attns:
        a = f32(a).astype(np.float64)
        assert a.shape[-1] == n_tokens and a.shape[-2] == n_tokens
        dev = max(dev, float(np.abs(a.sum(-1) - 1.0).max()))
        rowmax.append(a.max(-1).ravel())
    rowmax = np.concatenate(rowmax)
    # not all uniform, not all one-hot
    assert rowmax.max() > 2.0 / n_tokens, f"{name}: attention ~uniform"
    assert rowmax.mean() < 0.9, f"{name}: attention ~one-hot"
    return dev, float(rowmax.mean())


SUMMARY = []


def summarize(name, n_tokens, attns, logits):
    dev, mean_rowmax = check_attention(name, attns, n_tokens)
    lg = f32(logits).reshape(-1)
    line = (f"{name:22s} N={n_tokens:3d}  max|attn_rowsum-1|={dev:.2e}  "
            f"mean_row_max={mean_rowmax:.3f}  logits_argmax={int(lg.argmax())}  K={lg.size}")
    if name in F32ERR:
        line += f"  f32_vs_f64={F32ERR[name]:.1e}"
    if name in SENS:
        line += "  sens[" + ", ".join(f"{k}:{v:.1e}" for k, v in SENS[name].items()) + "]"
    print(line, flush=True)
    SUMMARY.append(line)


def base_meta(name, source, convention, L, H, D, P, input_size, C, K, notes):
    return {"name": name, "source": source, "convention": convention,
            "num_layers": L, "num_heads": H, "width": D, "num_prefix_tokens": P,
            "input_size": list(input_size), "channels": C, "num_classes": K, "notes": notes}


def assert_close(a, b, rtol, what):
    a, b = f32(a).astype(np.float64), f32(b).astype(np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.abs(a - b).max()
    scale = max(np.abs(b).max(), 1e-30)
    assert err <= rtol * scale, f"{what}: max|a-b|={err:.3e} > {rtol}*{scale:.3e}"
    return err


# --------------------------------------------------------------------------
# timm helpers
# --------------------------------------------------------------------------

def timm_config(arch, model_args, num_classes, num_features, chans, size, mean, std,
                label_names=None, classifier="head", global_pool="token"):
    cfg = {
        "architecture": arch,
        "num_classes": num_classes,
        "num_features": num_features,
        "global_pool": global_pool,
        "model_args": model_args,
        "pretrained_cfg": {
            "input_size": [chans, size[0], size[1]],
            "interpolation": "bicubic",
            "crop_pct": 1.0,
            "crop_mode": "center",
            "mean": list(mean),
            "std": list(std),
            "num_classes": num_classes,
            "first_conv": "patch_embed.proj",
            "classifier": classifier,
        },
    }
    if label_names is not None:
        cfg["label_names"] = list(label_names)
    return cfg


def run_timm(model, x):
    """Forward a timm ViT recording block inputs/outputs and attention maps."""
    attns, blocks, hooks = {}, {}, []
    hooks.append(model.blocks[0].register_forward_pre_hook(
        lambda m, inp: blocks.__setitem__(0, inp[0][0].detach().clone())))
    for i, blk in enumerate(model.blocks):
        blk.attn.fused_attn = False
        hooks.append(blk.attn.attn_drop.register_forward_hook(
            lambda m, inp, out, i=i: attns.__setitem__(i + 1, inp[0][0].detach().clone())))
        hooks.append(blk.register_forward_hook(
            lambda m, inp, out, i=i: blocks.__setitem__(i + 1, out[0].detach().clone())))
    with torch.no_grad():
        logits = model(x)[0]
    for h in hooks:
        h.remove()
    L = len(model.blocks)
    return logits, [attns[l] for l in range(1, L + 1)], [blocks[l] for l in range(L + 1)]


def timm_reload_check(model_ctor, path, x, logits):
    from safetensors.torch import load_file
    m2 = model_ctor().eval()
    m2.load_state_dict(load_file(path), strict=True)
    with torch.no_grad():
        out = m2(x)[0]
    assert torch.equal(out, logits), "timm reload mismatch"


def timm_manual_head(model, last_block, logits):
    """Self-check that block_L{L} is before the final norm: norm -> pool -> head == logits."""
    with torch.no_grad():
        y = model.forward_head(model.norm(last_block[None]))[0]
    assert_close(y, logits, 1e-5, "timm head from last block")


# --------------------------------------------------------------------------
# 1. torchvision ViT, written three ways
# --------------------------------------------------------------------------

def tv_to_timm(sd, L):
    out = {
        "cls_token": sd["class_token"],
        "pos_embed": sd["encoder.pos_embedding"],
        "patch_embed.proj.weight": sd["conv_proj.weight"],
        "patch_embed.proj.bias": sd["conv_proj.bias"],
        "norm.weight": sd["encoder.ln.weight"],
        "norm.bias": sd["encoder.ln.bias"],
        "head.weight": sd["heads.head.weight"],
        "head.bias": sd["heads.head.bias"],
    }
    for i in range(L):
        s, t = f"encoder.layers.encoder_layer_{i}.", f"blocks.{i}."
        for a, b in (("ln_1", "norm1"), ("self_attention.in_proj", "attn.qkv"),
                     ("self_attention.out_proj", "attn.proj"), ("ln_2", "norm2"),
                     ("mlp.0", "mlp.fc1"), ("mlp.3", "mlp.fc2")):
            if a.endswith("in_proj"):
                out[t + b + ".weight"] = sd[s + a + "_weight"]
                out[t + b + ".bias"] = sd[s + a + "_bias"]
            else:
                out[t + b + ".weight"] = sd[s + a + ".weight"]
                out[t + b + ".bias"] = sd[s + a + ".bias"]
    return out


def tv_to_hf(sd, L, D):
    out = {
        "vit.embeddings.cls_token": sd["class_token"],
        "vit.embeddings.position_embeddings": sd["encoder.pos_embedding"],
        "vit.embeddings.patch_embeddings.projection.weight": sd["conv_proj.weight"],
        "vit.embeddings.patch_embeddings.projection.bias": sd["conv_proj.bias"],
        "vit.layernorm.weight": sd["encoder.ln.weight"],
        "vit.layernorm.bias": sd["encoder.ln.bias"],
        "classifier.weight": sd["heads.head.weight"],
        "classifier.bias": sd["heads.head.bias"],
    }
    for i in range(L):
        s, t = f"encoder.layers.encoder_layer_{i}.", f"vit.encoder.layer.{i}."
        W, B = sd[s + "self_attention.in_proj_weight"], sd[s + "self_attention.in_proj_bias"]
        for j, qkv in enumerate(("query", "key", "value")):
            out[t + f"attention.attention.{qkv}.weight"] = W[j * D:(j + 1) * D].clone()
            out[t + f"attention.attention.{qkv}.bias"] = B[j * D:(j + 1) * D].clone()
        for a, b in (("self_attention.out_proj", "attention.output.dense"),
                     ("ln_1", "layernorm_before"), ("ln_2", "layernorm_after"),
                     ("mlp.0", "intermediate.dense"), ("mlp.3", "output.dense")):
            out[t + b + ".weight"] = sd[s + a + ".weight"]
            out[t + b + ".bias"] = sd[s + a + ".bias"]
    return out


def tv_plain_forward(mdl, xx):
    """The unmodified torchvision forward -> logits + block streams {0..L: [N, D]}."""
    blocks, hooks = {}, []
    lays = mdl.encoder.layers
    hooks.append(lays[0].register_forward_pre_hook(
        lambda m, inp: blocks.__setitem__(0, inp[0][0].detach().clone())))
    for i, lay in enumerate(lays):
        hooks.append(lay.register_forward_hook(
            lambda m, inp, out, i=i: blocks.__setitem__(i + 1, out[0].detach().clone())))
    with torch.no_grad():
        logits = mdl(xx)[0]
    for h in hooks:
        h.remove()
    return logits, blocks


def tv_attention_pass(model, x, logits):
    """Run the torchvision model with every self_attention forced to return per-head
    weights; returns [attn_L1, ..] ([H, N, N] each) and checks the logits are unchanged."""
    attns = {}
    saved = []
    for i, lay in enumerate(model.encoder.layers):
        mha = lay.self_attention
        orig = mha.forward

        def fwd(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, _orig=orig, _i=i):
            out, w = _orig(query, key, value, key_padding_mask=key_padding_mask, need_weights=True,
                           attn_mask=attn_mask, average_attn_weights=False)
            attns[_i + 1] = w[0].detach().clone()
            return out, w
        mha.forward = fwd
        saved.append(mha)
    with torch.no_grad():
        logits2 = model(x)[0]
    for mha in saved:
        del mha.forward  # restore the class method
    assert_close(logits2, logits, 1e-6, "tv need_weights pass vs plain pass")
    return [attns[l] for l in range(1, len(model.encoder.layers) + 1)]


def tv_self_checks(model, attn_list, block_list, logits, what):
    """Recompute attention from the block inputs by hand and the logits from the
    last block (=> block_L{L} is before encoder.ln)."""
    L = len(model.encoder.layers)
    D = model.hidden_dim
    with torch.no_grad():
        for i, lay in enumerate(model.encoder.layers):
            H = lay.self_attention.num_heads
            y = lay.ln_1(block_list[i])
            qkv = y @ lay.self_attention.in_proj_weight.T + lay.self_attention.in_proj_bias
            q, k, _ = qkv.split(D, dim=-1)
            dh = D // H
            q = q.reshape(-1, H, dh).transpose(0, 1)
            k = k.reshape(-1, H, dh).transpose(0, 1)
            a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), dim=-1)
            assert_close(a, attn_list[i], 1e-5, f"{what} manual attention L{i + 1}")
        y = model.heads(model.encoder.ln(block_list[L])[0])
        assert_close(y, logits, 1e-5, f"{what} head from last block")


def make_tv(root):
    from torchvision.models import VisionTransformer
    L, H, D, M, IMG, P, K = 2, 4, 64, 128, 32, 8, 10
    seed = 0
    torch.manual_seed(seed)
    model = VisionTransformer(image_size=IMG, patch_size=P, num_layers=L, num_heads=H,
                              hidden_dim=D, mlp_dim=M, num_classes=K).eval()
    assert isinstance(model.encoder.layers[0].mlp[1], nn.GELU) and model.encoder.layers[0].mlp[1].approximate == "none"
    assert model.encoder.ln.eps == 1e-6
    randomize_(model, seed)

    u8 = synth_landscape(IMG, IMG, seed=100)
    d_timm = fresh_dir(root, "tv_timm")
    x_np = save_png_and_input(os.path.join(d_timm, "image.png"), u8, IMAGENET_MEAN, IMAGENET_STD)
    x = torch.from_numpy(x_np)

    def plain_forward(mdl=model, xx=x):
        return tv_plain_forward(mdl, xx)

    # Pass 1: plain forward.
    logits, blocks = plain_forward()
    sens = sensitivity("tv", model, lambda: (lambda r: [r[0]] + list(r[1].values()))(plain_forward()),
                       alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH, ACT_QUICK])
    f64_check("tv", model, lambda m, xx: (lambda r: [r[0]] + list(r[1].values()))(plain_forward(m, xx)), x)
    for n in ("tv_timm", "tv_hf", "tv_torchvision"):
        SENS[n] = sens
        F32ERR[n] = F32ERR["tv"]

    # Pass 2: same model with every self_attention asked for per-head weights.
    attn_list = tv_attention_pass(model, x, logits)
    block_list = [blocks[l] for l in range(L + 1)]
    tv_self_checks(model, attn_list, block_list, logits, "tv")

    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    N = (IMG // P) ** 2 + 1
    src = f"torchvision {torchvision.__version__} (torch {torch.__version__})"
    mean_std_note = ("image.png -> input.npy: (pixel/255 - mean)/std with ImageNet mean "
                     f"{list(IMAGENET_MEAN)} / std {list(IMAGENET_STD)}, no resize (already 32x32). ")
    common_note = ("One torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, "
                   "num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10), exact GELU, LayerNorm eps 1e-6, "
                   "seed 0, all weights randomized; expected outputs from torchvision itself "
                   "(identical in tv_timm / tv_hf / tv_torchvision). Token order [CLS, 16 patches row-major]; "
                   "logits = head(encoder.ln(x)[CLS]). ")

    # --- tv_timm
    tsd = tv_to_timm(sd, L)
    save_safetensors(os.path.join(d_timm, "model.safetensors"), tsd)
    model_args = {"img_size": IMG, "patch_size": P, "embed_dim": D, "depth": L,
                  "num_heads": H, "mlp_ratio": M / D}
    write_json(os.path.join(d_timm, "config.json"),
               timm_config("vit_small_patch16_224", model_args, K, D, 3, (IMG, IMG),
                           IMAGENET_MEAN, IMAGENET_STD, CIFAR10))
    write_outputs(d_timm, x_np, logits, attn_list, block_list,
                  base_meta("tv_timm", src, "timm", L, H, D, 1, (IMG, IMG), 3, K,
                            common_note + "Written with timm names (attn.qkv = in_proj). "
                            "Architecture 'vit_small_patch16_224' with model_args overriding its shapes, as "
                            "timm.create_model(name, **model_args) builds it. " + mean_std_note))

    # --- tv_hf
    d_hf = fresh_dir(root, "tv_hf")
    shutil.copyfile(os.path.join(d_timm, "image.png"), os.path.join(d_hf, "image.png"))
    hsd = tv_to_hf(sd, L, D)
    save_safetensors(os.path.join(d_hf, "model.safetensors"), hsd, metadata={"format": "pt"})
    hf_cfg = {
        "architectures": ["ViTForImageClassification"],
        "model_type": "vit",
        "hidden_size": D, "num_hidden_layers": L, "num_attention_heads": H,
        "intermediate_size": M, "hidden_act": "gelu", "layer_norm_eps": 1e-6,
        "image_size": IMG, "patch_size": P, "num_channels": 3, "qkv_bias": True,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
        "initializer_range": 0.02, "encoder_stride": P, "torch_dtype": "float32",
        "id2label": {str(i): n for i, n in enumerate(CIFAR10)},
        "label2id": {n: i for i, n in enumerate(CIFAR10)},
    }
    write_json(os.path.join(d_hf, "config.json"), hf_cfg)
    write_json(os.path.join(d_hf, "preprocessor_config.json"), {
        "image_processor_type": "ViTImageProcessor",
        "do_resize": True, "size": {"height": IMG, "width": IMG}, "resample": 2,
        "do_rescale": True, "rescale_factor": 1 / 255,
        "do_normalize": True, "image_mean": list(IMAGENET_MEAN), "image_std": list(IMAGENET_STD),
    })
    write_outputs(d_hf, x_np, logits, attn_list, block_list,
                  base_meta("tv_hf", src, "hf", L, H, D, 1, (IMG, IMG), 3, K,
                            common_note + "Written with HF ViTForImageClassification names; "
                            "query/key/value = in_proj rows [0:64]/[64:128]/[128:192]. " + mean_std_note))

    # --- tv_torchvision
    d_tv = fresh_dir(root, "tv_torchvision")
    shutil.copyfile(os.path.join(d_timm, "image.png"), os.path.join(d_tv, "image.png"))
    save_safetensors(os.path.join(d_tv, "model.safetensors"), sd,
                     metadata={"num_heads": str(H), "image_size": str(IMG)})
    write_outputs(d_tv, x_np, logits, attn_list, block_list,
                  base_meta("tv_torchvision", src, "torchvision", L, H, D, 1, (IMG, IMG), 3, K,
                            common_note + "Raw torchvision state_dict names; no config.json, "
                            "safetensors __metadata__ {num_heads: '4', image_size: '32'}. "
                            "input.npy is what was fed; image.png gives it with ImageNet mean/std "
                            "(torchvision's own ViT preprocessing) - if the engine's no-config default "
                            "differs, compare from input.npy. " + mean_std_note))

    # --- independent cross-checks of the two renamings
    if timm is not None:
        from timm.models.vision_transformer import VisionTransformer as TimmViT
        from safetensors.torch import load_file
        tm = TimmViT(**model_args, num_classes=K).eval()
        tm.load_state_dict(load_file(os.path.join(d_timm, "model.safetensors")), strict=True)
        tl, ta, tb = run_timm(tm, x)
        assert_close(tl, logits, 1e-5, "timm(VisionTransformer) on tv_timm vs torchvision logits")
        for l in range(L):
            assert_close(ta[l], attn_list[l], 1e-5, "timm attn vs torchvision")
        print("  tv_timm: timm VisionTransformer reproduces torchvision (1e-5)")
    else:
        print("  tv_timm: timm not available, cross-check skipped")
    if transformers is not None:
        from transformers import ViTForImageClassification, ViTImageProcessor
        hm = ViTForImageClassification.from_pretrained(d_hf, attn_implementation="eager").eval()
        with torch.no_grad():
            ho = hm(pixel_values=x, output_attentions=True, output_hidden_states=True)
        assert_close(ho.logits[0], logits, 1e-5, "transformers ViT on tv_hf vs torchvision logits")
        for l in range(L):
            assert_close(ho.attentions[l][0], attn_list[l], 1e-5, "hf attn vs torchvision")
        for l in range(L + 1):
            assert_close(ho.hidden_states[l][0], block_list[l], 1e-5, "hf hidden vs torchvision")
        proc = ViTImageProcessor.from_pretrained(d_hf)
        px = proc(images=Image.open(os.path.join(d_hf, "image.png")), return_tensors="np")["pixel_values"]
        assert_close(px, x_np, 1e-6, "ViTImageProcessor(image.png) vs input.npy")
        print("  tv_hf: transformers ViTForImageClassification reproduces torchvision (1e-5); "
              "ViTImageProcessor(image.png) == input.npy")
    else:
        print("  tv_hf: transformers not available, cross-check skipped")

    for name in ("tv_timm", "tv_hf", "tv_torchvision"):
        summarize(name, N, attn_list, logits)


# --------------------------------------------------------------------------
# 1b. torchvision ViT on a 16x16 grid, with local heads (for the analyses)
# --------------------------------------------------------------------------

GRID16_WAVELENGTHS = (10.0, 14.0, 12.0, 16.0, 11.0, 13.0)   # patches, one per (sin, cos) pair
GRID16_LOCAL_HEADS = {0: (0, 0), 1: (0, 1), 2: (-1, -1)}      # layer-1 head -> target offset (dy, dx)
GRID16_SINK_HEAD = 3                                          # layer-1 head that also attends to CLS


def chelsea_32():
    """resources/samples/photos/chelsea.png (451x300 RGB), centre-left square crop (60, 0, 360, 300) on the
    cat's face, PIL BOX-downscaled to 32x32. uint8 [32, 32, 3]."""
    path = os.path.join(HERE, "..", "..", "resources", "samples", "photos", "chelsea.png")
    im = Image.open(path).convert("RGB")
    assert im.size == (451, 300), im.size
    im = im.crop((60, 0, 360, 300)).resize((32, 32), Image.BOX)
    return np.asarray(im, dtype=np.uint8).copy()


def grid_sincos(gh, gw, omegas):
    """[gh*gw, 2F] features [sin(w_f . pos) for f] ++ [cos(w_f . pos) for f], pos = (row, col)
    row-major; omegas [F, 2] (angular frequency per row / col step). float64."""
    r, c = torch.meshgrid(torch.arange(gh, dtype=torch.float64), torch.arange(gw, dtype=torch.float64),
                          indexing="ij")
    pos = torch.stack([r.reshape(-1), c.reshape(-1)], 1)
    ph = pos @ omegas.T
    return torch.cat([torch.sin(ph), torch.cos(ph)], 1)


def localise_tv_(model, seed, grid, wavelengths=GRID16_WAVELENGTHS, local_heads=GRID16_LOCAL_HEADS,
                 sink_head=GRID16_SINK_HEAD, amp=3.0, beta=1.0, qk_noise=0.5, sink_alpha=20.0,
                 embed_scale=0.01):
    """Give a randomized torchvision ViT a smooth 2D position embedding and make some of the
    first block's heads position-local (after randomize_).

    * Patch position rows: embed_scale * (amp * S @ Mix + 0.2 * old), where S [gh*gw, 2F] are 2D
      sinusoids (F = d/2 directions k*pi/F, wavelengths `wavelengths`) and Mix [2F, D] has orthonormal
      rows orthogonal to the all-ones vector (a random rotation into the width, untouched by
      LayerNorm's centring). The CLS position row stays as randomized.
    * Layer-1 head h in local_heads with target offset delta: W_Q^h = sqrt(beta) Mix + noise and
      W_K^h = sqrt(beta) Rot_delta Mix + noise, where Rot_delta maps S(pos) to S(pos - delta). On the
      positional part q_i . k_j ~ beta' sum_f cos(w_f . (pos_j - pos_i - delta)): peaked at
      pos_j = pos_i + delta. noise = qk_noise * N(0, 1.6^2/D) keeps a content part.
    * Layer-1 sink_head: q bias = unit vector c, W_K^h += sink_alpha c y^T / |y|^2 with y = LN1 of
      the CLS row of X_0, so that every query gives the CLS key a large logit (prefix mass ~0.4)."""
    g = torch.Generator().manual_seed(seed + 1000)
    D = model.hidden_dim
    lay = model.encoder.layers[0]
    sa = lay.self_attention
    H = sa.num_heads
    d = D // H
    F = d // 2
    om = torch.stack([2 * math.pi / wavelengths[i % len(wavelengths)]
                      * torch.tensor([math.sin(i * math.pi / F), math.cos(i * math.pi / F)], dtype=torch.float64)
                      for i in range(F)])
    S = grid_sincos(grid[0], grid[1], om)
    Mraw = torch.randn(2 * F, D, generator=g, dtype=torch.float64)
    Mraw = Mraw - Mraw.mean(1, keepdim=True)
    Qm, _ = torch.linalg.qr(Mraw.T)
    Mix = Qm.T.contiguous()
    assert torch.allclose(Mix @ Mix.T, torch.eye(2 * F, dtype=torch.float64), atol=1e-12)
    with torch.no_grad():
        pe = model.encoder.pos_embedding
        pe[0, 1:] = (embed_scale * amp * (S @ Mix)).float() + 0.2 * pe[0, 1:]
        W = sa.in_proj_weight
        for h in sorted(local_heads):
            dy, dx = local_heads[h]
            rot = om @ torch.tensor([float(dy), float(dx)], dtype=torch.float64)
            cs, sn = torch.diag(torch.cos(rot)), torch.diag(torch.sin(rot))
            R = torch.cat([torch.cat([cs, -sn], 1), torch.cat([sn, cs], 1)], 0)  # S(pos) -> S(pos - delta)
            s = math.sqrt(beta)
            nz = qk_noise * 1.6 / math.sqrt(D)
            Wq = s * Mix + nz * torch.randn(d, D, generator=g, dtype=torch.float64)
            Wk = s * (R @ Mix) + nz * torch.randn(d, D, generator=g, dtype=torch.float64)
            W[h * d:(h + 1) * d] = Wq.float()
            W[D + h * d:D + (h + 1) * d] = Wk.float()
        if sink_head is not None:
            h = sink_head
            x0 = (model.class_token[0, 0] + pe[0, 0]).double()
            y = torch.nn.functional.layer_norm(x0, (D,), lay.ln_1.weight.double(), lay.ln_1.bias.double(),
                                               lay.ln_1.eps)
            c = torch.randn(d, generator=g, dtype=torch.float64)
            c = c / c.norm()
            sa.in_proj_bias[h * d:(h + 1) * d] = c.float()
            W[D + h * d:D + (h + 1) * d] += (sink_alpha * c[:, None] * y[None, :] / (y @ y)).float()


def make_tv_grid16(root):
    from torchvision.models import VisionTransformer
    name = "tv_grid16"
    L, H, D, M, IMG, P, K = 3, 4, 48, 96, 32, 2, 10
    G = IMG // P
    seed = 20
    torch.manual_seed(seed)
    model = VisionTransformer(image_size=IMG, patch_size=P, num_layers=L, num_heads=H,
                              hidden_dim=D, mlp_dim=M, num_classes=K).eval()
    assert model.encoder.ln.eps == 1e-6
    randomize_(model, seed)
    localise_tv_(model, seed, (G, G))

    d = fresh_dir(root, name)
    x_np = save_png_and_input(os.path.join(d, "image.png"), chelsea_32(), IMAGENET_MEAN, IMAGENET_STD)
    x = torch.from_numpy(x_np)

    logits, blocks = tv_plain_forward(model, x)
    SENS[name] = sensitivity(name, model, lambda: (lambda r: [r[0]] + list(r[1].values()))(
        tv_plain_forward(model, x)), alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH, ACT_QUICK])
    f64_check(name, model, lambda m, xx: (lambda r: [r[0]] + list(r[1].values()))(tv_plain_forward(m, xx)), x)
    attn_list = tv_attention_pass(model, x, logits)
    block_list = [blocks[l] for l in range(L + 1)]
    tv_self_checks(model, attn_list, block_list, logits, name)

    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    save_safetensors(os.path.join(d, "model.safetensors"), tv_to_timm(sd, L))
    model_args = {"img_size": IMG, "patch_size": P, "embed_dim": D, "depth": L,
                  "num_heads": H, "mlp_ratio": M / D}
    write_json(os.path.join(d, "config.json"),
               timm_config("vit_tiny_patch16_224", model_args, K, D, 3, (IMG, IMG),
                           IMAGENET_MEAN, IMAGENET_STD, CIFAR10))
    src = f"torchvision {torchvision.__version__} (torch {torch.__version__})"
    notes = ("One torchvision.models.VisionTransformer(image_size=32, patch_size=2, num_layers=3, num_heads=4, "
             "hidden_dim=48, mlp_dim=96, num_classes=10), exact GELU, LayerNorm eps 1e-6, seed 20, all weights "
             "randomized as for tv_timm (randomize_), then localise_tv_: the 256 patch position rows are 2D "
             "sinusoids (6 directions k*30deg, wavelengths 10/14/12/16/11/13 patches) rotated into the width by a "
             "random orthonormal mix (+0.2x the random table), and in block 1 heads 0/1/2 are position-local with "
             "target offsets (dy,dx) = (0,0)/(0,+1)/(-1,-1) while head 3 also attends to CLS (prefix mass ~0.4); "
             "blocks 2-3 are plain random. Expected outputs from torchvision itself. Grid 16x16, token order "
             "[CLS, 256 patches row-major], N = 257. logits = head(encoder.ln(x)[CLS]). Written with timm names "
             "(attn.qkv = in_proj). Architecture 'vit_tiny_patch16_224' with model_args overriding its shapes, as "
             "timm.create_model(name, **model_args) builds it. image.png = resources/samples/photos/chelsea.png cropped to "
             "(60, 0, 360, 300) and PIL BOX-resized to 32x32; image.png -> input.npy: (pixel/255 - mean)/std "
             f"with ImageNet mean {list(IMAGENET_MEAN)} / std {list(IMAGENET_STD)}, no resize.")
    write_outputs(d, x_np, logits, attn_list, block_list,
                  base_meta(name, src, "timm", L, H, D, 1, (IMG, IMG), 3, K, notes))
    if timm is not None:
        from timm.models.vision_transformer import VisionTransformer as TimmViT
        from safetensors.torch import load_file
        tm = TimmViT(**model_args, num_classes=K).eval()
        tm.load_state_dict(load_file(os.path.join(d, "model.safetensors")), strict=True)
        tl, ta, tb = run_timm(tm, x)
        assert_close(tl, logits, 1e-5, "timm(VisionTransformer) on tv_grid16 vs torchvision logits")
        for l in range(L):
            assert_close(ta[l], attn_list[l], 1e-5, "timm attn vs torchvision (grid16)")
        for l in range(L + 1):
            assert_close(tb[l], block_list[l], 1e-5, "timm blocks vs torchvision (grid16)")
        print("  tv_grid16: timm VisionTransformer reproduces torchvision (1e-5)")
    else:
        print("  tv_grid16: timm not available, cross-check skipped")
    summarize(name, G * G + 1, attn_list, logits)


# --------------------------------------------------------------------------
# 2. timm fixtures
# --------------------------------------------------------------------------

def timm_check_transform(cfg_path, img_path, x_np):
    """timm's own eval transform, from the pretrained_cfg we wrote, applied to image.png."""
    from timm.data import resolve_data_config, create_transform
    with open(cfg_path) as f:
        pc = json.load(f)["pretrained_cfg"]
    dc = resolve_data_config(pretrained_cfg=pc, use_test_size=True)
    tf = create_transform(**dc, is_training=False)
    img = Image.open(img_path)
    px = tf(img).unsqueeze(0).numpy()
    assert_close(px, x_np, 1e-6, "timm transform(image.png) vs input.npy")


def make_timm_fixture(root, name, arch, model_args, seed, mean, std, image_u8,
                      label_names, notes, alt_eps, alt_acts, classifier="head", prefix_tokens=1,
                      input_override=None, extra=None):
    torch.manual_seed(seed)
    model = timm.create_model(arch, pretrained=False, **model_args).eval()
    randomize_(model, seed)
    d = fresh_dir(root, name)
    img = model_args.get("img_size", 224)
    chans = model_args.get("in_chans", 3)
    if image_u8 is not None:
        x_np = save_png_and_input(os.path.join(d, "image.png"), image_u8, mean, std)
    else:
        x_np = input_override
    x = torch.from_numpy(x_np)
    logits, attns, blocks = run_timm(model, x)
    timm_manual_head(model, blocks[-1], logits)
    SENS[name] = sensitivity(name, model, lambda: (lambda r: [r[0]] + r[2])(run_timm(model, x)),
                             alt_eps, alt_acts)
    f64_check(name, model, lambda m, xx: (lambda r: [r[0]] + r[1] + r[2])(run_timm(m, xx)), x)
    path = os.path.join(d, "model.safetensors")
    save_safetensors(path, model.state_dict())
    timm_reload_check(lambda: timm.create_model(arch, pretrained=False, **model_args), path, x, logits)
    K = model_args["num_classes"]
    D = model.embed_dim
    cfg_path = os.path.join(d, "config.json")
    write_json(cfg_path, timm_config(arch, model_args, K, D, chans, (img, img), mean, std,
                                     label_names, classifier=classifier))
    if image_u8 is not None:
        timm_check_transform(cfg_path, os.path.join(d, "image.png"), x_np)
    L, H = len(model.blocks), model.blocks[0].attn.num_heads
    assert model.num_prefix_tokens == prefix_tokens
    src = f"timm {timm.__version__} (torch {torch.__version__})"
    meta = base_meta(name, src, "timm", L, H, D, prefix_tokens, x_np.shape[2:], chans, K, notes)
    if extra:
        meta.update(extra.get("meta", {}))
    write_outputs(d, x_np, logits, attns, blocks, meta)
    summarize(name, attns[0].shape[-1], attns, logits)
    return model, d, x


def make_timm_all(root):
    # -- DeiT distilled
    make_timm_fixture(
        root, "timm_deit_distilled", "deit_tiny_distilled_patch16_224",
        {"img_size": 32, "patch_size": 8, "embed_dim": 48, "depth": 2, "num_heads": 3,
         "mlp_ratio": 2.0, "num_classes": 10},
        seed=1, mean=IMAGENET_MEAN, std=IMAGENET_STD, image_u8=synth_landscape(32, 32, seed=101),
        label_names=CIFAR10, classifier=["head", "head_dist"], prefix_tokens=2,
        alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH],
        notes=("timm VisionTransformerDistilled. Token order [CLS, DIST, 16 patches]; pos_embed has 18 "
               "rows (covers both prefix tokens, added after concatenation). logits = eval-mode output "
               "= (head(norm(x)[0]) + head_dist(norm(x)[1])) / 2. LayerNorm eps 1e-6, exact GELU."))

    # -- DINOv2 with registers
    make_timm_fixture(
        root, "timm_dinov2_reg", "vit_small_patch14_reg4_dinov2",
        {"img_size": 56, "patch_size": 14, "embed_dim": 48, "depth": 2, "num_heads": 3,
         "mlp_ratio": 2.0, "reg_tokens": 4, "no_embed_class": True, "init_values": 1.0,
         "class_token": True, "num_classes": 10},
        seed=2, mean=IMAGENET_MEAN, std=IMAGENET_STD, image_u8=synth_landscape(56, 56, seed=102),
        label_names=CIFAR10, prefix_tokens=5, alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH],
        notes=("timm ViT with 4 register tokens, no_embed_class=True: pos_embed has 16 rows (patches "
               "only) and is added to the patch tokens BEFORE concatenation; cls_token and reg_token get "
               "no position embedding. Token order [CLS, REG0..REG3, 16 patches row-major]. Layer scale "
               "ls1.gamma / ls2.gamma randomized in [0.5, 1.5]: x = x + gamma1*attn(norm1(x)); "
               "x = x + gamma2*mlp(norm2(x)). logits = head(norm(x)[CLS]). LayerNorm eps 1e-6, exact GELU."))

    # -- CLIP-style (pre-norm, quick_gelu, eps 1e-5)
    make_timm_fixture(
        root, "timm_clip_quickgelu", "vit_base_patch16_clip_quickgelu_224",
        {"img_size": 32, "patch_size": 8, "embed_dim": 64, "depth": 2, "num_heads": 4,
         "mlp_ratio": 2.0, "pre_norm": True, "act_layer": "quick_gelu", "num_classes": 16},
        seed=3, mean=CLIP_MEAN, std=CLIP_STD, image_u8=synth_landscape(32, 32, seed=103),
        label_names=None, prefix_tokens=1, alt_eps=[1e-6, 1e-12], alt_acts=[ACT_EXACT],
        notes=("timm CLIP image tower layout: patch_embed.proj has NO bias; norm_pre (LayerNorm) is "
               "applied after cls concat + pos_embed and BEFORE block 0 (block_L0 is after norm_pre). "
               "All LayerNorms are torch nn.LayerNorm with eps 1e-5 (set by the architecture function, "
               "not listed in model_args; timm's own 'layernorm' string would mean eps 1e-6). "
               "act = QuickGELU x*sigmoid(1.702x). logits = head(norm(x)[CLS]) (head = 16-d projection, "
               "with a randomized bias). CLIP mean/std."))

    # -- greyscale
    make_timm_fixture(
        root, "timm_gray", "vit_tiny_patch16_224",
        {"img_size": 28, "patch_size": 7, "in_chans": 1, "embed_dim": 32, "depth": 2,
         "num_heads": 2, "num_classes": 10},
        seed=4, mean=FMNIST_MEAN, std=FMNIST_STD, image_u8=synth_garment(28, 28, seed=104),
        label_names=FASHION, prefix_tokens=1, alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH],
        notes=("1-channel timm ViT (in_chans=1): patch_embed.proj.weight is [32, 1, 7, 7]; image.png is "
               "8-bit greyscale (mode L); input = (p/255 - 0.2860)/0.3530. mlp_ratio 4 (fc1 32->128). "
               "logits = head(norm(x)[CLS])."))

    # -- position-embedding interpolation: trained at 32, run at 48
    rng_img = synth_landscape(48, 48, seed=105)
    x48 = image_to_input(rng_img, IMAGENET_MEAN, IMAGENET_STD)
    model, d, x = make_timm_fixture(
        root, "timm_interp", "vit_tiny_patch16_224",
        {"img_size": 32, "patch_size": 8, "embed_dim": 48, "depth": 2, "num_heads": 3,
         "mlp_ratio": 2.0, "dynamic_img_size": True, "num_classes": 10},
        seed=5, mean=IMAGENET_MEAN, std=IMAGENET_STD, image_u8=None, input_override=x48,
        label_names=CIFAR10, prefix_tokens=1, alt_eps=[1e-5, 1e-12], alt_acts=[ACT_TANH],
        notes=("Model built for 32x32 (4x4 grid; checkpoint pos_embed is [1, 17, 48]) with "
               "dynamic_img_size=True, reference run on a 48x48 input (6x6 grid, N=37). timm resamples "
               "the pos_embed on the fly with timm.layers.resample_abs_pos_embed: the CLS row is kept "
               "unchanged, the 16 patch rows are reshaped to a 4x4 grid (row-major) and resized to 6x6 with "
               "torch.nn.functional.interpolate(mode='bicubic', align_corners=False, antialias=True). "
               "For upsampling, antialias=True bicubic is the PIL-style kernel: cubic a=-0.5, "
               "source coordinate (i+0.5)*in/out - 0.5, taps that fall outside the grid are DROPPED and "
               "the remaining weights renormalised to sum 1 (NOT a=-0.75 with edge clamping, which is "
               "what antialias=False / HF Dinov2 use). pos_embed_resampled.npy [37, 48] is the "
               "resampled table actually added (CLS row first). input.npy is [1,3,48,48] (ImageNet "
               "mean/std of a synthetic image; no image.png). logits = head(norm(x)[CLS])."),
        extra={"meta": {"native_input_size": [32, 32]}})
    from timm.layers import resample_abs_pos_embed
    with torch.no_grad():
        pe = resample_abs_pos_embed(model.pos_embed, (6, 6), num_prefix_tokens=1)
        pe_ref = torch.cat([model.pos_embed[:, :1],
                            torch.nn.functional.interpolate(
                                model.pos_embed[:, 1:].reshape(1, 4, 4, -1).permute(0, 3, 1, 2),
                                size=(6, 6), mode="bicubic", align_corners=False, antialias=True)
                            .permute(0, 2, 3, 1).reshape(1, 36, -1)], dim=1)
        assert torch.equal(pe, pe_ref)
        # block_L0 must be patch_embed(x) + resampled pos_embed (and CLS + its pos row)
        tok = model.patch_embed(x).reshape(1, 36, -1)
        b0 = torch.cat([model.cls_token, tok], dim=1) + pe
    assert_close(b0[0], np.load(os.path.join(d, "block_L0.npy")), 1e-6, "interp block_L0")
    np.save(os.path.join(d, "pos_embed_resampled.npy"), f32(pe[0]))

    # How much would a different resampling kernel change the outputs?
    import timm.models.vision_transformer as tvt
    orig = tvt.resample_abs_pos_embed
    ref = (lambda r: [r[0]] + r[2])(run_timm(model, x))
    res = {}
    for label, kw in (("bicubic_antialias_off", dict(antialias=False)),
                      ("bilinear_antialias_off", dict(interpolation="bilinear", antialias=False)),
                      ("bilinear_antialias_on", dict(interpolation="bilinear", antialias=True))):
        tvt.resample_abs_pos_embed = lambda *a, _kw=kw, **k: orig(*a, **{**k, **_kw})
        try:
            res[label] = _rel_change(ref, (lambda r: [r[0]] + r[2])(run_timm(model, x)))
        finally:
            tvt.resample_abs_pos_embed = orig
    assert (lambda r: [r[0]] + r[2])(run_timm(model, x))[0].equal(ref[0])
    for k, v in res.items():
        assert v >= 1e-3, f"timm_interp insensitive to {k}: {v:.2e}"
    print("  timm_interp: outputs change with " + ", ".join(f"{k}: {v:.1e}" for k, v in res.items()))


# --------------------------------------------------------------------------
# 3. transformers fixtures
# --------------------------------------------------------------------------

def hf_run(model, x):
    with torch.no_grad():
        return model(pixel_values=x, output_attentions=True, output_hidden_states=True)


def hf_reload(cls, d, x, ref_out, key):
    m2 = cls.from_pretrained(d, attn_implementation="eager").eval()
    out = hf_run(m2, x)
    assert torch.equal(getattr(out, key), getattr(ref_out, key)), "HF reload mismatch"
    assert os.path.exists(os.path.join(d, "model.safetensors"))


def hf_sens(name, model, x, key, alt_eps, alt_acts):
    SENS[name] = sensitivity(
        name, model, lambda: (lambda o: [getattr(o, key)] + list(o.hidden_states))(hf_run(model, x)),
        alt_eps, alt_acts)
    f64_check(name, model, lambda m, xx: (lambda o: [getattr(o, key)] + list(o.attentions)
                                          + list(o.hidden_states))(hf_run(m, xx)), x)


def hf_meta_write(d, name, x_np, logits, out, L, H, D, P, K, notes):
    src = f"transformers {transformers.__version__} (torch {torch.__version__})"
    attns = [a[0] for a in out.attentions]
    blocks = [h[0] for h in out.hidden_states]
    meta = base_meta(name, src, "hf", L, H, D, P, x_np.shape[2:], x_np.shape[1], K, notes)
    write_outputs(d, x_np, logits, attns, blocks, meta)
    summarize(name, attns[0].shape[-1], attns, logits)


def make_hf_all(root):
    from transformers import (CLIPVisionConfig, CLIPVisionModelWithProjection, CLIPImageProcessor,
                              Dinov2Config, Dinov2ForImageClassification, BitImageProcessor,
                              ViTConfig, ViTForImageClassification, ViTImageProcessor)

    def check_proc(proc_cls, d, x_np):
        proc = proc_cls.from_pretrained(d)
        px = proc(images=Image.open(os.path.join(d, "image.png")), return_tensors="np")["pixel_values"]
        assert_close(px, x_np, 1e-6, f"{proc_cls.__name__}(image.png) vs input.npy")

    # -- CLIP vision tower with projection
    name, seed = "hf_clip_vision", 10
    cfg = CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, image_size=32, patch_size=8, projection_dim=16,
                           hidden_act="quick_gelu", layer_norm_eps=1e-5, num_channels=3)
    torch.manual_seed(seed)
    model = CLIPVisionModelWithProjection(cfg).eval()
    randomize_(model, seed)
    d = fresh_dir(root, name)
    x_np = save_png_and_input(os.path.join(d, "image.png"), synth_landscape(32, 32, seed=110),
                              CLIP_MEAN, CLIP_STD)
    x = torch.from_numpy(x_np)
    out = hf_run(model, x)
    model.save_pretrained(d, safe_serialization=True)
    CLIPImageProcessor(do_resize=True, size={"shortest_edge": 32}, resample=3, do_center_crop=True,
                       crop_size={"height": 32, "width": 32}, do_rescale=True, rescale_factor=1 / 255,
                       do_normalize=True, image_mean=list(CLIP_MEAN), image_std=list(CLIP_STD),
                       do_convert_rgb=True).save_pretrained(d)
    check_proc(CLIPImageProcessor, d, x_np)
    hf_reload(CLIPVisionModelWithProjection, d, x, out, "image_embeds")
    with torch.no_grad():  # logits from the last (un-normed) hidden state
        vm = model.vision_model
        y = model.visual_projection(vm.post_layernorm(out.hidden_states[-1][:, 0]))
    assert_close(y[0], out.image_embeds[0], 1e-5, "clip head from last hidden")
    hf_sens(name, model, x, "image_embeds", [1e-6, 1e-12], [ACT_EXACT])
    hf_meta_write(d, name, x_np, out.image_embeds[0], out, 2, 4, 64, 1, 16,
                  "HF CLIPVisionModelWithProjection (model_type clip_vision_model). "
                  "Token order [CLS(class_embedding), 16 patches]; patch_embedding has no bias; "
                  "position_embedding.weight is [17, 64]. pre_layrnorm is applied before the encoder, "
                  "so block_L0 = hidden_states[0] is AFTER pre_layrnorm. logits = image_embeds = "
                  "visual_projection(post_layernorm(x[CLS])) (projection has no bias), 16-d. "
                  "quick_gelu, LayerNorm eps 1e-5. Attention scale applied to q (incl. bias), equivalent "
                  "to scaling the scores. CLIP mean/std, bicubic; image already 32x32 so resize/crop "
                  "are identities.")

    # -- DINOv2 classifier
    name, seed = "hf_dinov2", 11
    cfg = Dinov2Config(hidden_size=48, num_hidden_layers=2, num_attention_heads=3, mlp_ratio=2,
                       image_size=56, patch_size=14, num_channels=3, layer_norm_eps=1e-6,
                       hidden_act="gelu", layerscale_value=1.0, use_swiglu_ffn=False, qkv_bias=True,
                       num_labels=10, id2label={i: n for i, n in enumerate(CIFAR10)},
                       label2id={n: i for i, n in enumerate(CIFAR10)})
    torch.manual_seed(seed)
    model = Dinov2ForImageClassification(cfg).eval()
    randomize_(model, seed)
    d = fresh_dir(root, name)
    x_np = save_png_and_input(os.path.join(d, "image.png"), synth_landscape(56, 56, seed=111),
                              IMAGENET_MEAN, IMAGENET_STD)
    x = torch.from_numpy(x_np)
    # Native grid: interpolate_pos_encoding must be an exact no-op.
    with torch.no_grad():
        emb = model.dinov2.embeddings
        ip = emb.interpolate_pos_encoding(torch.zeros(1, 17, 48), 56, 56)
        assert ip is emb.position_embeddings or torch.equal(ip, emb.position_embeddings)
    out = hf_run(model, x)
    model.save_pretrained(d, safe_serialization=True)
    BitImageProcessor(do_resize=True, size={"shortest_edge": 56}, resample=3, do_center_crop=True,
                      crop_size={"height": 56, "width": 56}, do_rescale=True, rescale_factor=1 / 255,
                      do_normalize=True, image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD),
                      do_convert_rgb=True).save_pretrained(d)
    check_proc(BitImageProcessor, d, x_np)
    hf_reload(Dinov2ForImageClassification, d, x, out, "logits")
    with torch.no_grad():
        s = model.dinov2.layernorm(out.hidden_states[-1])
        y = model.classifier(torch.cat([s[:, 0], s[:, 1:].mean(dim=1)], dim=1))
    assert_close(y[0], out.logits[0], 1e-5, "dinov2 head from last hidden")
    hf_sens(name, model, x, "logits", [1e-5, 1e-12], [ACT_TANH])
    hf_meta_write(d, name, x_np, out.logits[0], out, 2, 3, 48, 1, 10,
                  "HF Dinov2ForImageClassification. Token order [CLS, 16 patches]; "
                  "position_embeddings [1, 17, 48] (CLS included, added after concat). "
                  "interpolate_pos_encoding returns the table unchanged at the native 4x4 grid "
                  "(early return in transformers 4.40, verified). Layer scale "
                  "layer_scale1.lambda1 / layer_scale2.lambda1 randomized in [0.5, 1.5]. "
                  "embeddings.mask_token is unused at inference. logits = "
                  "classifier(concat(layernorm(x)[CLS], mean over PATCH tokens of layernorm(x))) - "
                  "classifier.weight is [10, 96]. LayerNorm eps 1e-6, exact GELU, mlp_ratio 2 "
                  "(fc1 48->96). Preprocessing BitImageProcessor: shortest_edge 56 bicubic + center "
                  "crop 56 (identities here) + ImageNet mean/std.")

    # -- ViT with eps 1e-5 and tanh GELU
    name, seed = "hf_vit_eps5", 12
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    hidden_act="gelu_new", layer_norm_eps=1e-5, image_size=32, patch_size=8,
                    num_channels=3, qkv_bias=True, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, num_labels=10,
                    id2label={i: n for i, n in enumerate(CIFAR10)},
                    label2id={n: i for i, n in enumerate(CIFAR10)})
    torch.manual_seed(seed)
    model = ViTForImageClassification(cfg).eval()
    randomize_(model, seed)
    d = fresh_dir(root, name)
    x_np = save_png_and_input(os.path.join(d, "image.png"), synth_landscape(32, 32, seed=112), HALF, HALF)
    x = torch.from_numpy(x_np)
    out = hf_run(model, x)
    model.save_pretrained(d, safe_serialization=True)
    ViTImageProcessor(do_resize=True, size={"height": 32, "width": 32}, resample=2, do_rescale=True,
                      rescale_factor=1 / 255, do_normalize=True, image_mean=list(HALF),
                      image_std=list(HALF)).save_pretrained(d)
    check_proc(ViTImageProcessor, d, x_np)
    hf_reload(ViTForImageClassification, d, x, out, "logits")
    with torch.no_grad():
        y = model.classifier(model.vit.layernorm(out.hidden_states[-1])[:, 0])
    assert_close(y[0], out.logits[0], 1e-5, "vit head from last hidden")
    hf_sens(name, model, x, "logits", [1e-6, 1e-12], [ACT_EXACT])
    hf_meta_write(d, name, x_np, out.logits[0], out, 2, 2, 32, 1, 10,
                  "HF ViTForImageClassification with layer_norm_eps 1e-5 and hidden_act 'gelu_new' "
                  "(tanh approximation 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))). Token order [CLS, 16 "
                  "patches]. logits = classifier(vit.layernorm(x)[CLS]). Preprocessing: mean = std = 0.5 "
                  "(not ImageNet), bilinear resize to 32x32 (identity here).")


# --------------------------------------------------------------------------

FIXTURE_GROUPS = [
    ("tv", ("tv_timm", "tv_hf", "tv_torchvision", "tv_grid16"), None,
     lambda root: (make_tv(root), make_tv_grid16(root))),
    ("timm", ("timm_deit_distilled", "timm_dinov2_reg", "timm_clip_quickgelu", "timm_gray",
              "timm_interp"), "timm", make_timm_all),
    ("hf", ("hf_clip_vision", "hf_dinov2", "hf_vit_eps5"), "transformers", make_hf_all),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    ap.add_argument("--only", nargs="*", choices=[g[0] for g in FIXTURE_GROUPS],
                    help="fixture groups to build (default: all available)")
    args = ap.parse_args()
    if Image is None:
        sys.exit("Pillow is required (Debian: python3-pil)")
    os.makedirs(args.out, exist_ok=True)
    print("versions:", json.dumps(versions()))
    avail = {"timm": timm is not None and safetensors is not None,
             "transformers": transformers is not None and safetensors is not None}
    for group, names, need, fn in FIXTURE_GROUPS:
        if args.only and group not in args.only:
            continue
        if need is not None and not avail[need]:
            print(f"SKIP {group} ({', '.join(names)}): {need} (+ safetensors) not importable "
                  f"with {sys.executable}")
            continue
        fn(args.out)
    print(f"done: {len(SUMMARY)} fixtures written to {args.out}")


if __name__ == "__main__":
    main()
