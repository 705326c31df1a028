#!/usr/bin/env python3
"""Writes tests/golden/families/vitpytorch_*: small seeded models of lucidrains' vit-pytorch (ViT with a CLS token, ViT
pooled by the mean, SimpleViT), saved as their users save them (torch.save(model.state_dict()), a .pt), with the model
description that says what the tensors cannot (heads, image size, pooling), an input, and what vit-pytorch computes:
logits, every layer's attention maps and the token stream after every block (before the transformer's final norm).

    /usr/bin/python3 -m venv --system-site-packages /work/venv31
    /work/venv31/bin/pip install --no-deps vit-pytorch==1.26.14 einops
    /work/venv31/bin/python tests/golden/make_vitpytorch.py
"""
import json
from importlib.metadata import version
import os
import shutil

import numpy as np
import torch
from vit_pytorch import SimpleViT, ViT

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families")
# A 16x16 RGB image in 4x4 patches; width 24 with 3 heads of 16 (q, k, v 48 wide: vit-pytorch's heads * dim_head).
ARGS = dict(image_size=16, patch_size=4, num_classes=5, dim=24, depth=2, heads=3, mlp_dim=32, dim_head=16)


def trace(model, x):
    """vit-pytorch's forward, layer by layer with its own modules: (logits, attention maps, block outputs)."""
    maps = []
    hooks = [layer[0].attend.register_forward_hook(lambda m, i, o: maps.append(o[0].detach().clone()))
             for layer in model.transformer.layers]
    with torch.no_grad():
        logits = model(x)[0]
        t = model.to_patch_embedding(x)
        if isinstance(model, ViT):
            cls = model.cls_token.unsqueeze(0).expand(x.shape[0], -1, -1)
            t = torch.cat((cls, t), dim=1)
            t = t + model.pos_embedding[: t.shape[1]]
        else:
            t = t + model.pos_embedding.to(t.dtype)
        blocks = [t[0].clone()]
        for attn, ff in model.transformer.layers:
            t = attn(t) + t
            t = ff(t) + t
            blocks.append(t[0].clone())
    for h in hooks:
        h.remove()
    return logits, maps[len(model.transformer.layers):], blocks  # the maps of the layer-by-layer pass


def write(name, model, description):
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.2)
    model.eval()
    torch.save(model.state_dict(), os.path.join(folder, "model.pt"))
    with open(os.path.join(folder, "attnscope.json"), "w") as f:
        json.dump(dict(attnscope_description=1, about="vit-pytorch " + version("vit-pytorch"), **description), f, indent=1)
    x = torch.randn(1, 3, ARGS["image_size"], ARGS["image_size"])
    logits, maps, blocks = trace(model, x)
    np.save(os.path.join(folder, "input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(folder, "logits.npy"), logits.numpy().astype(np.float32))
    for l, m in enumerate(maps, start=1):
        np.save(os.path.join(folder, "attn_L%d.npy" % l), m.numpy().astype(np.float32))
    for l, b in enumerate(blocks):
        np.save(os.path.join(folder, "block_L%d.npy" % l), b.numpy().astype(np.float32))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    write("vitpytorch_vit", ViT(**ARGS), dict(architecture=dict(num_heads=3, image_size=16)))
    write("vitpytorch_vit_mean", ViT(pool="mean", **ARGS),
          dict(architecture=dict(num_heads=3, image_size=16, pooling="mean")))
    simple = {k: v for k, v in ARGS.items()}
    write("vitpytorch_simplevit", SimpleViT(**simple), dict(architecture=dict(num_heads=3, image_size=16, patch_size=4)))


if __name__ == "__main__":
    main()
