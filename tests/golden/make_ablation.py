#!/usr/bin/env python3
"""Reference head ablations (docs/analyses.md section 8) on two fixtures of different naming and make-up.

A plain float64 PyTorch forward of a pre-norm timm-named ViT, written from the definitions and independent of the C++
engine (class token, register tokens, timm's no_embed_class, layer scale), checked against each fixture's own
reference logits (timm / torchvision) first. Then, for every layer l and head h, the forward again with that head's
output O_l[h] ([N, d], before the output projection) replaced:
  zero: O_l[h] = 0 (the projection's bias stays)
  mean: every row of O_l[h] replaced by the mean of its rows over the tokens
and from the clean logits z (prediction c) and the ablated z':
  dlogit = z'_c - z_c, dprob = softmax(z')_c - softmax(z)_c, kl = KL(softmax(z) || softmax(z')), flip = argmax z' != c.

The engine reads tv_timm in timm naming and tv_hf (the same network) in Hugging Face naming, and timm_dinov2_reg.
Writes tests/golden/ablation/<fixture>_<mode>.csv (layer, head, dlogit, dprob, kl, flip) and ablation.json.

Run: /usr/bin/python3 tests/golden/make_ablation.py   (Debian python3-torch)
"""
import csv
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_variants import read_safetensors  # noqa: E402  (a safetensors reader in plain Python)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "ablation")
FIXTURES = ["tv_timm", "timm_dinov2_reg"]


def forward(w, x, heads, eps, ablate=None, mode="zero", capture=None):
    """x [1, C, H, W] -> logits [K] (float64). ablate = (layer 1..L, head) or None. capture: a dict that receives each
    layer's queries and keys, capture[l] = (q, k), [H, N, d] each (make_qkmap.py)."""
    p = w["patch_embed.proj.weight"].shape[-1]
    patches = F.conv2d(x, w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=p).flatten(2).transpose(1, 2)
    prefix = [w["cls_token"]] + ([w["reg_token"]] if "reg_token" in w else [])
    if w["pos_embed"].shape[1] == patches.shape[1]:  # timm's no_embed_class: positions for the patches only
        tok = torch.cat(prefix + [patches + w["pos_embed"]], 1)
    else:
        tok = torch.cat(prefix + [patches], 1) + w["pos_embed"]
    D = tok.shape[-1]
    d = D // heads
    depth = len({k.split(".")[1] for k in w if k.startswith("blocks.")})
    for l in range(1, depth + 1):
        b = f"blocks.{l - 1}."
        h = F.layer_norm(tok, (D,), w[b + "norm1.weight"], w[b + "norm1.bias"], eps)
        qkv = F.linear(h, w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"])
        n = qkv.shape[1]
        q, k, v = qkv.reshape(1, n, 3, heads, d).permute(2, 0, 3, 1, 4)
        if capture is not None:
            capture[l] = (q[0], k[0])
        o = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1) @ v  # [1, H, N, d]
        if ablate is not None and ablate[0] == l:
            o = o.clone()
            hh = ablate[1]
            o[:, hh] = 0.0 if mode == "zero" else o[:, hh].mean(1, keepdim=True).expand_as(o[:, hh])
        u = F.linear(o.transpose(1, 2).reshape(1, n, D), w[b + "attn.proj.weight"], w[b + "attn.proj.bias"])
        if b + "ls1.gamma" in w:
            u = u * w[b + "ls1.gamma"]
        tok = tok + u
        h2 = F.layer_norm(tok, (D,), w[b + "norm2.weight"], w[b + "norm2.bias"], eps)
        m = F.linear(F.gelu(F.linear(h2, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"])), w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
        if b + "ls2.gamma" in w:
            m = m * w[b + "ls2.gamma"]
        tok = tok + m
    final = F.layer_norm(tok, (D,), w["norm.weight"], w["norm.bias"], eps)
    return F.linear(final[:, 0], w["head.weight"], w["head.bias"])[0]


def effects(clean, ablated):
    c = int(torch.argmax(clean))
    p, p2 = torch.softmax(clean, 0), torch.softmax(ablated, 0)
    kl = float((p * (torch.log_softmax(clean, 0) - torch.log_softmax(ablated, 0))).sum())
    return float(ablated[c] - clean[c]), float(p2[c] - p[c]), kl, int(int(torch.argmax(ablated)) != c)


def main():
    os.makedirs(OUT, exist_ok=True)
    record = {"torch": torch.__version__, "fixtures": {}}
    for name in FIXTURES:
        folder = os.path.join(HERE, "fixtures", name)
        w = read_safetensors(os.path.join(folder, "model.safetensors"))
        meta = json.load(open(os.path.join(folder, "meta.json")))
        x = torch.from_numpy(np.load(os.path.join(folder, "input.npy"))).double()
        heads, depth = meta["num_heads"], meta["num_layers"]
        clean = forward(w, x, heads, 1e-6)
        ref = np.load(os.path.join(folder, "logits.npy"))
        err = np.abs(clean.numpy() - ref).max() / np.abs(ref).max()
        assert err < 1e-5, f"{name}: the plain forward disagrees with the fixture's reference: {err}"
        record["fixtures"][name] = {"predicted": int(torch.argmax(clean)), "plain_forward_error": err}
        for mode in ("zero", "mean"):
            rows = []
            for l in range(1, depth + 1):
                for h in range(heads):
                    rows.append([l, h, *effects(clean, forward(w, x, heads, 1e-6, (l, h), mode))])
            assert max(abs(r[2]) for r in rows) > 1e-3, f"{name} {mode}: no ablation changes anything"
            with open(os.path.join(OUT, f"{name}_{mode}.csv"), "w", newline="") as f:
                out = csv.writer(f, lineterminator="\n")
                out.writerow(["layer", "head", "dlogit", "dprob", "kl", "flip"])
                for r in rows:
                    out.writerow([r[0], r[1], repr(r[2]), repr(r[3]), repr(r[4]), r[5]])
            print(f"{name} {mode}: {len(rows)} heads, largest |dlogit| {max(abs(r[2]) for r in rows):.4f}, flips {sum(r[5] for r in rows)}")
    json.dump(record, open(os.path.join(OUT, "ablation.json"), "w"), indent=2)


if __name__ == "__main__":
    sys.exit(main())
