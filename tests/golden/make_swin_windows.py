#!/usr/bin/env python3
"""Writes tests/golden/swin/{timm_swin,timm_swin_pad}/window_tokens_L{l}.npy: for every block l (1-based over every
stage), which token of the stage's grid (y * w + x, row-major) each key of each window is, -1 for the padding,
[nW, wh * ww] as float32. Made the way timm's SwinTransformerBlock places tokens in windows: an index grid rolled by
the block's shift_size, padded at the bottom and right, cut by timm's own window_partition, with the window and shift
timm chose for the block (its clipping to a small grid included). tests/engine/SwinMapsTest.cpp reads these against
WindowBlock::place/tokenOf and the placed attention maps. Same venv as make_swin.py:
    /work/venv31/bin/python tests/golden/make_swin_windows.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import timm
from timm.models.swin_transformer import window_partition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_swin import OUT, TIMM  # noqa: E402


def window_tokens(blk, dtype=torch.float32):
    """Which token of block `blk`'s grid each key of each window is, -1 for the padding: [nW, wh * ww], placed as timm's
    SwinTransformerBlock places them (its roll by shift_size, padding at the bottom and right, window_partition)."""
    h, w = blk.input_resolution
    wh, ww = blk.window_size
    sh, sw = blk.shift_size
    grid = torch.arange(h * w, dtype=dtype).view(1, h, w, 1)
    if sh or sw:
        grid = torch.roll(grid, shifts=(-sh, -sw), dims=(1, 2))
    grid = F.pad(grid, (0, 0, 0, (ww - w % ww) % ww, 0, (wh - h % wh) % wh), value=-1.0)
    return window_partition(grid, (wh, ww)).reshape(-1, wh * ww)


def main():
    for folder in ("timm_swin", "timm_swin_pad"):
        name, kwargs = TIMM[folder]
        model = timm.create_model(name, pretrained=False, **kwargs)
        l = 0
        for stage in model.layers:
            for blk in stage.blocks:
                l += 1
                windows = window_tokens(blk)
                np.save(os.path.join(OUT, folder, "window_tokens_L%d.npy" % l), windows.numpy().astype(np.float32))
        print(folder, l, "blocks")


if __name__ == "__main__":
    main()
