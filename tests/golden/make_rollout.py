#!/usr/bin/env python3
"""Reference attention rollouts with head fusion and discarding (docs/analyses.md section 2; the options of
vit-explain), for tests/engine/AnalysesTest.cpp (RolloutGolden).

For the tv_grid16 fixture (its input.npy) through make_analyses.py's float64 forward: for each head fusion (mean, max,
min) and discard share (0, 0.5, 0.9), R = Â_L ... Â_1 with Â_l = 0.5 F_l + 0.5 I, rows renormalised, where F_l is the
fused [N, N] map of layer l after its floor(share * N^2) smallest entries are set to 0 (ties in index order; the
entry [0, 0], the first token's attention to itself, is never discarded, as in vit-explain). Written to
tests/golden/rollout/rollout_<fusion>_<share>.npy: rows 0 (the CLS query) and 137 (a patch query) of R, float64 [2, N].

Run: /usr/bin/python3 tests/golden/make_rollout.py   (Debian python3-torch + numpy; a second or two)
"""
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_analyses as ma  # noqa: E402

OUT = os.path.join(HERE, "rollout")
ROWS = [0, 137]


def fuse(a, fusion):
    return {"mean": lambda: a.mean(0), "max": lambda: a.max(0), "min": lambda: a.min(0)}[fusion]()


def rollout(maps, fusion, share):
    n = maps[0].shape[-1]
    result = np.eye(n)
    for a in maps:
        f = fuse(a, fusion).copy()
        count = int(np.floor(share * n * n))
        if count > 0:
            flat = f.reshape(-1)
            order = np.argsort(flat[1:], kind="stable")[:count] + 1  # entry 0 kept
            flat[order] = 0.0
        a_hat = 0.5 * f + 0.5 * np.eye(n)
        a_hat /= a_hat.sum(axis=1, keepdims=True)
        result = a_hat @ result
    return result


def main():
    m = ma.Model(os.path.join(ma.FIXTURES, "tv_grid16"))
    x = np.load(os.path.join(m.dir, "input.npy"))
    out = m.forward(torch.from_numpy(x).double())
    m.check_against_fixture(out)
    maps = [a.numpy() for a in out["A"]]
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for fusion in ("mean", "max", "min"):
        for share in (0.0, 0.5, 0.9):
            r = rollout(maps, fusion, share)
            np.save(os.path.join(OUT, f"rollout_{fusion}_{share}.npy"), r[ROWS])
            print(fusion, share, "row sums", r[ROWS].sum(1))


if __name__ == "__main__":
    main()
