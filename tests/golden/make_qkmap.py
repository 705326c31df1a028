#!/usr/bin/env python3
"""Reference query-key joint embeddings (docs/analyses.md section 9) for tv_timm and timm_dinov2_reg, from the
definition.

The queries and keys of every head come from make_ablation.py's independent float64 forward (checked there against
each fixture's own reference logits). Two images: the fixture's input and the same input mirrored left to right. Per
head of every layer, over the 2 N query rows q and 2 N key rows k:
  k' = k - mean(k) + mean(q);  a = sqrt(mean ||k'|| / mean ||q||);  q'' = a q;  k'' = k' / a
  the rows of [q''; k''] centred, projected on the covariance's two leading eigenvectors, each signed so that its
  largest-magnitude loading is positive
  agreement: the mean over queries of the Spearman correlation, over the keys of the query's image, of q . k and
  minus the distance of q'' and k'' in the plane (ranks of ties averaged)
Writes tests/golden/qkmap/<fixture>.json: per layer and head the scale a, the agreement and the points' x and y
(queries of image 0, of image 1, then keys likewise, tokens in order).

Run: /usr/bin/python3 tests/golden/make_qkmap.py   (Debian python3-torch)
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_ablation import FIXTURES, forward  # noqa: E402
from make_variants import read_safetensors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "qkmap")


def ranks(v):
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def embed(qs, ks):
    """qs, ks: lists (one per image) of [N, d] float64 arrays."""
    q, k = np.concatenate(qs), np.concatenate(ks)
    k1 = k - k.mean(0) + q.mean(0)
    a = np.sqrt(np.linalg.norm(k1, axis=1).mean() / np.linalg.norm(q, axis=1).mean())
    joint = np.concatenate([a * q, k1 / a])
    centred = joint - joint.mean(0)
    values, vectors = np.linalg.eigh(centred.T @ centred)
    top = vectors[:, ::-1][:, :2].T.copy()
    for r in range(2):
        if top[r][np.argmax(np.abs(top[r]))] < 0:
            top[r] = -top[r]
    xy = centred @ top.T
    m, n = len(qs), qs[0].shape[0]
    rhos = []
    for image in range(m):
        for i in range(n):
            qp = xy[image * n + i]
            score = qs[image][i] @ ks[image].T
            keys = xy[m * n + image * n: m * n + (image + 1) * n]
            closeness = -np.hypot(keys[:, 0] - qp[0], keys[:, 1] - qp[1])
            rhos.append(np.corrcoef(ranks(score), ranks(closeness))[0, 1])
    return a, float(np.mean(rhos)), xy


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in FIXTURES:
        folder = os.path.join(HERE, "fixtures", name)
        w = read_safetensors(os.path.join(folder, "model.safetensors"))
        meta = json.load(open(os.path.join(folder, "meta.json")))
        x = torch.from_numpy(np.load(os.path.join(folder, "input.npy"))).double()
        captured = []
        for image in (x, torch.flip(x, dims=[3])):
            capture = {}
            forward(w, image, meta["num_heads"], 1e-6, capture=capture)
            captured.append(capture)
        heads = []
        for layer in sorted(captured[0]):
            for h in range(meta["num_heads"]):
                qs = [c[layer][0][h].numpy() for c in captured]
                ks = [c[layer][1][h].numpy() for c in captured]
                a, agreement, xy = embed(qs, ks)
                heads.append({"layer": layer, "head": h, "scale": a, "agreement": agreement,
                              "x": xy[:, 0].tolist(), "y": xy[:, 1].tolist()})
                print(f"{name} L{layer}H{h}: scale {a:.4f}, agreement {agreement:.4f}")
        json.dump({"fixture": name, "images": ["input.npy", "input.npy mirrored left to right"], "heads": heads},
                  open(os.path.join(OUT, name + ".json"), "w"))


if __name__ == "__main__":
    sys.exit(main())
