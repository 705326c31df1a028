#!/usr/bin/env python3
"""The peer of engine_bench's BM_SwinForward: timm's own Swin-T forward (swin_tiny_patch4_window7_224) of the same
folder (engine_bench writes it to $TMPDIR/attnscope-bench-swin_tiny on its first run), on one 224 x 224 input, at the
threads asked. Needs timm (1.0.31 runs on Debian's torch 1.13; `make bench` has no timm, so this is run by hand):

    /work/venv31/bin/python tests/benchmarks/swin_peer.py --threads 1 [--repeats 20]

Prints one JSON object: the median of the repeats in ms, with timm's fused attention off (the maps made explicitly, as
attnscope records them) and on (what timm runs by default where torch has scaled_dot_product_attention).
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import timm
from safetensors.torch import load_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "attnscope-bench-swin_tiny"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    state = load_file(os.path.join(args.folder, "model.safetensors"))
    state = {("head.fc." + k[5:] if k.startswith("head.") else k): v for k, v in state.items()}
    x = torch.randn(1, 3, 224, 224)
    out = {"threads": args.threads, "timm": timm.__version__, "torch": torch.__version__}
    for fused in (False, True):
        if fused and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            continue  # torch 1.13: timm always makes the maps explicitly
        timm.layers.set_fused_attn(fused)  # read when the model is made
        model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).eval()
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all("relative_position_index" in m or "attn_mask" in m for m in missing), (missing, unexpected)
        with torch.no_grad():
            for _ in range(3):
                model(x)
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                model(x)
                times.append((time.perf_counter() - t) * 1e3)
        out["fused_ms" if fused else "explicit_ms"] = statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
