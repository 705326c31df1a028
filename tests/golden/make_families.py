#!/usr/bin/env python3
"""Writes tests/golden/families/: timm hub folders (timm.models.save_for_hf: model.safetensors + config.json, as a user
downloads them) of the families attnscope refuses, each with small seeded random weights, for
tests/engine/FamiliesTest.cpp: each must be refused in one line that names what the family needs, never run as the
nearest family it resembles (docs/models.md, "Families").

Needs timm 1.0.31 (DINOv3, EVA-02, SigLIP, BEiT v2, Swin), which runs on Debian's torch 1.13:
    /usr/bin/python3 -m venv --system-site-packages /work/venv31
    /work/venv31/bin/pip install --no-deps timm==1.0.31 safetensors huggingface_hub
    /work/venv31/bin/python tests/golden/make_families.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import timm
from timm.models import save_for_hf

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families")

# name -> (timm architecture, small keyword arguments)
REFUSED = {
    "timm_dinov3": ("vit_small_patch16_dinov3", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=5)),
    "timm_eva02": ("eva02_tiny_patch14_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=5)),
    "timm_beitv2": ("beitv2_base_patch16_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=5)),
    "timm_siglip": ("vit_base_patch16_siglip_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=5)),
    "timm_swin": ("swin_tiny_patch4_window7_224", dict(img_size=56, embed_dim=8, depths=(1, 1), num_heads=(1, 2),
                                                       num_classes=5)),
    "timm_vit_rope": ("vit_small_patch16_rope_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=5)),
}
# Plain ViTs under their registry names, which attnscope runs: model_args as save_for_hf writes them, less num_heads
# (and act_layer), so that the heads, the activation and the LayerNorm eps come from attnscope's copy of timm's registry.
# Each folder also has input.npy and timm's logits.npy.
RUNS = {
    "timm_vit_small": ("vit_small_patch16_224", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=6,
                                                     num_classes=5)),
    "timm_siglip_gap": ("vit_base_patch32_siglip_gap_256", dict(img_size=16, patch_size=4, embed_dim=24, depth=2,
                                                                num_heads=12, num_classes=5)),
}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if os.path.isdir(OUT):
        for name in list(REFUSED) + list(RUNS):
            shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    for name, (arch, kwargs) in list(REFUSED.items()) + list(RUNS.items()):
        model = timm.create_model(arch, pretrained=False, **kwargs).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * 0.1)
        folder = os.path.join(OUT, name)
        saved_args = {k: v for k, v in kwargs.items() if name not in RUNS or k != "num_heads"}
        save_for_hf(model, folder, model_args=saved_args, safe_serialization=True)
        if name in RUNS:
            x = torch.randn(1, 3, kwargs["img_size"], kwargs["img_size"])
            with torch.no_grad():
                logits = model(x)[0]
            np.save(os.path.join(folder, "input.npy"), x.numpy().astype(np.float32))
            np.save(os.path.join(folder, "logits.npy"), logits.numpy().astype(np.float32))
        os.remove(os.path.join(folder, "pytorch_model.bin")) if os.path.exists(os.path.join(folder, "pytorch_model.bin")) else None
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        print(name, cfg["architecture"], sorted(os.listdir(folder)), file=sys.stderr)
    print("timm", timm.__version__, "torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
