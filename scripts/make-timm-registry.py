#!/usr/bin/env python3
"""Writes engine/src/checkpoint/TimmRegistry.inc: every vision transformer timm registers, with what attnscope needs to
know of it that a checkpoint's tensors cannot tell (heads, activation, LayerNorm epsilon, whether position rows cover
the prefix tokens, pooling) or, for one attnscope does not run exactly, why (docs/models.md, "Families").

Nothing is built: each model's entry point is called with timm's builder replaced by one that records the class and
the keyword arguments the entry point passes, so the facts are timm's own, not read off the names.

    python3 -m venv --system-site-packages /work/venv31
    /work/venv31/bin/pip install --no-deps timm==1.0.31 safetensors huggingface_hub
    /work/venv31/bin/python scripts/make-timm-registry.py engine/src/checkpoint/TimmRegistry.inc
"""
import importlib
import sys

import timm
from timm.models import _registry


class Stop(Exception):
    pass


captured = {}


def capture(module):
    def build(model_cls, variant, pretrained, **kwargs):
        captured.update(cls=model_cls.__name__, module=module, kwargs=kwargs)
        raise Stop()
    return build


VIT_MODULES = ("vision_transformer", "deit", "eva", "beit", "swin_transformer", "swin_transformer_v2")
for name in VIT_MODULES:
    importlib.import_module("timm.models." + name).build_model_with_cfg = capture(name)


def text(v):
    return getattr(v, "__name__", None) or str(v)


def norm_eps(kw):
    n = kw.get("norm_layer")
    if n is None:
        return 1e-6, None
    s = text(n)
    if "RmsNorm" in s or "rmsnorm" in s.lower():
        return None, "RMSNorm"
    if hasattr(n, "keywords") and "eps" in n.keywords:
        return float(n.keywords["eps"]), None
    return 1e-6, None


ACTIVATIONS = {"gelu": "gelu", "GELU": "gelu", "gelu_tanh": "gelu_tanh", "quick_gelu": "quick_gelu",
               "silu": "silu", "SiLU": "silu"}


def vit_verdict(cls, kw):
    """(reason or '', activation, eps) for timm's VisionTransformer and its distilled subclass."""
    problems = []
    if cls not in ("VisionTransformer", "VisionTransformerDistilled"):
        problems.append("the " + cls + " class")
    if kw.get("attn_layer") not in (None, "", "attention"):
        problems.append("differential attention (attn_layer " + text(kw["attn_layer"]) + ")")
    block = text(kw["block_fn"]) if "block_fn" in kw else None
    if block in ("ParallelScalingBlock", "ParallelThingsBlock", "DiffParallelScalingBlock"):
        problems.append("parallel attention and MLP branches (" + block + ")")
    elif block == "ResPostBlock":
        problems.append("norms after each residual branch (ResPostBlock)")
    elif block is not None:
        problems.append("blocks of " + block)
    if "mlp_layer" in kw:
        mlp = kw["mlp_layer"]
        problems.append("a gated MLP (" + text(getattr(mlp, "func", mlp)) + ")")
    eps, norm_problem = norm_eps(kw)
    if norm_problem:
        problems.append(norm_problem)
    if kw.get("embed_norm_layer") is not None:
        problems.append("a norm inside the patch embedding")
    if kw.get("qk_norm"):
        problems.append("query/key normalisation (qk_norm)")
    if kw.get("scale_attn_norm") or kw.get("scale_mlp_norm"):
        problems.append("norms inside the attention and MLP (scale_attn_norm, scale_mlp_norm)")
    if kw.get("pool_include_prefix"):
        problems.append("average pooling over the prefix tokens too")
    if kw.get("pos_embed", "learn") != "learn":
        problems.append("position embedding \"" + str(kw["pos_embed"]) + "\"")
    act = ACTIVATIONS.get(text(kw.get("act_layer", "gelu")))
    if act is None:
        problems.append("activation " + text(kw["act_layer"]))
    return "; ".join(problems), act or "gelu", eps or 1e-6


# timm's Eva arguments attnscope reads or that do not change the model at inference; any other refuses the model.
EVA_ARGS = {"img_size", "patch_size", "in_chans", "num_classes", "embed_dim", "depth", "num_heads", "qkv_bias",
            "qkv_fused", "mlp_ratio", "swiglu_mlp", "scale_mlp", "scale_attn_inner", "attn_type", "init_values",
            "class_token", "num_reg_tokens", "no_embed_class", "use_abs_pos_emb", "use_rot_pos_emb", "rope_type",
            "rope_grid_indexing", "rope_temperature", "rope_rotate_half", "rope_shift_coords", "rope_jitter_coords",
            "rope_rescale_coords", "ref_feat_shape", "global_pool", "use_fc_norm", "use_post_transformer_norm",
            "dynamic_img_size", "norm_layer", "swiglu_align_to", "drop_rate", "pos_drop_rate", "proj_drop_rate", "attn_drop_rate",
            "drop_path_rate", "head_init_scale",
            # the builder's own, not the model's
            "feature_cfg", "pretrained_filter_fn", "pretrained_cfg", "pretrained_strict", "pretrained_cfg_overlay"}


