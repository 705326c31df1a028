#!/usr/bin/env python3
"""Writes tests/golden/families/layout_per_head: families/timm_vit_small's weights (timm's vit_small_patch16_224 made
small: 2 layers, width 24, 6 heads of 4, 4x4 patches of a 16x16 image) in the layouts people train themselves, for the model-description tests (docs/model-description.md):

- tintn's original vision-transformer-from-scratch layout: one Linear per head for the query, key and value
  (`encoder.blocks.N.attention.heads.H.query.weight` [4, 24]), joined by the description's "concatenate" rules;
- a linear patch embedding over (c p1 p2)-ordered patches, `embedding.patch.weight` [24, 48] (the convolution's
  weight flattened), read with "patch_order": "c p1 p2";
- the state dict wrapped as a training script saves it, {"model_state": ..., "model_ema": ..., "optimizer": ...,
  "epoch": 7}, the EMA copy's weights different, so that taking it by mistake shows.

The reference is timm_vit_small's (timm's logits): the same weights must give the same numbers.

    /work/venv31/bin/python tests/golden/make_layouts.py
"""
import json
import os
import shutil

import torch
from safetensors.torch import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "families", "layout_per_head")
HEADS = 6


def per_head(sd):
    out = {}
    for name, t in sd.items():
        if name.startswith("blocks."):
            layer = name.split(".")[1]
            stem = "encoder.blocks.%s." % layer
            rest = name[len("blocks.%s." % layer):]
            if rest.startswith("attn.qkv."):
                kind = rest.split(".")[-1]  # weight | bias
                q, k, v = t.chunk(3, 0)
                for part, tensor in (("query", q), ("key", k), ("value", v)):
                    for h, piece in enumerate(tensor.chunk(HEADS, 0)):
                        out[stem + "attention.heads.%d.%s.%s" % (h, part, kind)] = piece.clone()
                continue
            rest = (rest.replace("attn.proj.", "attention.output_projection.").replace("norm1.", "layernorm_1.")
                    .replace("norm2.", "layernorm_2.").replace("mlp.fc1.", "mlp.dense_1.").replace("mlp.fc2.", "mlp.dense_2."))
            out[stem + rest] = t.clone()
        elif name == "patch_embed.proj.weight":
            out["embedding.patch.weight"] = t.reshape(t.shape[0], -1).clone()  # (c p1 p2) order
        elif name == "patch_embed.proj.bias":
            out["embedding.patch.bias"] = t.clone()
        elif name in ("cls_token", "pos_embed"):
            out["embedding." + name] = t.clone()
        else:
            out[name.replace("head.", "classifier.").replace("norm.", "final_norm.")] = t.clone()
    return out


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    sd = per_head(load_file(os.path.join(HERE, "families", "timm_vit_small", "model.safetensors")))
    ema = {k: v * 0.5 for k, v in sd.items() if k.startswith("classifier.")}  # an EMA copy (its head only, to stay small)
    torch.save({"model_state": sd, "model_ema": ema, "optimizer": {"lr": 0.001, "state": {}}, "epoch": 7},
               os.path.join(OUT, "model.pt"))
    description = {
        "attnscope_description": 1,
        "about": "timm_vit_small's weights in tintn's per-head layout, a linear (c p1 p2) patch embedding, in a wrapper dict",
        "concatenate": [
            {"from": "^encoder\\.blocks\\.(\\d+)\\.attention\\.heads\\.(\\d+)\\.(query|key|value)\\.(weight|bias)$",
             "to": "encoder.blocks.$1.attention.$3.$4", "order": "$2"}
        ],
        "rename": [
            ["^embedding\\.(cls_token|pos_embed)$", "$1"],
            ["^embedding\\.patch\\.", "patch_embed.linear."],
            ["^encoder\\.blocks\\.(\\d+)\\.", "blocks.$1."],
            ["\\.attention\\.query\\.", ".attn.q."],
            ["\\.attention\\.key\\.", ".attn.k."],
            ["\\.attention\\.value\\.", ".attn.v."],
            ["\\.attention\\.output_projection\\.", ".attn.proj."],
            ["\\.layernorm_1\\.", ".norm1."],
            ["\\.layernorm_2\\.", ".norm2."],
            ["\\.mlp\\.dense_1\\.", ".mlp.fc1."],
            ["\\.mlp\\.dense_2\\.", ".mlp.fc2."],
            ["^final_norm\\.", "norm."],
            ["^classifier\\.", "head."]
        ],
        "architecture": {"num_heads": HEADS, "image_size": 16, "patch_order": "c p1 p2"},
    }
    with open(os.path.join(OUT, "attnscope.json"), "w") as f:
        json.dump(description, f, indent=1)
    print(sorted(sd)[:8], len(sd))


if __name__ == "__main__":
    main()
