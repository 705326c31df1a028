#!/usr/bin/env python3
"""Writes tests/golden/families/: timm hub folders (timm.models.save_for_hf: model.safetensors + config.json, as a user
downloads them) of the families attnscope refuses, each with small seeded random weights, for
tests/engine/FamiliesTest.cpp: each must be refused in one line that names what the family needs, never run as the
nearest family it resembles (docs/models.md, "Families").

Needs timm 1.0.31 (DINOv3, EVA-02, SigLIP, BEiT v2, Swin), which runs on Debian's torch 1.13, and transformers 4.40.2
(hf_beit):
    /usr/bin/python3 -m venv --system-site-packages /work/venv31
    /work/venv31/bin/pip install --no-deps timm==1.0.31 transformers==4.40.2 tokenizers==0.19.1 safetensors \
        huggingface_hub filelock fsspec pyyaml requests tqdm packaging regex
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
# Written first, as when Swin was refused, so that the seeded weights of every folder after it stay what they were; Swin
# runs now (its goldens are tests/golden/swin, make_swin.py).
FIRST = {
    "timm_swin": ("swin_tiny_patch4_window7_224", dict(img_size=56, embed_dim=8, depths=(1, 1), num_heads=(1, 2),
                                                       num_classes=5)),
}
# Families attnscope refuses, written last.
REFUSED = {
    "timm_relpos": ("vit_relpos_small_patch16_224", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=6,
                                                          num_classes=5)),
}
# Families attnscope runs, under their registry names, as save_for_hf writes them. Each folder also has input.npy and
# what timm computes: logits.npy, attn_L{l}.npy (every layer's softmax, with BEiT's relative position bias inside) and
# block_L{l}.npy (the token stream entering block 1 and after each block).
RUNS = {
    "timm_vit_small": ("vit_small_patch16_224", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=6,
                                                     num_classes=5)),
    "timm_beitv2": ("beitv2_base_patch16_224", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=12,
                                                    num_classes=5)),
    "timm_beit": ("beit_base_patch16_224", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=12,
                                                num_classes=5)),
    "timm_dinov3": ("vit_small_patch16_dinov3", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=6,
                                                     num_classes=5)),
    "timm_siglip_gap": ("vit_base_patch32_siglip_gap_256", dict(img_size=16, patch_size=4, embed_dim=24, depth=2,
                                                                num_heads=12, num_classes=5)),
    # EVA-02: axial RoPE over (y, x) rescaled to the 16x16 pretraining grid, interleaved pairs, beside a learned table;
    # packed SwiGLU, q and v biases, mean pooling through fc_norm.
    "timm_eva02": ("eva02_tiny_patch14_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                                                  num_classes=5)),
    # EVA-02 base/large's layout: q, k, v apart (no k bias), SwiGLU's fc1_g/fc1_x with its norm, the CLIP towers' norm
    # inside the attention, CLS pooling.
    "timm_eva02_clip": ("eva02_base_patch16_clip_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2,
                                                           num_heads=2, num_classes=5)),
    # RoPE-Axial ViT: (x, y) index coordinates, temperature 100, no learned table; and with one beside it (_ape).
    "timm_vit_rope": ("vit_small_patch16_rope_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                                                         num_classes=5)),
    "timm_vit_rope_ape": ("vit_small_patch16_rope_ape_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2,
                                                                 num_heads=2, num_classes=5)),
    # RoPE-Mixed: learned frequencies per layer and head (rope.freqs).
    "timm_vit_rope_mixed": ("vit_small_patch16_rope_mixed_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2,
                                                                     num_heads=2, num_classes=5)),
    # A register and no CLS token, mean pooling, (y, x) coordinates rescaled to 16x16.
    "timm_vit_rope_reg": ("vit_medium_patch16_rope_reg1_gap_256", dict(img_size=16, patch_size=4, embed_dim=16,
                                                                       depth=2, num_heads=2, num_classes=5)),
    # SigLIP's attention-pool head (global_pool "map"): one learned query over the patches; its map is pool.npy [H, P].
    "timm_siglip": ("vit_base_patch16_siglip_224", dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                                                        num_classes=5)),
    # SigLIP 2's tanh GELU, and a map head behind registers (which it does not read).
    "timm_siglip_tanh": ("vit_base_patch32_siglip_256", dict(img_size=16, patch_size=4, embed_dim=16, depth=2,
                                                             num_heads=2, num_classes=5)),
    "timm_map_registers": ("vit_so150m_patch16_reg4_map_256", dict(img_size=16, patch_size=4, embed_dim=16, depth=2,
                                                                   num_heads=2, num_classes=5)),
    # DINOv3 with SwiGLU (fc1_g/fc1_x, hidden width aligned to 8).
    "timm_dinov3_swiglu": ("vit_small_plus_patch16_dinov3", dict(img_size=16, patch_size=4, embed_dim=24, depth=2,
                                                                 num_heads=6, num_classes=5)),
    # MAE's and DINO's encoders under their pretrained tags: plain ViTs without a classifier (the CLS token's features).
    "timm_mae": ("vit_base_patch16_224.mae", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=12,
                                                  num_classes=0)),
    "timm_dino": ("vit_small_patch16_224.dino", dict(img_size=16, patch_size=4, embed_dim=24, depth=2, num_heads=6,
                                                     num_classes=0)),
}


def hugging_face_folder(model, name):
    """The model with seeded random weights (N(0, 0.1)), saved as save_pretrained writes it into families/<name>."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.1)
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def save_reference(folder, x, logits, out, **extra):
    """input.npy, logits.npy, attn_L{l}.npy (output_attentions) and block_L{l}.npy (output_hidden_states), and each of
    `extra` as <key>.npy, float32."""
    def save(name, t):
        np.save(os.path.join(folder, name + ".npy"), np.ascontiguousarray(t.numpy(), dtype=np.float32))
    save("input", x)
    save("logits", logits)
    for l, m in enumerate(out.attentions, start=1):
        save("attn_L%d" % l, m[0])
    for l, h in enumerate(out.hidden_states):
        save("block_L%d" % l, h[0])
    for name, t in extra.items():
        save(name, t)


