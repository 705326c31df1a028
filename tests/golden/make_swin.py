#!/usr/bin/env python3
"""Writes tests/golden/swin/: small Swin and Swin v2 models with seeded random weights, as their own code saves them
(timm's save_for_hf: model.safetensors + config.json; transformers' save_pretrained), with what that code computes for
one input, for tests/engine/SwinTest.cpp (docs/models.md, "Swin"):
    input.npy    [1, 3, S, S]
    logits.npy   [K]
    attn_L{l}.npy   block l's attention (1-based over every block of every stage), per window: [nW, H, w*w, w*w],
                 the softmax as the model takes it (the relative position bias and the shifted windows' mask inside),
                 windows in the model's order (row-major over the shifted, padded grid)
    block_L{l}.npy  block l's output [h*w, C] (block_L0: the tokens entering the first block), row-major over the grid
Needs timm 1.0.31 and transformers 4.40.2 over Debian's torch 1.13 (make_families.py's venv):
    /work/venv31/bin/python tests/golden/make_swin.py
"""
import os
import shutil
import sys

import numpy as np
import torch
import timm
from timm.models import save_for_hf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "swin")

SMALL = dict(embed_dim=16, depths=(2, 2, 2), num_heads=(2, 4, 8), num_classes=5)
TIMM = {
    # three stages over a 16x16 grid, window 4: shifted windows with their mask in the first two, none in the last
    # (its 4x4 grid is one window, so timm does not shift it)
    "timm_swin": ("swin_tiny_patch4_window7_224", dict(img_size=64, window_size=4, **SMALL)),
    # a 10x10 grid under a window of 4: padded windows, shifted ones too; then a 5x5 grid padded to 8x8
    "timm_swin_pad": ("swin_tiny_patch4_window7_224", dict(img_size=40, window_size=4, embed_dim=16, depths=(2, 2),
                                                           num_heads=(2, 4), num_classes=5)),
    # Swin v2: cosine attention, the continuous position bias, post-norm blocks, merging with the norm after it
    "timm_swinv2": ("swinv2_tiny_window8_256", dict(img_size=64, window_size=4, **SMALL)),
    # ... with pretrained window sizes other than the window (the bias's coordinates scaled by them)
    "timm_swinv2_pw": ("swinv2_tiny_window8_256", dict(img_size=64, window_size=4, pretrained_window_sizes=(3, 3, 2),
                                                       **SMALL)),
}


def randomise(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.1)


def save(folder, name, t):
    np.save(os.path.join(folder, name + ".npy"), np.ascontiguousarray(t.detach().numpy(), dtype=np.float32))


def record(model, blocks, softmaxes, x, forward):
    """Runs forward(x) with hooks on every block (its input once, its output) and every attention softmax."""
    maps, outs = [], []
    hooks = [blocks[0].register_forward_pre_hook(lambda m, i: outs.append(i[0]))]
    hooks += [b.register_forward_hook(lambda m, i, o: outs.append(o[0] if isinstance(o, tuple) else o)) for b in blocks]
    hooks += [s.register_forward_hook(lambda m, i, o: maps.append(o)) for s in softmaxes]
    with torch.no_grad():
        logits = forward(x)
    for h in hooks:
        h.remove()
    assert len(maps) == len(blocks), "the attention maps were not recorded (fused attention?)"
    return logits, maps, outs


def write(folder, x, logits, maps, outs):
    save(folder, "input", x)
    save(folder, "logits", logits[0])
    for l, m in enumerate(maps, start=1):
        save(folder, "attn_L%d" % l, m)  # [nW, H, w*w, w*w] for a batch of one
    for l, o in enumerate(outs):
        save(folder, "block_L%d" % l, o.reshape(-1, o.shape[-1]))  # [B, h, w, C] (timm) or [B, h*w, C]


def timm_fixtures():
    for name, (arch, kwargs) in TIMM.items():
        model = timm.create_model(arch, pretrained=False, **kwargs).eval()
        randomise(model)
        folder = os.path.join(OUT, name)
        shutil.rmtree(folder, ignore_errors=True)
        save_for_hf(model, folder, model_args=kwargs, safe_serialization=True)
        if os.path.exists(os.path.join(folder, "pytorch_model.bin")):
            os.remove(os.path.join(folder, "pytorch_model.bin"))
        blocks = [b for s in model.layers for b in s.blocks]
        x = torch.randn(1, 3, kwargs["img_size"], kwargs["img_size"])
        logits, maps, outs = record(model, blocks, [b.attn.softmax for b in blocks], x, model)
        write(folder, x, logits, maps, outs)
        print(name, arch, [tuple(m.shape) for m in maps], file=sys.stderr)


def hugging_face(name, config_cls, model_cls, **kwargs):
    import transformers
    cfg = config_cls(image_size=64, patch_size=4, embed_dim=16, depths=[2, 2, 2], num_heads=[2, 4, 8], window_size=4,
                     num_labels=5, **kwargs)
    model = model_cls(cfg).eval()
    randomise(model)
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder, safe_serialization=True)
    base = getattr(model, "swin", None) or model.swinv2
    blocks = [b for s in base.encoder.layers for b in s.blocks]
    x = torch.randn(1, 3, 64, 64)
    # output_attentions gives each stage's last block only: every block's softmax is its dropout's input (and output)
    logits, maps, outs = record(model, blocks, [b.attention.self.dropout for b in blocks], x,
                                lambda t: model(pixel_values=t).logits)
    write(folder, x, logits, maps, outs)
    print(name, "transformers", transformers.__version__, [tuple(m.shape) for m in maps], file=sys.stderr)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    timm.layers.set_fused_attn(False)
    os.makedirs(OUT, exist_ok=True)
    timm_fixtures()
    from transformers import SwinConfig, SwinForImageClassification, Swinv2Config, Swinv2ForImageClassification
    hugging_face("hf_swin", SwinConfig, SwinForImageClassification)
    hugging_face("hf_swinv2", Swinv2Config, Swinv2ForImageClassification, pretrained_window_sizes=[3, 3, 2])
    print("timm", timm.__version__, "torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
