#!/usr/bin/env python3
"""Reference perturbations of the SNR analysis (docs/analyses.md section 4), for
tests/engine/PerturbationGoldenTest.cpp.

For the tv_grid16 fixture (its image.png, normalised without resize), each perturbation the CLI offers is computed
here independently of the C++ engine, then the per-layer SNR and Proposition 3.1's diagnostics of the perturbed
input against the clean one, both through make_analyses.py's float64 forward (written from the formulas, checked
against torchvision). Per case it writes tests/golden/perturbations/<slug>/:

  input_perturbed.npy    the perturbed normalised input [1, C, H, W] (float32)
  snr.csv                layer,tap,value (dB)
  snr_diagnostics.csv    layer,alpha,beta,gamma,gain,bound,condition_holds,sensitivity
  case.json              the spec, the seed, and what the reference did

The perturbations, as docs/analyses.md section 4 and the engine define them (pixel units 0..255, inputs normalised as
(pixel/255 - mean)/std):
  saltpepper:fraction=F  u ~ U[0, 1) per pixel position from torch.rand([1, H, W]) of a CPU generator seeded with the
                         case's seed; u < F/2 -> 255 in every channel, F/2 <= u < F -> 0 (the RNG stream is the one
                         part shared with the engine: both draw from PyTorch's CPU generator)
  blur:sigma=S           separable Gaussian, radius ceil(3 S), normalised taps, reflect padding, float64 (numpy)
  jpeg:quality=Q         the 8-bit image through PIL's JPEG encoder and decoder at quality Q (4:2:0), normalised
  fgsm:eps=E             x + E/255/std * sign(grad_x CE(f(x), argmax f(x))), clipped to the valid pixel range
  pgd:eps=E,steps=T      T steps of 0.15 E/255/std * sign(grad), each projected onto the L-inf ball of radius E/255/std
                         around x and onto the valid range; untargeted against the clean prediction
The adversarial gradients come from torch.autograd through the float64 forward.

Run: /usr/bin/python3 tests/golden/make_perturbations.py   (Debian python3-torch + numpy + PIL; a few seconds)
"""
import io
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_analyses as ma  # noqa: E402  (the float64 forward and the SNR rows)

OUT = os.path.join(HERE, "perturbations")
FIXTURE = "tv_grid16"
SEED = 1234
CASES = ["saltpepper:fraction=0.1", "blur:sigma=1.5", "jpeg:quality=30", "fgsm:eps=2", "pgd:eps=2,steps=20"]


def slug(spec):
    return "".join(c if c.isalnum() or c == "." else "-" for c in spec)


def parse(spec):
    kind, _, args = spec.partition(":")
    values = dict(kv.split("=") for kv in args.split(","))
    return kind, {k: float(v) for k, v in values.items()}


def normalise(m, u8):
    return ma.Model.input_from_u8(m, u8)


def salt_and_pepper(m, x, u8, fraction):
    g = torch.Generator().manual_seed(SEED)
    u = torch.rand((1, u8.shape[0], u8.shape[1]), generator=g).numpy()[0]
    out = u8.copy()
    out[u < fraction / 2] = 255
    out[(u >= fraction / 2) & (u < fraction)] = 0
    # Pixels that are 0 or 255 normalise as the engine's constant planes do: compare in the normalised domain.
    return normalise(m, out)


def blur(x, sigma):
    r = max(1, int(math.ceil(3 * sigma)))
    k = np.exp(-(np.arange(-r, r + 1, dtype=np.float64) ** 2) / (2 * sigma * sigma))
    k /= k.sum()
    a = np.pad(x[0].astype(np.float64), ((0, 0), (r, r), (r, r)), mode="reflect")
    h = sum(k[i] * a[:, :, i:i + a.shape[2] - 2 * r] for i in range(2 * r + 1))       # along x
    v = sum(k[i] * h[:, i:i + h.shape[1] - 2 * r, :] for i in range(2 * r + 1))       # along y
    return v[None].astype(np.float32)


def jpeg(m, u8, quality):
    buf = io.BytesIO()
    Image.fromarray(u8).save(buf, format="JPEG", quality=int(quality))
    return normalise(m, np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB")))


def adversarial(m, x, eps_pixels, steps, step_share):
    std = torch.tensor(m.std, dtype=torch.float64).view(1, -1, 1, 1)
    mean = torch.tensor(m.mean, dtype=torch.float64).view(1, -1, 1, 1)
    eps = eps_pixels / 255.0 / std
    lo, hi = (0.0 - mean) / std, (1.0 - mean) / std
    x0 = torch.from_numpy(x).double()
    target = int(m.forward(x0)["logits"].argmax())
    xa = x0.clone()
    for _ in range(steps):
        xi = xa.detach().requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(m.forward(xi)["logits"][None], torch.tensor([target]))
        (grad,) = torch.autograd.grad(loss, xi)
        xa = xa.detach() + step_share * eps * grad.sign()
        xa = torch.max(torch.min(xa, x0 + eps), x0 - eps)
        xa = torch.max(torch.min(xa, hi), lo)
    return xa.detach().numpy().astype(np.float32), target


def main():
    m = ma.Model(os.path.join(ma.FIXTURES, FIXTURE))
    u8 = np.asarray(Image.open(os.path.join(m.dir, "image.png")).convert("RGB"))
    x = normalise(m, u8)
    clean = m.forward(torch.from_numpy(x).double())
    m.check_against_fixture(clean)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for spec in CASES:
        kind, v = parse(spec)
        extra = {}
        if kind == "saltpepper":
            xp = salt_and_pepper(m, x, u8, v["fraction"])
        elif kind == "blur":
            xp = blur(x, v["sigma"])
        elif kind == "jpeg":
            xp = jpeg(m, u8, v["quality"])
        elif kind == "fgsm":
            xp, extra["target"] = adversarial(m, x, v["eps"], 1, 1.0)
        elif kind == "pgd":
            xp, extra["target"] = adversarial(m, x, v["eps"], int(v["steps"]), 0.15)
        else:
            raise ValueError(spec)
        noisy = m.forward(torch.from_numpy(xp).double())
        rows, diag = ma.snr_rows(clean, noisy, m)
        d = os.path.join(OUT, slug(spec))
        os.makedirs(d)
        np.save(os.path.join(d, "input_perturbed.npy"), xp)
        ma.write_csv(os.path.join(d, "snr.csv"), ["layer", "tap", "value"], rows)
        ma.write_csv(os.path.join(d, "snr_diagnostics.csv"),
                     ["layer", "alpha", "beta", "gamma", "gain", "bound", "condition_holds", "sensitivity"], diag)
        ma.write_json(os.path.join(d, "case.json"), {"fixture": FIXTURE, "spec": spec, "seed": SEED,
                                                      "changed_share": float(np.mean(np.abs(xp - x) > 1e-6)), **extra})
        print(f"{spec}: {float(np.mean(np.abs(xp - x) > 1e-6)):.3f} of the input changed, "
              f"SNR at the last block {rows[m.L][2]:.3f} dB")


if __name__ == "__main__":
    main()
