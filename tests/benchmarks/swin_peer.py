#!/usr/bin/env python3
"""The peer of engine_bench's BM_SwinForward (issue 46: a Swin-T forward recording every tap within 1.3x of the peer's
forward on the same CPU), run by `make bench` (run_bench.py) at 1 and 2 threads:

- with timm installed: timm's own swin_tiny_patch4_window7_224 forward of the same folder (engine_bench writes it to
  $TMPDIR/attnscope-bench-swin_tiny on its first run), timm's fused attention off (the maps made explicitly, as attnscope
  records them) and, where torch has scaled_dot_product_attention, on;
- otherwise (`make bench`'s Debian packages have no timm): torchvision's swin_t, the same architecture (patch 4,
  window 7, widths 96..768, depths 2, 2, 6, 2) with its own seeded weights, which a forward's time does not depend on.

    /usr/bin/python3 tests/benchmarks/swin_peer.py --threads 1 [--repeats 20] [--peer auto|timm|torchvision]

Prints one JSON object: the median of the repeats in ms ("explicit_ms": the maps made explicitly; "fused_ms" when
timm's fused attention ran too), the peer and the versions.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch


def timed(model, x, repeats):
    with torch.no_grad():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def timm_models(folder):
    """timm's Swin-T over the folder's weights, with its fused attention off and (where torch has it) on."""
    import timm
    from safetensors.torch import load_file

    state = load_file(os.path.join(folder, "model.safetensors"))
    state = {("head.fc." + k[5:] if k.startswith("head.") and not k.startswith("head.fc.") else k): v for k, v in state.items()}
    for fused in (False, True):
        if fused and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            continue  # torch 1.13: timm always makes the maps explicitly
        timm.layers.set_fused_attn(fused)  # read when the model is made
        model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).eval()
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all("relative_position_index" in m or "attn_mask" in m for m in missing), (missing, unexpected)
        yield ("fused_ms" if fused else "explicit_ms"), model
    yield "peer", "timm " + timm.__version__


def torchvision_models():
    import torchvision

    torch.manual_seed(0)
    yield "explicit_ms", torchvision.models.swin_t().eval()  # its windows' maps are made explicitly
    yield "peer", "torchvision " + torchvision.__version__ + " swin_t"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--peer", choices=("auto", "timm", "torchvision"), default="auto")
    ap.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "attnscope-bench-swin_tiny"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kind = args.peer
    if kind == "auto":
        try:
            import timm  # noqa: F401

            kind = "timm" if os.path.exists(os.path.join(args.folder, "model.safetensors")) else "torchvision"
        except ImportError:
            kind = "torchvision"
    x = torch.randn(1, 3, 224, 224)
    out = {"threads": args.threads, "torch": torch.__version__}
    for key, value in timm_models(args.folder) if kind == "timm" else torchvision_models():
        out[key] = value if key == "peer" else timed(value, x, args.repeats)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
