#!/usr/bin/env python3
"""Reference token norms, high-norm outliers and attention sinks (Analyses.h section 7), for
tests/engine/TokenNormsTest.cpp, written from the definitions:

- per layer l = 0..L, the Euclidean norm of every token of the block output X_l (prefix tokens first);
- the median of the patch tokens' norms (the mean of the middle two for an even count);
- a patch token is a high-norm outlier when its norm exceeds RATIO times that median (Darcet et al. 2024 flag the
  tokens far above the rest; attnscope's cut is relative to the median so that it needs no model's scale);
- the attention A_{l+1}, which reads X_l, received by each token: the mean over heads and every query row of
  A_{l+1}[h, q, i]; its sum over the outliers (the share they absorb) and over the prefix tokens.

Two fixtures, two independent sources of X_l and A_l:
- tv_grid16 (CLS only, 16x16 patches): make_analyses.py's float64 forward of its input.npy, checked against
  torchvision's float32 outputs (relative 1e-5);
- timm_dinov2_reg (CLS + 4 registers, layer scale, no_embed_class): timm's own float32 X_l and A_l as the fixture
  stores them (block_L*.npy, attn_L*.npy), computed by timm 1.0.9 from its input.npy.
Random weights grow no natural outliers, so each fixture is cut at a ratio that flags a few tokens (RATIOS), checked
to leave every patch norm at least 1e-4 of the cut away from it, so float32 rounding cannot move a token across.

Written to tests/golden/token_norms/<fixture>/: norms.npy [L+1, N], received.npy [L, N] (layers 0..L-1), and
summary.json (ratio, per layer: median, max ratio, cls ratio, register ratio, outliers, outlier and prefix shares).

Run: /usr/bin/python3 tests/golden/make_token_norms.py   (Debian python3-torch + numpy; a second)
"""
import json
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_analyses as ma  # noqa: E402

OUT = os.path.join(HERE, "token_norms")
RATIOS = {"tv_grid16": 1.2, "timm_dinov2_reg": 1.12}
REGISTERS = {"tv_grid16": 0, "timm_dinov2_reg": 4}


def tv_grid16_taps():
    m = ma.Model(os.path.join(ma.FIXTURES, "tv_grid16"))
    x = torch.from_numpy(np.load(os.path.join(m.dir, "input.npy"))).double()
    out = m.forward(x)
    m.check_against_fixture(out)
    return [t.numpy() for t in out["X"]], [a.numpy() for a in out["A"]], 1


def dinov2_reg_taps():
    d = os.path.join(ma.FIXTURES, "timm_dinov2_reg")
    meta = json.load(open(os.path.join(d, "meta.json")))
    L = meta["num_layers"]
    X = [np.load(os.path.join(d, f"block_L{l}.npy")).astype(np.float64).reshape(-1, meta["width"]) for l in range(L + 1)]
    A = [np.load(os.path.join(d, f"attn_L{l}.npy")).astype(np.float64).reshape(meta["num_heads"], X[0].shape[0], -1)
         for l in range(1, L + 1)]
    return X, A, meta["num_prefix_tokens"]


def norms_of(X, A, P, registers, ratio):
    layers, received_all = [], []
    for l, x in enumerate(X):
        n = np.sqrt((x * x).sum(1))
        patches = n[P:]
        med = float(np.median(patches))
        cut = ratio * med
        margin = np.abs(patches - cut).min() / cut
        assert margin > 1e-4, f"layer {l}: a patch norm within {margin:.2e} of the cut; choose another ratio"
        outliers = [int(P + i) for i in np.nonzero(patches > cut)[0]]
        row = {"layer": l, "median": med, "max_ratio": float(patches.max() / med),
               "cls_ratio": float(n[0] / med) if P > 0 else None,
               "register_ratio": float(n[P - registers:P].mean() / med) if registers else None,
               "outliers": outliers}
        if l < len(A):
            rec = A[l].mean(axis=(0, 1))  # A_{l+1}: mean over heads and query rows
            received_all.append(rec)
            row["outlier_attention"] = float(rec[outliers].sum())
            row["prefix_attention"] = float(rec[:P].sum()) if P > 0 else None
        layers.append(row)
    return np.stack([np.sqrt((x * x).sum(1)) for x in X]), np.stack(received_all), layers


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for name, taps in (("tv_grid16", tv_grid16_taps), ("timm_dinov2_reg", dinov2_reg_taps)):
        X, A, P = taps()
        norms, received, layers = norms_of(X, A, P, REGISTERS[name], RATIOS[name])
        d = os.path.join(OUT, name)
        os.makedirs(d)
        np.save(os.path.join(d, "norms.npy"), norms)
        np.save(os.path.join(d, "received.npy"), received)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump({"fixture": name, "ratio": RATIOS[name], "prefix": P, "registers": REGISTERS[name], "layers": layers},
                      f, indent=1)
            f.write("\n")
        print(name, "outliers per layer", [len(r["outliers"]) for r in layers],
              "outlier shares", [round(r.get("outlier_attention") or 0, 4) for r in layers])


if __name__ == "__main__":
    main()
