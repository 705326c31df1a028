#!/usr/bin/env python3
"""Writes tests/golden/swin/{timm_swin,timm_swin_pad,timm_swinv2}/qk_L{l}.npy: for every block l (1-based over every
stage), the queries and keys its window attention multiplies, [2, h*w, C] as float32 (0: q, 1: k; every head's d
columns side by side, as timm's qkv lays them out), row-major over the stage's grid. Computed by timm itself in float64
from the fixture's own checkpoint and input.npy: a pre-hook on each block's WindowAttention takes the windowed tokens
it is given (after norm1 in Swin, the raw block input in Swin v2; shifted, padded and partitioned by timm), the qkv is
the one timm's forward computes (Swin v2: its q_bias, zero k bias and v_bias), and each window's rows are put back on
the grid through timm's own window_partition of an index grid (the padding's rows dropped). Swin v2's logits are
cosines: tests/engine/SwinQueryKeyTest.cpp normalises each head's rows itself. Same venv as make_swin.py:
    /work/venv31/bin/python tests/golden/make_swin_qk.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import timm
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_swin import OUT, TIMM  # noqa: E402
from make_swin_windows import window_tokens  # noqa: E402


def qkv_of(attn, x):
    """The qkv of timm's WindowAttention (v1) or WindowAttention of Swin v2 for windows x [B nW, n, C]."""
    if getattr(attn, "q_bias", None) is not None:
        return F.linear(x, attn.qkv.weight, torch.cat((attn.q_bias, attn.k_bias, attn.v_bias)))
    return attn.qkv(x)


def main():
    torch.set_num_threads(1)
    timm.layers.set_fused_attn(False)
    for folder in ("timm_swin", "timm_swin_pad", "timm_swinv2"):
        arch, kwargs = TIMM[folder]
        model = timm.create_model(arch, pretrained=False, **kwargs).eval()
        model.load_state_dict(load_file(os.path.join(OUT, folder, "model.safetensors")))
        model = model.double()
        blocks = [b for s in model.layers for b in s.blocks]
        windows = []
        hooks = [b.attn.register_forward_pre_hook(lambda m, i: windows.append((m, i[0]))) for b in blocks]
        x = torch.from_numpy(np.load(os.path.join(OUT, folder, "input.npy"))).double()
        with torch.no_grad():
            model(x)
            for h in hooks:
                h.remove()
            assert len(windows) == len(blocks)
            for l, (blk, (attn, xw)) in enumerate(zip(blocks, windows), start=1):
                qkv = qkv_of(attn, xw)  # [nW, n, 3C]
                c = qkv.shape[-1] // 3
                index = window_tokens(blk, torch.float64).reshape(-1).long()
                tokens = blk.input_resolution[0] * blk.input_resolution[1]
                rows = qkv.reshape(-1, 3 * c)
                keep = index >= 0
                out = torch.zeros(2, tokens, c, dtype=torch.float64)
                out[0, index[keep]] = rows[keep, :c]
                out[1, index[keep]] = rows[keep, c:2 * c]
                np.save(os.path.join(OUT, folder, "qk_L%d.npy" % l), out.numpy().astype(np.float32))
        print(folder, len(blocks), "blocks")


if __name__ == "__main__":
    main()