def eva_verdict(kw):
    """(reason or '', eps, rope fields) for timm's Eva: EVA-02 and the RoPE ViTs (axial and mixed rotary embeddings,
    an absolute table beside them, SwiGLU MLPs with their inner norm, q/k/v apart) and DINOv3."""
    problems = []
    eps, norm_problem = norm_eps(kw)
    if norm_problem:
        problems.append(norm_problem)
    rope = str(kw.get("rope_type", "cat"))  # Eva's default: axial frequencies concatenated
    xy = kw.get("rope_grid_indexing", "ij") == "xy"
    if kw.get("use_rot_pos_emb") and rope not in ("cat", "mixed", "dinov3"):
        problems.append("rotary position embedding (RoPE, " + rope + ")")
    if kw.get("use_rot_pos_emb") and rope == "mixed" and not xy:
        problems.append("RoPE-Mixed over (y, x) coordinates")
    if kw.get("attn_type", "eva") not in ("eva", "rope"):
        problems.append("attention " + str(kw["attn_type"]))
    if kw.get("attn_only_layer_scale"):
        problems.append("layer scale on the attention branch only")
    if kw.get("use_pre_transformer_norm"):
        problems.append("a norm before the first block")
    if kw.get("qk_norm"):
        problems.append("query/key normalisation")
    if kw.get("global_pool") == "map":
        problems.append("the attention-pool head (global_pool \"map\")")
    if kw.get("use_post_norm"):
        problems.append("post-norm EVA blocks")
    if "num_kv_heads" in kw:
        problems.append("grouped key/value heads")
    if kw.get("gated_attn"):
        problems.append("gated attention")
    if kw.get("rope_grid_offset"):
        problems.append("a RoPE grid offset")
    for key in sorted(set(kw) - EVA_ARGS - {"use_post_norm", "num_kv_heads", "qk_norm", "attn_only_layer_scale",
                                            "use_pre_transformer_norm", "gated_attn",
                                            "rope_grid_offset", "attn_pool_num_heads", "attn_pool_mlp_ratio"}):
        problems.append("EVA argument " + key)
    if not problems and not kw.get("use_rot_pos_emb"):
        problems.append("EVA without a rotary position embedding")
    fields = None
    if kw.get("use_rot_pos_emb"):
        ref = kw.get("ref_feat_shape")
        ref = (ref, ref) if isinstance(ref, int) else tuple(ref) if ref is not None else (0, 0)
        kind = {"cat": "axial", "mixed": "mixed", "dinov3": "dinov3"}.get(rope, rope)
        fields = dict(rope=kind, temperature=float(kw.get("rope_temperature", 100 if rope == "dinov3" else 10000)),
                      xy=xy, half=bool(kw.get("rope_rotate_half", False)) or rope == "dinov3", ref=ref,
                      abs=bool(kw.get("use_abs_pos_emb", True)), swiglu=bool(kw.get("swiglu_mlp", False)))
    return "; ".join(problems), eps, fields


def beit_verdict(kw):
    """attnscope runs timm's Beit with a relative position bias table per layer, q and v biases, layer scale."""
    problems = []
    if kw.get("use_shared_rel_pos_bias"):
        problems.append("a relative position bias shared by all layers")
    if kw.get("use_abs_pos_emb", True):
        problems.append("an absolute position embedding beside the relative bias")
    if not kw.get("use_rel_pos_bias"):
        problems.append("BEiT without a relative position bias")
    if kw.get("swiglu_mlp") or kw.get("scale_mlp"):
        problems.append("SwiGLU or scaled MLPs")
    return "; ".join(problems)


def swin_verdict(cls, kw):
    """(reason or '', {"windows": 4 per-stage windows, "pretrained": 4 per-stage pretraining windows}) for timm's
    SwinTransformer and SwinTransformerV2: what their tensors cannot tell (v2 keeps no table whose size gives the
    window; its position bias's coordinates are scaled to the pretraining window)."""
    problems = []
    depths = kw.get("depths", (2, 2, 6, 2))
    window = kw.get("window_size", 7)
    windows = list(window) if isinstance(window, (tuple, list)) else [window] * len(depths)
    pretrained = list(kw.get("pretrained_window_sizes", (0,) * len(depths)))
    if len(depths) > 4:
        problems.append("more than four stages")
    for key in ("ape", "always_partition", "strict_img_size"):
        if kw.get(key):
            problems.append(key)
    if kw.get("norm_layer") is not None or kw.get("act_layer") is not None:
        problems.append("a norm or activation of its own")
    windows += [0] * (4 - len(windows))
    pretrained += [0] * (4 - len(pretrained))
    return "; ".join(problems), {"windows": windows[:4], "pretrained": pretrained[:4]}


