#!/usr/bin/env python3
"""Golden fixtures for `--input-size` (LoadOptions::inputHeight/inputWidth, Model::withInputSize): small timm ViTs
with seeded random weights, trained for a 4x4 patch grid, and what timm itself computes when they run at other,
non-square input sizes (one grid larger than the trained one, one smaller).

Reference: timm 1.0.9's own position-embedding resampling. Each model is built with dynamic_img_size=True, so that
VisionTransformer._pos_embed (and VisionTransformerDistilled's) calls timm.layers.resample_abs_pos_embed on every
forward: the prefix rows are kept, the patch rows reshaped to the trained grid [1, D, 4, 4] and resized with
F.interpolate(mode='bicubic', align_corners=False, antialias=True). The script checks that timm's once-at-load route,
create_model(img_size=(H, W)) with the weights through checkpoint_filter_fn (what pretrained loading at another size
does), gives bit-identical outputs, and that the resampled table equals a direct F.interpolate.

The input at each size is resources/samples/photos/chelsea.png through timm's eval transform for
input_size (3, H, W) (transforms_imagenet_eval: ResizeKeepRatio to floor(s / crop_pct) per side for a non-square
size, CenterCrop, ToTensor, Normalize), with one change: ResizeKeepRatio gets the config's interpolation (bicubic),
which timm 1.0.9 leaves at its bilinear default on that path. The same input is what attnscope's preprocessing should
give (Preprocess.h, preprocessAtInputSize), up to the 8-bit rounding of PIL against LibTorch's resampling.

Usage (needs timm: see setup_venv.sh; about 3 s):
    /work/venv/bin/python tests/golden/make_input_size.py [--out DIR]

Writes fixtures/<name>/ for the three models below: model.safetensors, config.json, meta.json, and for each size a
folder at_<H>x<W>/ with input.npy [1, C, H, W], logits.npy [K], attn_L{l}.npy [heads, N, N] (l = 1..L),
block_L{l}.npy [N, D] (l = 0..L, before the final norm) and pos_embed_resampled.npy (the table timm added).
"""

import argparse
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_golden as mg  # noqa: E402  (sets one thread and deterministic algorithms)

from PIL import Image  # noqa: E402

import timm  # noqa: E402
from timm.data import create_transform  # noqa: E402
from timm.data.transforms import ResizeKeepRatio, str_to_interp_mode  # noqa: E402
from timm.layers import resample_abs_pos_embed  # noqa: E402
from timm.models.vision_transformer import checkpoint_filter_fn  # noqa: E402

IMAGE = os.path.join(HERE, "..", "..", "resources", "samples", "photos", "chelsea.png")

# (name, architecture, model_args, prefix tokens, crop_pct, seed, notes). Every grid is 4x4 as trained.
MODELS = [
    ("timm_size_vit", "vit_tiny_patch16_224",
     {"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0,
      "num_classes": 10},
     1, 0.9, 41,
     "Plain timm ViT: pos_embed [1, 17, 32] (CLS row + 16 patch rows, added after concatenation). crop_pct 0.9, so "
     "that floor(s / crop_pct) (timm) and s * resize / crop differ: 48x40 resizes to cover 53x44, 24x16 to cover 26x17."),
    ("timm_size_deit", "deit_tiny_distilled_patch16_224",
     {"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0,
      "num_classes": 10},
     2, 1.0, 42,
     "timm VisionTransformerDistilled: token order [CLS, DIST, patches]; pos_embed [1, 18, 32] has two prefix rows, "
     "which resampling keeps as they are. logits = (head(n[0]) + head_dist(n[1])) / 2."),
    ("timm_size_reg", "vit_small_patch14_reg4_dinov2",
     {"img_size": 28, "patch_size": 7, "embed_dim": 32, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0,
      "reg_tokens": 4, "no_embed_class": True, "init_values": 1.0, "class_token": True, "num_classes": 10},
     5, 1.0, 43,
     "timm ViT with 4 registers and no_embed_class=True: pos_embed [1, 16, 32] holds patch rows only (resampled with "
     "num_prefix_tokens=0) and is added before [CLS, REG x4] are prepended; the prefix gets no position. Layer scale."),
]

