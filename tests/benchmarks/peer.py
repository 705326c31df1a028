#!/usr/bin/python3
"""The peer of `make bench`: what a user would write instead of attnscope.

torchvision's VisionTransformer (random weights, the ViT-S/16 or DeiT-tiny shape), a forward written out by
hand so that every tap is recorded (torchvision's blocks call nn.MultiheadAttention with need_weights=False,
so hooks cannot see the attention), then the curves of docs/analyses.md sections 1-4 with NumPy in float64:
token cosine similarity of X_l, U_l, R_l (all tokens and patches), attention similarity, head centres with
offset maps, and the SNR of a Gaussian-noise copy (sigma 8) with the Proposition 3.1 diagnostics.

Runs on Debian's python3-torch 1.13 and python3-torchvision (the LibTorch attnscope links), so both sides
use the same BLAS. Prints one JSON object (times in ms).

    /usr/bin/python3 tests/benchmarks/peer.py --mode one --shape vit_small --repeats 5
    /usr/bin/python3 tests/benchmarks/peer.py --mode dataset --shape deit_tiny --images 100
"""
import argparse
import json
import os
import resource
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image

SHAPES = {"deit_tiny": (192, 3), "vit_small": (384, 6), "vit_base": (768, 12)}
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def make_model(shape):
    width, heads = SHAPES[shape]
    torch.manual_seed(0)
    model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=heads,
                                                 hidden_dim=width, mlp_dim=4 * width, num_classes=1000)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.02)
    return model.eval()


def resize_crop(image):
    """torchvision's Resize(256, bicubic) + CenterCrop(224): the 0..255 image the model sees."""
    w, h = image.size
    s = 256 / min(w, h)
    image = image.resize((max(224, round(w * s)), max(224, round(h * s))), Image.BICUBIC)
    w, h = image.size
    left, top = int(round((w - 224) / 2.0)), int(round((h - 224) / 2.0))
    return np.asarray(image.crop((left, top, left + 224, top + 224)), dtype=np.float64)


def normalise(pixels):
    return torch.from_numpy(((pixels / 255.0 - MEAN) / STD).transpose(2, 0, 1).astype(np.float32))[None]


def forward(model, x):
    """torchvision's forward written out, recording A_l, U_l, R_l, X_l (docs/analyses.md, "Notation")."""
    rec = {"attn": [], "u": [], "r": [], "x": []}
    n = x.shape[0]
    x = model._process_input(x)
    x = torch.cat([model.class_token.expand(n, -1, -1), x], dim=1) + model.encoder.pos_embedding
    rec["x"].append(x)
    for blk in model.encoder.layers:
        mha = blk.self_attention
        B, N, D = x.shape
        H = mha.num_heads
        qkv = F.linear(blk.ln_1(x), mha.in_proj_weight, mha.in_proj_bias).reshape(B, N, 3, H, D // H)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-2, -1) / (D // H) ** 0.5, dim=-1)
        u = mha.out_proj((a @ v).transpose(1, 2).reshape(B, N, D))
        r = x + u
        x = r + blk.mlp(blk.ln_2(r))
        rec["attn"].append(a)
        rec["u"].append(u)
        rec["r"].append(r)
        rec["x"].append(x)
    logits = model.heads(model.encoder.ln(x)[:, 0])
    return logits, {k: [t[0].numpy().astype(np.float64) for t in v] for k, v in rec.items()}


def token_similarity(z):
    z = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    m = z.shape[0]
    return (np.square(z.sum(0)).sum() - m) / (m * (m - 1))


def cosine(a, b):
    return float((a * b).sum() / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))