OTHER_REASONS = {
    "vision_transformer_relpos": "relative position embedding (timm's relpos ViT)",
    "vision_transformer_sam": "windowed attention with relative positions (SAM's encoder)",
    "vision_transformer_hybrid": "a convolutional (ResNet) stem before the transformer",
    "naflexvit": "NaFlex variable-resolution patches",
    "swin_transformer_v2_cr": "timm's SwinTransformerV2Cr, a Swin v2 of its own layout",
}


def family(name):
    for word in ("dinov2", "deit3", "deit", "clip", "siglip", "dino", "mae"):
        if word in name:
            return word
    return "vit"


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(out_path):
    rows = []
    for name in timm.list_models():
        module = _registry._model_to_module.get(name, "").split(".")[-1]
        captured.clear()
        if module in VIT_MODULES:
            try:
                _registry._model_entrypoints[name](pretrained=False)
            except Stop:
                pass
        kw = captured.get("kwargs", {})
        heads, act, eps, nec, pool, fam = 0, "gelu", 1e-6, False, "token", ""
        if module in ("vision_transformer", "deit") and captured:
            reason, act, eps = vit_verdict(captured["cls"], kw)
            heads = int(kw.get("num_heads", 12))
            nec = bool(kw.get("no_embed_class", False))
            pool = kw.get("global_pool", "token") or "token"
            fam = family(name)
        elif module == "eva":
            reason, eps, rope = eva_verdict(kw)
            heads = int(kw.get("num_heads", 12))
            pool = kw.get("global_pool", "avg") or "token"
            nec = bool(kw.get("no_embed_class", False))
            fam = ("dinov3" if rope and rope["rope"] == "dinov3" else "eva02" if name.startswith("eva02") else "rope-vit")
            act = "silu" if rope and rope["swiglu"] else "gelu"
        elif module == "beit":
            reason = beit_verdict(kw)
            heads = int(kw.get("num_heads", 12))
            pool = kw.get("global_pool", "avg") or "token"
            fam = "beitv2" if name.startswith("beitv2") else "beit"
        elif module in ("swin_transformer", "swin_transformer_v2"):
            reason, swin = swin_verdict(captured["cls"], kw)
            fam = "swinv2" if module == "swin_transformer_v2" else "swin"
            eps, pool = 1e-5, kw.get("global_pool", "avg") or "avg"
        elif module in OTHER_REASONS:
            reason = OTHER_REASONS[module]
        else:
            continue  # not a vision transformer: refused as a name outside this table
        if reason:
            rows.append("{ %s, %s, %s }," % (c_string(name), c_string(module), c_string(reason)))
        else:
            extra = ""
            if module.startswith("swin"):
                extra = ', "", 0, false, false, 0, 0, false, { %s }, { %s }' % (
                    ", ".join(str(w) for w in swin["windows"]), ", ".join(str(w) for w in swin["pretrained"]))
            if module == "eva" and rope:
                extra = ', "%s", %g, %s, %s, %d, %d, %s' % (
                    rope["rope"], rope["temperature"], "true" if rope["xy"] else "false",
                    "true" if rope["half"] else "false", rope["ref"][0], rope["ref"][1], "true" if rope["abs"] else "false")
            rows.append("{ %s, %s, \"\", %s, %d, %s, %.0e, %s, %s%s }," % (
                c_string(name), c_string(module), c_string(fam), heads, c_string(act), eps,
                "true" if nec else "false", c_string(pool), extra))
    with open(out_path, "w") as f:
        f.write("// Generated by scripts/make-timm-registry.py from timm " + timm.__version__ + "; do not edit.\n")
        f.write("// { architecture, module, why attnscope does not run it (empty: it does), family, heads, activation,\n")
        f.write("//   LayerNorm eps, no_embed_class, global_pool[, rotary embedding (dinov3 | axial | mixed), its temperature,\n")
        f.write("//   (x, y) coordinates, rotated in halves, reference grid height and width (0: none), a learned table beside it]\n")
        f.write("//   [, Swin's window per stage, Swin v2's pretraining window per stage] }\n")
        f.write("\n".join(sorted(rows)) + "\n")
    print(len(rows), "vision transformers,", sum(1 for r in rows if '", "", "' in r), "run", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
