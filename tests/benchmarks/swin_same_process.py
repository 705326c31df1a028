#!/usr/bin/env python3
"""Swin-T in one process (docs/performance.md, "Swin-T against timm"): attnscope's Model.run (recording every tap, and
the logits alone), timm's forward of the same weights and torchvision's swin_t, one thread each, in alternating rounds.
Writes the folder it reads (timm's seeded swin_tiny_patch4_window7_224 as model.safetensors + config.json) when it is
missing. Needs the build's module on PYTHONPATH and a Python with timm (Debian's torch underneath):

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=build/release/python /work/venv31/bin/python \\
        tests/benchmarks/swin_same_process.py [--folder /tmp/swin_tiny] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import time

import numpy
import torch
import timm
import torchvision
from safetensors.torch import load_file, save_file

import attnscope


def write_folder(folder):
    torch.manual_seed(0)
    model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).eval()
    os.makedirs(folder, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if "relative_position_index" not in k and "attn_mask" not in k}
    save_file(state, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"architecture": "swin_tiny_patch4_window7_224", "num_classes": 1000}, f)


def median_ms(f, repeats):
    f(), f()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", default="/tmp/swin_tiny")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    attnscope.set_threads(1)
    if not os.path.exists(os.path.join(args.folder, "model.safetensors")):
        write_folder(args.folder)
    ours = attnscope.load(args.folder)
    theirs = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).eval()
    theirs.load_state_dict(load_file(os.path.join(args.folder, "model.safetensors")), strict=False)
    torch.manual_seed(0)
    tv = torchvision.models.swin_t().eval()
    x = numpy.random.RandomState(0).randn(3, 224, 224).astype(numpy.float32)
    xt = torch.from_numpy(x)[None]
    out = {"ours_all": [], "ours_logits": [], "timm": [], "torchvision": []}
    with torch.no_grad():
        a, b = ours.run(x, record="none").logits, theirs(xt)[0].numpy()
        out["max_logit_difference"] = float(numpy.abs(a - b).max())
        for _ in range(args.rounds):
            out["ours_all"].append(median_ms(lambda: ours.run(x, record="all"), args.repeats))
            out["ours_logits"].append(median_ms(lambda: ours.run(x, record="none"), args.repeats))
            out["timm"].append(median_ms(lambda: theirs(xt), args.repeats))
            out["torchvision"].append(median_ms(lambda: tv(xt), args.repeats))
    out["ratio_to_timm"] = statistics.median(o / t for o, t in zip(out["ours_all"], out["timm"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