def head_centres(attn, gh=14, gw=14, prefix=1, patch=16, radius=3):
    pos = np.stack(np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij"), -1).reshape(-1, 2).astype(np.float64)
    offsets = pos[None, :, :] - pos[:, None, :]  # [q, k, 2] = pos_k - pos_q
    distance = np.sqrt((offsets ** 2).sum(-1))
    side = 2 * radius + 1
    interior = [r * gw + c for r in range(radius, gh - radius) for c in range(radius, gw - radius)]
    keys = np.array([[(q // gw + dy) * gw + q % gw + dx for dy in range(-radius, radius + 1)
                      for dx in range(-radius, radius + 1)] for q in interior])
    cells = np.array([[i // side - radius, i % side - radius] for i in range(side * side)], dtype=np.float64)
    out = []
    for l, a in enumerate(attn, 1):
        for h in range(a.shape[0]):
            rows = a[h, prefix:]
            aq = rows[:, prefix:] / np.maximum(rows[:, prefix:].sum(1, keepdims=True), 1e-300)
            centre = (aq[:, :, None] * offsets).sum(1).mean(0)
            dist = patch * (aq * distance).sum(1).mean()
            prefix_mass = rows[:, :prefix].sum(1).mean()
            m = np.take_along_axis(aq[interior], keys, 1).mean(0)
            peak = int(m.argmax())
            mass = m.sum()
            centroid = (m[:, None] * cells).sum(0) / mass
            bandwidth = np.sqrt((((cells - centroid) ** 2).sum(1) * m).sum() / mass)
            ordered = np.sort(m)[::-1]
            cum = np.cumsum(ordered)
            c50 = ordered[min(int((cum < 0.5 * mass).sum()), len(m) - 1)]
            c90 = ordered[min(int((cum < 0.9 * mass).sum()), len(m) - 1)]
            out.append((l, h, centre[0], centre[1], peak // side - radius, peak % side - radius, dist, bandwidth,
                        prefix_mass, mass, c50, c90, m.reshape(side, side)))
    return out


def analyse(clean, noisy):
    out = {"ts": [], "as": [], "snr": [], "diag": []}
    for tap in ("x", "u", "r"):
        for z in clean[tap]:
            out["ts"].append((token_similarity(z), token_similarity(z[1:])))
    attn = clean["attn"]
    for l, a in enumerate(attn):
        succ = cosine(a.mean(0), attn[l + 1].mean(0)) if l + 1 < len(attn) else float("nan")
        flat = a.reshape(a.shape[0], -1)
        unit = flat / np.linalg.norm(flat, axis=1, keepdims=True)
        g = unit @ unit.T
        out["as"].append((succ, (g.sum() - np.trace(g)) / (len(g) * (len(g) - 1))))
    out["hc"] = head_centres(attn)
    if noisy is None:
        return out
    centred = lambda t: t - t.mean(0, keepdims=True)
    for tap in ("x", "u", "r"):
        for c, n in zip(clean[tap], noisy[tap]):
            out["snr"].append(20 * np.log10(np.linalg.norm(centred(c)) / max(np.linalg.norm(n - c), 1e-300)))
    eta0 = np.linalg.norm(noisy["x"][0] - clean["x"][0])
    for l in range(1, len(clean["u"]) + 1):
        s, sh = centred(clean["x"][l - 1]), centred(clean["u"][l - 1])
        e, eh = noisy["x"][l - 1] - clean["x"][l - 1], noisy["u"][l - 1] - clean["u"][l - 1]
        ns, ne = np.linalg.norm(s), np.linalg.norm(e)
        alpha, beta, gamma = np.linalg.norm(sh) / ns, cosine(s, sh), np.linalg.norm(eh) / ne
        gain = (np.linalg.norm(s + sh) / np.linalg.norm(e + eh)) / (ns / ne)
        bound = np.sqrt(1 + 2 * alpha * beta + alpha ** 2) / (1 + gamma)
        sens = np.linalg.norm(noisy["x"][l] - clean["x"][l]) / eta0
        out["diag"].append((alpha, beta, gamma, gain, bound, min(alpha, beta) > gamma, sens))
    return out


def one_image(model, image, rng):
    """The full one-image analysis: clean forward with every tap, noisy forward, all curves."""
    pixels = resize_crop(image)
    with torch.inference_mode():
        _, clean = forward(model, normalise(pixels))
        _, noisy = forward(model, normalise(pixels + rng.normal(0, 8, pixels.shape)))
    return analyse(clean, noisy)


def timed(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["one", "dataset"], default="one")
    ap.add_argument("--shape", default="vit_small", choices=sorted(SHAPES))
    ap.add_argument("--image",
                    default=os.path.join(os.path.dirname(__file__), "../../resources/samples/photos/chelsea.png"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = make_model(args.shape)
    image = Image.open(args.image).convert("RGB")
    rng = np.random.default_rng(0)
    result = {"shape": args.shape, "threads": torch.get_num_threads(), "torch": torch.__version__}
    if args.mode == "one":
        x = normalise(resize_crop(image))
        with torch.inference_mode():
            result["forward_ms"], result["forward_min_ms"] = timed(lambda: model(x), args.repeats)
            result["forward_record_ms"], _ = timed(lambda: forward(model, x), args.repeats)
        result["one_image_ms"], result["one_image_min_ms"] = timed(lambda: one_image(model, image, rng), args.repeats)
    else:
        # A stream of distinct images (the sample shifted and flipped), analysed and reduced one at a time, as a
        # script over a folder would: per-image curves are appended to lists and averaged at the end.
        base = np.asarray(image)
        curves = []
        t = time.perf_counter()
        for i in range(args.images):
            shifted = np.roll(base, (i * 7) % base.shape[0], axis=0)
            img = Image.fromarray(shifted[:, ::-1] if i % 2 else shifted)
            r = one_image(model, img, rng)
            curves.append([v for pair in r["ts"] for v in pair] + r["snr"])
            if i + 1 == min(100, args.images):
                result["rss_mb_at_100"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result["images"] = args.images
        result["images_per_s"] = args.images / (time.perf_counter() - t)
        result["rss_mb_at_end"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        np.mean(np.array(curves), 0)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
