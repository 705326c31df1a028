#!/usr/bin/env python3
"""Writes tests/golden/families/hf_dinov3 and hf_dinov3_gated: transformers' DINOv3ViTModel, small, with seeded random
weights, as save_pretrained writes it (model.safetensors + config.json, the hub's layout: `layer.N.` names), with its
pooled output (the CLS token after the final norm), every layer's attention map (output_attentions, eager attention)
and hidden state (output_hidden_states), for tests/engine/RotaryAndPoolTest.cpp.

transformers has DINOv3 from 4.56, which needs a torch 2.x: this script runs in a venv of its own, not the one of
make_families.py (Debian's torch 1.13); it takes
make_families.py's helpers, which import timm:
    python3 -m venv /work/venv-t2
    /work/venv-t2/bin/pip install torch==2.12.1 transformers==5.24.0 timm==1.0.31 numpy safetensors
    /work/venv-t2/bin/python tests/golden/make_hf_dinov3.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_families import hugging_face_folder, save_reference  # noqa: E402


def dinov3(name, **kwargs):
    import transformers
    from transformers import DINOv3ViTConfig, DINOv3ViTModel
    cfg = DINOv3ViTConfig(image_size=16, patch_size=4, hidden_size=24, num_hidden_layers=2, num_attention_heads=6,
                          layerscale_value=0.1, **{"intermediate_size": 96, **kwargs})
    cfg._attn_implementation = "eager"  # the softmax explicit, so that output_attentions has the maps
    model = DINOv3ViTModel(cfg).eval()
    folder = hugging_face_folder(model, name)
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        out = model(pixel_values=x, output_attentions=True, output_hidden_states=True)
    assert len(out.attentions) == cfg.num_hidden_layers and len(out.hidden_states) == cfg.num_hidden_layers + 1
    save_reference(folder, x, out.pooler_output[0], out)
    print(name, "transformers", transformers.__version__, "torch", torch.__version__, sorted(os.listdir(folder)),
          file=sys.stderr)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # DINOv3 ViT-S's layout: registers, q and v biases without a key bias, GELU.
    dinov3("hf_dinov3", num_register_tokens=2)
    # The plus/huge-plus sizes: a gated (SwiGLU) MLP; here with a key bias and another rope_theta, no registers.
    dinov3("hf_dinov3_gated", use_gated_mlp=True, hidden_act="silu", key_bias=True, rope_theta=50.0, intermediate_size=64)


if __name__ == "__main__":
    main()