# Grids (rows, columns) to run at: larger and smaller than the trained 4x4, neither square.
GRIDS = [(6, 5), (3, 2)]


def timm_transform(pretrained_cfg, height, width):
    """timm's eval transform for input_size (C, height, width), ResizeKeepRatio given the config's interpolation."""
    tf = create_transform(input_size=(pretrained_cfg["input_size"][0], height, width), is_training=False,
                          interpolation=pretrained_cfg["interpolation"], crop_pct=pretrained_cfg["crop_pct"],
                          crop_mode=pretrained_cfg["crop_mode"], mean=pretrained_cfg["mean"], std=pretrained_cfg["std"])
    for t in tf.transforms:
        if isinstance(t, ResizeKeepRatio):
            t.interpolation = str_to_interp_mode(pretrained_cfg["interpolation"])
    return tf


def resampled_by_hand(pos_embed, prefix, grid):
    """The table resample_abs_pos_embed should give: prefix rows kept, patch rows through F.interpolate."""
    rows = pos_embed[:, prefix:].reshape(1, 4, 4, -1).permute(0, 3, 1, 2)
    rows = torch.nn.functional.interpolate(rows, size=grid, mode="bicubic", align_corners=False, antialias=True)
    return torch.cat([pos_embed[:, :prefix], rows.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], -1)], dim=1)


