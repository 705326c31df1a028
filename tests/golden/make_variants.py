#!/usr/bin/env python3
"""Reference outputs of the inference-time variants (docs/analyses.md section 6) on the tv_timm fixture.

A plain PyTorch forward of a pre-norm timm-named ViT, written from the formulas, independent of the C++ engine:
  NeuTRENO (Nguyen et al., Eq. 9): O_l = A_l V_l + lambda (V_1 - V_l), per head, before the output projection
  Boost (filtering paper, Eq. 31):  R_l = U_l + t X_0 + (1 - t) X_{l-1}
Its plain forward (lambda = t = 0) is checked against the fixture's torchvision outputs first.

Run: /usr/bin/python3 tests/golden/make_variants.py   (Debian python3-torch; writes tests/golden/variants/)
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "tv_timm")
OUT = os.path.join(HERE, "variants")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32"
        b, en = e["data_offsets"]
        arr = np.frombuffer(data[8 + n + b: 8 + n + en], dtype="<f4").reshape(e["shape"])
        out[name] = torch.from_numpy(arr.copy()).double()
    return out


def forward(w, x, heads, eps, lam=0.0, t=0.0):
    """x [1, C, H, W] -> logits, attention [L][H, N, N], blocks [L+1][N, D] (double precision)."""
    p = w["patch_embed.proj.weight"].shape[-1]
    tok = F.conv2d(x, w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=p).flatten(2).transpose(1, 2)
    tok = torch.cat([w["cls_token"], tok], 1) + w["pos_embed"]
    x0 = tok
    d_model = tok.shape[-1]
    d = d_model // heads
    depth = len({k.split(".")[1] for k in w if k.startswith("blocks.")})
    attns, blocks, v1 = [], [tok[0]], None
    for l in range(depth):
        b = f"blocks.{l}."
        h = F.layer_norm(tok, (d_model,), w[b + "norm1.weight"], w[b + "norm1.bias"], eps)
        qkv = F.linear(h, w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"])
        n = qkv.shape[1]
        q, k, v = qkv.reshape(1, n, 3, heads, d).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)
        o = a @ v
        if l == 0:
            v1 = v
        else:
            o = o + lam * (v1 - v)
        u = F.linear(o.transpose(1, 2).reshape(1, n, d_model), w[b + "attn.proj.weight"], w[b + "attn.proj.bias"])
        r = u + t * x0 + (1 - t) * tok
        h2 = F.layer_norm(r, (d_model,), w[b + "norm2.weight"], w[b + "norm2.bias"], eps)
        tok = r + F.linear(F.gelu(F.linear(h2, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"])),
                           w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
        attns.append(a[0])
        blocks.append(tok[0])
    final = F.layer_norm(tok, (d_model,), w["norm.weight"], w["norm.bias"], eps)
    logits = F.linear(final[:, 0], w["head.weight"], w["head.bias"])[0]
    return logits, attns, blocks


def save(dirname, logits, attns, blocks):
    os.makedirs(dirname, exist_ok=True)
    np.save(os.path.join(dirname, "logits.npy"), logits.float().numpy())
    for l, a in enumerate(attns, 1):
        np.save(os.path.join(dirname, f"attn_L{l}.npy"), a.float().numpy())
    for l, b in enumerate(blocks):
        np.save(os.path.join(dirname, f"block_L{l}.npy"), b.float().numpy())


def main():
    w = read_safetensors(os.path.join(FIXTURE, "model.safetensors"))
    meta = json.load(open(os.path.join(FIXTURE, "meta.json")))
    x = torch.from_numpy(np.load(os.path.join(FIXTURE, "input.npy"))).double()
    heads = meta["num_heads"]
    logits, attns, blocks = forward(w, x, heads, 1e-6)
    ref = np.load(os.path.join(FIXTURE, "logits.npy"))
    err = np.abs(logits.numpy() - ref).max() / np.abs(ref).max()
    assert err < 1e-5, f"plain forward disagrees with torchvision: {err}"
    print(f"plain forward matches torchvision's logits (relative {err:.1e})")
    for name, lam, t in [("neutreno_0.6", 0.6, 0.0), ("neutreno_-0.3", -0.3, 0.0), ("boost_0.3", 0.0, 0.3),
                         ("boost_1", 0.0, 1.0), ("neutreno_0.6_boost_0.3", 0.6, 0.3)]:
        out = forward(w, x, heads, 1e-6, lam, t)
        changed = np.abs(out[0].numpy() - logits.numpy()).max()
        assert changed > 1e-3, f"{name} does not change the logits"
        save(os.path.join(OUT, name), *out)
        print(f"{name}: logits change by {changed:.3f}")
    json.dump({"fixture": "tv_timm", "torch": torch.__version__,
               "variants": {"neutreno_0.6": {"neutreno_lambda": 0.6}, "neutreno_-0.3": {"neutreno_lambda": -0.3},
                            "boost_0.3": {"boost_t": 0.3}, "boost_1": {"boost_t": 1.0},
                            "neutreno_0.6_boost_0.3": {"neutreno_lambda": 0.6, "boost_t": 0.3}}},
              open(os.path.join(OUT, "variants.json"), "w"), indent=2)


if __name__ == "__main__":
    sys.exit(main())
