#!/usr/bin/python3
"""The whole-process peer of `make bench` (docs/performance.md, "Whole process"): the script a user would run over a
folder instead of `attnscope-cli analyze`, timed from the outside like it, start to exit.

It loads a torchvision ViT from its state dict, reads each image with PIL, runs the clean and a Gaussian-noise
(sigma 8) forward with every tap recorded and computes the same analyses as attnscope's default
(similarity,attention,centres,snr) with peer.py's NumPy code, float64. It averages them over the images and writes
token_similarity.csv, attention_similarity.csv, head_centres.csv, snr.csv, snr_diagnostics.csv and predictions.csv.
It draws no figures, so a comparison with attnscope, which draws eight, is conservative.

    peer_process.py --model M.pth --images LIST.txt --out DIR [--threads N]
    peer_process.py --make-model M.pth              # the ViT-S/16 both sides load (random weights, seed 0)
    peer_process.py --make-images DIR --count 200   # 320 x 240 test images, a fixed pattern per image
"""
import argparse
import csv
import os
import sys

import numpy as np
import torch
import torchvision
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  (the same forward and analyses as the one-image peer)


def make_images(folder, count):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:240, 0:320].astype(np.float64)
    for i in range(count):
        f = rng.uniform(0.01, 0.08, 3)
        phase = rng.uniform(0, 6.3, 3)
        rgb = [127 + 100 * np.sin(f[c] * xx + phase[c]) * np.cos(f[(c + 1) % 3] * yy) for c in range(3)]
        pixels = np.clip(np.stack(rgb, -1) + rng.normal(0, 12, (240, 320, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"image-{i:04d}.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--images")
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--make-model")
    ap.add_argument("--make-images")
    ap.add_argument("--count", type=int, default=200)
    args = ap.parse_args()
    if args.make_model:
        torch.save(peer.make_model("vit_small").state_dict(), args.make_model)
        return
    if args.make_images:
        make_images(args.make_images, args.count)
        return
    if args.threads:
        torch.set_num_threads(args.threads)

    model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=6,
                                                 hidden_dim=384, mlp_dim=1536, num_classes=1000)
    model.load_state_dict(torch.load(args.model, map_location="cpu"))
    model.eval()
    with open(args.images) as f:
        paths = [line.strip() for line in f if line.strip()]
    rng = np.random.default_rng(0)
    os.makedirs(args.out, exist_ok=True)
    sums = {}
    with open(os.path.join(args.out, "predictions.csv"), "w", newline="") as f:
        predictions = csv.writer(f)
        predictions.writerow(["image", "rank", "class", "prob"])
        for path in paths:
            pixels = peer.resize_crop(Image.open(path).convert("RGB"))
            with torch.inference_mode():
                logits, clean = peer.forward(model, peer.normalise(pixels))
                _, noisy = peer.forward(model, peer.normalise(pixels + rng.normal(0, 8, pixels.shape)))
            r = peer.analyse(clean, noisy)
            top = torch.softmax(logits[0].double(), 0).topk(5)
            for rank, (p, c) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
                predictions.writerow([path, rank + 1, c, f"{p:.6g}"])
            values = {"ts": np.array(r["ts"]), "as": np.array(r["as"]), "snr": np.array(r["snr"]),
                      "diag": np.array(r["diag"], dtype=np.float64), "hc": np.array([h[:12] for h in r["hc"]])}
            for k, v in values.items():
                sums[k] = sums.get(k, 0) + v
    mean = {k: v / len(paths) for k, v in sums.items()}
    layers = len(mean["as"])

    def write(name, header, rows):
        with open(os.path.join(args.out, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    # Per tap, in peer.analyse's order: X_0..X_L, then U_1..U_L and R_1..R_L.
    tap_layers = [("x", l) for l in range(layers + 1)] + [(t, l) for t in ("u", "r") for l in range(1, layers + 1)]
    write("token_similarity.csv", ["tap", "layer", "all", "patches"],
          [[t, l] + list(v) for (t, l), v in zip(tap_layers, mean["ts"])])
    write("attention_similarity.csv", ["layer", "successive_cos", "head_redundancy"],
          [[l + 1] + list(v) for l, v in enumerate(mean["as"])])
    write("head_centres.csv", ["layer", "head", "centre_y", "centre_x", "peak_y", "peak_x", "distance", "bandwidth",
                               "prefix_mass", "window_mass", "contour50", "contour90"], mean["hc"].tolist())
    write("snr.csv", ["tap", "layer", "snr_db"], [[t, l, v] for (t, l), v in zip(tap_layers, mean["snr"])])
    write("snr_diagnostics.csv", ["layer", "alpha", "beta", "gamma", "gain", "bound", "condition", "sensitivity"],
          [[l + 1] + list(v) for l, v in enumerate(mean["diag"])])


if __name__ == "__main__":
    main()