def hugging_face_beit():
    """transformers' BeitForImageClassification, small, saved as the hub has it (save_pretrained: model.safetensors +
    config.json), with its logits, attention maps (output_attentions) and hidden states (output_hidden_states)."""
    from transformers import BeitConfig, BeitForImageClassification
    import transformers
    cfg = BeitConfig(image_size=16, patch_size=4, hidden_size=24, num_hidden_layers=2, num_attention_heads=12,
                     intermediate_size=96, use_relative_position_bias=True, use_absolute_position_embeddings=False,
                     use_mean_pooling=True, layer_scale_init_value=0.1, num_labels=5)
    model = BeitForImageClassification(cfg).eval()
    folder = hugging_face_folder(model, "hf_beit")
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        out = model(pixel_values=x, output_attentions=True, output_hidden_states=True)
    save_reference(folder, x, out.logits[0], out)
    print("hf_beit", "transformers", transformers.__version__, sorted(os.listdir(folder)), file=sys.stderr)


def hugging_face_siglip():
    """transformers' SiglipVisionModel, small, as save_pretrained writes it, with its pooled features (pooler_output, the
    attention-pool head's), maps, hidden states and the pool's per-head map from its own nn.MultiheadAttention."""
    from transformers import SiglipVisionConfig, SiglipVisionModel
    cfg = SiglipVisionConfig(image_size=16, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64)
    model = SiglipVisionModel(cfg).eval()
    folder = hugging_face_folder(model, "hf_siglip")
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        out = model(pixel_values=x, output_attentions=True, output_hidden_states=True)
        head = model.vision_model.head
        last = out.last_hidden_state
        pool = head.attention(head.probe, last, last, average_attn_weights=False)[1][0, :, 0]  # [H, P]
    save_reference(folder, x, out.pooler_output[0], out, pool=pool)
    print("hf_siglip", sorted(os.listdir(folder)), file=sys.stderr)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    timm.layers.set_fused_attn(False)  # the softmax explicit, so that its maps can be recorded (the same numbers)
    if os.path.isdir(OUT):
        for name in list(FIRST) + list(RUNS) + list(REFUSED):
            shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    timm_folders(list(FIRST.items()) + list(RUNS.items()))
    hugging_face_beit()
    hugging_face_siglip()
    timm_folders(list(REFUSED.items()))
    print("timm", timm.__version__, "torch", torch.__version__, file=sys.stderr)


def timm_folders(items):
    """timm hub folders of `items` (name, (architecture, keyword arguments)); for those of RUNS, timm's numbers."""
    for name, (arch, kwargs) in items:
        model = timm.create_model(arch, pretrained=False, **kwargs).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * 0.1)
        folder = os.path.join(OUT, name)
        save_for_hf(model, folder, model_args=kwargs, safe_serialization=True)
        if name in RUNS:
            x = torch.randn(1, 3, kwargs["img_size"], kwargs["img_size"])
            maps, blocks = [], []
            hooks = [b.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(o[0].clone())) for b in model.blocks]
            hooks.append(model.blocks[0].register_forward_pre_hook(lambda m, i: blocks.append(i[0][0].clone())))
            hooks += [b.register_forward_hook(lambda m, i, o: blocks.append(o[0].clone())) for b in model.blocks]
            pool = {}
            if getattr(model, "attn_pool", None) is not None:  # the pool's softmax is inline: rebuilt from its q and kv
                hooks.append(model.attn_pool.q.register_forward_hook(lambda m, i, o: pool.update(q=o[0].clone())))
                hooks.append(model.attn_pool.kv.register_forward_hook(lambda m, i, o: pool.update(kv=o[0].clone())))
            with torch.no_grad():
                logits = model(x)[0]
            for h in hooks:
                h.remove()
            assert len(maps) == len(model.blocks), "the attention maps were not recorded (fused attention?)"
            np.save(os.path.join(folder, "input.npy"), x.numpy().astype(np.float32))
            np.save(os.path.join(folder, "logits.npy"), logits.numpy().astype(np.float32))
            for l, m in enumerate(maps, start=1):
                np.save(os.path.join(folder, "attn_L%d.npy" % l), np.ascontiguousarray(m.numpy(), dtype=np.float32))
            for l, b in enumerate(blocks):
                np.save(os.path.join(folder, "block_L%d.npy" % l), np.ascontiguousarray(b.numpy(), dtype=np.float32))
            if pool:
                heads = model.attn_pool.num_heads
                q = pool["q"].reshape(1, heads, -1).transpose(0, 1)                            # [H, 1, d]
                k = pool["kv"].reshape(-1, 2, heads, q.shape[-1])[:, 0].transpose(0, 1)         # [H, P, d]
                m = ((q * model.attn_pool.scale) @ k.transpose(-2, -1)).softmax(-1)[:, 0]      # [H, P]
                np.save(os.path.join(folder, "pool.npy"), np.ascontiguousarray(m.numpy(), dtype=np.float32))
        os.remove(os.path.join(folder, "pytorch_model.bin")) if os.path.exists(os.path.join(folder, "pytorch_model.bin")) else None
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        print(name, cfg["architecture"], sorted(os.listdir(folder)), file=sys.stderr)


if __name__ == "__main__":
    main()
