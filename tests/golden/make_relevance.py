#!/usr/bin/env python3
"""Reference class relevance (Analyses.h section 10), for tests/engine/RelevanceTest.cpp, written from the papers:

- GAE, Chefer, Gur and Wolf, "Generic Attention-model Explainability for Interpreting Bi-Modal and Encoder-Decoder
  Transformers" (2021), eq. for self-attention: R = I; for every layer R <- R + mean_h((grad A ⊙ A)^+) R, with
  grad A = d y_c / d A_l; the relevance of the tokens is R's row of the CLS token.
- Grad-CAM (Selvaraju et al. 2017) on the token grid of block output X_l: weights = the mean over the patch tokens
  of d y_c / d X_l, map = ReLU(sum over the width of weights * X_l) per patch token.

For the tv_grid16 fixture (its input.npy) through make_analyses.py's float64 forward, with autograd: for the predicted
class and for class 3, GAE's CLS row over every token [N] and Grad-CAM at layers 2 (X_{L-1}, the default) and 1.
Written to tests/golden/relevance/: gae_<class>.npy [N] and gradcam_<class>_L<l>.npy [gh, gw], float64, and
classes.json (the predicted class).

Run: /usr/bin/python3 tests/golden/make_relevance.py   (Debian python3-torch + numpy; a second)
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

OUT = os.path.join(HERE, "relevance")


def relevance(m, x, target):
    out = m.forward(x.clone().requires_grad_(True))  # the graph starts at the input; the weights stay constants
    for t in out["A"] + out["X"]:
        t.retain_grad()
    logits = out["logits"]
    cls = int(logits.argmax()) if target is None else target
    logits[cls].backward()
    n = out["A"][0].shape[-1]
    r = torch.eye(n, dtype=torch.float64)
    for a in out["A"]:
        cam = (a.grad * a).clamp(min=0).mean(0)
        r = r + cam @ r
    gradcams = {}
    for layer in (m.L - 1, 1):
        xl, gl = out["X"][layer][1:], out["X"][layer].grad[1:]
        gradcams[layer] = torch.relu((xl * gl.mean(0)).sum(1)).reshape(m.gh, m.gw)
    return cls, r[0].detach().numpy(), {k: v.detach().numpy() for k, v in gradcams.items()}


def main():
    m = ma.Model(os.path.join(ma.FIXTURES, "tv_grid16"))
    x = torch.from_numpy(np.load(os.path.join(m.dir, "input.npy"))).double()
    m.check_against_fixture(m.forward(x))
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    predicted = None
    for target in (None, 3):
        cls, gae, gradcams = relevance(m, x, target)
        predicted = cls if target is None else predicted
        np.save(os.path.join(OUT, f"gae_{cls}.npy"), gae)
        for layer, cam in gradcams.items():
            np.save(os.path.join(OUT, f"gradcam_{cls}_L{layer}.npy"), cam)
        print("class", cls, "GAE CLS row sum", gae.sum(), "Grad-CAM max", {k: float(v.max()) for k, v in gradcams.items()})
    with open(os.path.join(OUT, "classes.json"), "w") as f:
        json.dump({"fixture": "tv_grid16", "predicted": predicted, "other": 3}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