def make_fixture(root, name, arch, model_args, prefix, crop_pct, seed, notes):
    torch.manual_seed(seed)
    model = timm.create_model(arch, pretrained=False, dynamic_img_size=True, **model_args).eval()
    mg.randomize_(model, seed)
    assert model.num_prefix_tokens == prefix
    d = mg.fresh_dir(root, name)
    path = os.path.join(d, "model.safetensors")
    mg.save_safetensors(path, model.state_dict())
    p = model_args["patch_size"]
    img = model_args["img_size"]
    K, D, L, H = model_args["num_classes"], model.embed_dim, len(model.blocks), model.blocks[0].attn.num_heads
    cfg = mg.timm_config(arch, model_args, K, D, 3, (img, img), mg.IMAGENET_MEAN, mg.IMAGENET_STD, mg.CIFAR10,
                         classifier=["head", "head_dist"] if prefix == 2 and arch.startswith("deit") else "head")
    cfg["pretrained_cfg"]["crop_pct"] = crop_pct
    mg.write_json(os.path.join(d, "config.json"), cfg)
    no_embed_class = bool(model_args.get("no_embed_class", False))
    pos_prefix = 0 if no_embed_class else prefix

    sizes = []
    for grid in GRIDS:
        h, w = grid[0] * p, grid[1] * p
        sizes.append([h, w])
        x = timm_transform(cfg["pretrained_cfg"], h, w)(Image.open(IMAGE).convert("RGB")).unsqueeze(0)
        assert tuple(x.shape) == (1, 3, h, w)
        logits, attns, blocks = mg.run_timm(model, x)
        n = prefix + grid[0] * grid[1]
        assert attns[0].shape == (H, n, n) and blocks[0].shape == (n, D)
        mg.timm_manual_head(model, blocks[-1], logits)
        label = f"{name}@{h}x{w}"
        mg.f64_check(label, model, lambda m, xx: (lambda r: [r[0]] + r[1] + r[2])(mg.run_timm(m, xx)), x)

        # The table timm added, against F.interpolate by hand, and against block_L0.
        with torch.no_grad():
            table = resample_abs_pos_embed(model.pos_embed, grid, num_prefix_tokens=pos_prefix)
            assert torch.equal(table, resampled_by_hand(model.pos_embed, pos_prefix, grid)), label
            assert model.pos_embed.shape[1] == pos_prefix + 16
            tokens = model.patch_embed(x).reshape(1, grid[0] * grid[1], D)
            prefix_tokens = [t for t in (model.cls_token, getattr(model, "dist_token", None), model.reg_token)
                             if t is not None]
            if no_embed_class:
                x0 = torch.cat(prefix_tokens + [tokens + table], dim=1)
            else:
                x0 = torch.cat(prefix_tokens + [tokens], dim=1) + table
        mg.assert_close(x0[0], blocks[0], 1e-6, label + " block_L0 from the resampled table")

        # timm's once-at-load route (create_model(img_size=(h, w)) + checkpoint_filter_fn, as pretrained=True
        # loading does) gives the same numbers as its per-forward one.
        fixed = timm.create_model(arch, pretrained=False, **{**model_args, "img_size": (h, w)}).eval()
        fixed.load_state_dict(checkpoint_filter_fn(model.state_dict(), fixed), strict=True)
        assert torch.equal(fixed.pos_embed.data, table)
        fixed_logits, fixed_attns, _ = mg.run_timm(fixed, x)
        assert torch.equal(fixed_logits, logits) and all(torch.equal(a, b) for a, b in zip(fixed_attns, attns)), label

        # How much a different resampling would change the outputs: each must be caught at 1e-4.
        import timm.models.vision_transformer as tvt
        import timm.models.deit as tdeit
        ref = (lambda r: [r[0]] + r[1])(mg.run_timm(model, x))
        changes = {}
        for what, kw in (("antialias_off", dict(antialias=False)), ("bilinear", dict(interpolation="bilinear")),
                         ("nearest", dict(interpolation="nearest", antialias=False))):
            originals = (tvt.resample_abs_pos_embed, tdeit.resample_abs_pos_embed)
            patched = (lambda *a, _kw=kw, **k: originals[0](*a, **{**k, **_kw}))
            tvt.resample_abs_pos_embed = tdeit.resample_abs_pos_embed = patched
            try:
                changes[what] = mg._rel_change(ref, (lambda r: [r[0]] + r[1])(mg.run_timm(model, x)))
            finally:
                tvt.resample_abs_pos_embed, tdeit.resample_abs_pos_embed = originals
        for what, v in changes.items():
            assert v >= 1e-3, f"{label}: insensitive to {what} ({v:.1e})"

        sub = os.path.join(d, f"at_{h}x{w}")
        os.makedirs(sub)
        np.save(os.path.join(sub, "input.npy"), mg.f32(x))
        np.save(os.path.join(sub, "logits.npy"), mg.f32(logits).reshape(-1))
        for l, a in enumerate(attns, start=1):
            np.save(os.path.join(sub, f"attn_L{l}.npy"), mg.f32(a))
        for l, b in enumerate(blocks):
            np.save(os.path.join(sub, f"block_L{l}.npy"), mg.f32(b))
        np.save(os.path.join(sub, "pos_embed_resampled.npy"), mg.f32(table[0]))
        mg.summarize(label, n, attns, logits)
        print(f"  {label}: outputs change with " + ", ".join(f"{k}: {v:.1e}" for k, v in changes.items()))

    meta = mg.base_meta(name, f"timm {timm.__version__} (torch {torch.__version__}), dynamic_img_size=True",
                        "timm", L, H, D, prefix, (img, img), 3, K, notes)
    meta["native_input_size"] = [img, img]
    meta["input_sizes"] = sizes
    meta["pos_embed_rows"] = int(model.pos_embed.shape[1])
    meta["image"] = "resources/samples/photos/chelsea.png"
    meta["preprocess"] = ("timm create_transform(input_size=(3, H, W), crop_pct, interpolation='bicubic', crop_mode="
                          "'center'), its ResizeKeepRatio given interpolation bicubic (timm 1.0.9 leaves it bilinear)")
    mg.write_json(os.path.join(d, "meta.json"), meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    args = ap.parse_args()
    print("versions:", mg.versions())
    os.makedirs(args.out, exist_ok=True)
    for spec in MODELS:
        make_fixture(args.out, *spec)
    print(f"done: {len(MODELS)} fixtures, {len(MODELS) * len(GRIDS)} sizes, in {args.out}")


if __name__ == "__main__":
    main()
