#!/usr/bin/env python3
"""The peer of `make bench-gpu`: what a GPU user writes instead of attnscope.

A ViT in timm's module and parameter names (patch_embed.proj, cls_token, pos_embed, blocks.N.{norm1, attn.qkv,
attn.proj, norm2, mlp.fc1, mlp.fc2}, norm, head; pre-norm, exact GELU, LayerNorm eps 1e-6, a class token, 1000 classes),
its forward written out so that it returns the taps of docs/analyses.md (X_l for l = 0..L, U_l, R_l = X_{l-1} + U_l and
the attention A_l, batch-first); images decoded from files on disk by DataLoader workers (PIL, or a reader of the
runner's own PNGs where PIL is absent); the clean batch and its Gaussian-noise copy (sigma 8 in 0..255 pixel units,
added before normalisation) in one forward of 2B inputs; then docs/analyses.md sections 1, 3 and 4 batched on the device
in float64: token cosine similarity of X, U, R (all tokens, patches), head centres (dy, dx, mean distance, prefix mass,
the 7x7 offset map over interior queries, its peak, mass and bandwidth), the SNR per layer and tap and Proposition 3.1's
diagnostics. Per-image values are summed on the device (mean and sd at the end), the top-5 predictions kept there and
copied back at the end, so nothing waits for the GPU between batches. Pure torch (no timm, torchvision or NumPy needed).
FP32 runs with TF32 off. Prints one JSON object.

    gpu_peer.py --write-model DIR --shape vit_small [--depth 2] [--format pt|safetensors]
    gpu_peer.py --model DIR --images LIST.txt --batch 64 [--device cuda] [--warmup 2] [--resident]
    (--resident: every image decoded once before the timed loop and kept on the device, which then reads its batches
    from there: the script with its inputs already on the GPU, the fastest a user's own code gets, issue 33's peer)
    gpu_peer.py --sgemm [--device cuda]
"""
import argparse
import json
import os
import resource
import struct
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from PIL import Image
except ImportError:  # the GPU machine may have torch alone: the runner's PNGs are read by png_pixels below
    Image = None

SHAPES = {"vit_small": (384, 6), "vit_base": (768, 12)}
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CENTRE_FIELDS = ("centre_dy", "centre_dx", "peak_dy", "peak_dx", "mean_distance_px", "bandwidth", "prefix_mass",
                 "window_mass")  # head_centres.csv's columns, in its order
TAPS = (("x", "block"), ("u", "attn"), ("r", "residual"))  # the peer's tap names, attnscope's CSV names


# ---------------------------------------------------------------------------------------------------- the model
class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        """[B, N, D] -> U [B, N, D], A [B, H, N, N] (timm's forward without the fused kernel, which hides A)."""
        B, N, D = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = ((q * self.scale) @ k.transpose(-2, -1)).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(B, N, D)), a


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x):
        """X_{l-1} -> X_l, U_l, R_l, A_l"""
        u, a = self.attn(self.norm1(x))
        r = x + u
        return r + self.mlp(self.norm2(r)), u, r, a


class PatchEmbed(nn.Module):
    def __init__(self, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # [B, 3, H, W] -> [B, gh*gw, D]


class VisionTransformer(nn.Module):
    def __init__(self, dim, heads, depth=12, patch=16, image=224, classes=1000):
        super().__init__()
        self.patch, self.grid = patch, image // patch
        self.patch_embed = PatchEmbed(dim, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + self.grid * self.grid, dim))
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        """[B, 3, H, W] normalised -> logits [B, K], taps {x: L+1 x [B, N, D], u, r: L x [B, N, D], a: L x [B, H, N, N]}
        (the taps before the final norm, as docs/analyses.md records them)."""
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        taps = {"x": [x], "u": [], "r": [], "a": []}
        for blk in self.blocks:
            x, u, r, a = blk(x)
            for key, t in zip("xura", (x, u, r, a)):
                taps[key].append(t)
        return self.head(self.norm(x)[:, 0]), taps


def make_model(shape, depth):
    """Seeded random weights: N(0, 0.02) as timm initialises, except the query and key rows of qkv (N(0, 0.07)), which
    give logits of standard deviation about 2, so that attention is peaked rather than nearly uniform."""
    dim, heads = SHAPES[shape]
    torch.manual_seed(0)
    model = VisionTransformer(dim, heads, depth)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.zero_()
            elif "norm" in name:
                p.fill_(1.0)
            else:
                p.normal_(0, 0.02)
            if name.endswith("attn.qkv.weight"):
                p[: 2 * dim].normal_(0, 0.07)
    return model.eval()


def write_model(out_dir, shape, depth, fmt):
    """The checkpoint attnscope loads: model.pt (torch.save of the state_dict) or model.safetensors, and a timm
    config.json (architecture, model_args.num_heads, pretrained_cfg), crop_pct 1 so a 224 x 224 image is not resized."""
    model = make_model(shape, depth)
    dim, heads = SHAPES[shape]
    os.makedirs(out_dir, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    for stale in ("model.pt", "model.safetensors"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    if fmt == "pt":
        torch.save(state, os.path.join(out_dir, "model.pt"))
    else:
        import numpy as np  # only for this fallback: the raw bytes of each tensor
        header, blobs, offset = {"__metadata__": {"format": "pt", "num_heads": str(heads)}}, [], 0
        for k, v in state.items():
            blob = v.float().numpy().astype(np.float32).tobytes()
            header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [offset, offset + len(blob)]}
            blobs.append(blob)
            offset += len(blob)
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for blob in blobs:
                f.write(blob)
    config = {"architecture": f"{shape}_patch16_224", "num_classes": 1000, "num_features": dim, "global_pool": "token",
              "model_args": {"num_heads": heads, "depth": depth, "img_size": 224},
              "pretrained_cfg": {"input_size": [3, 224, 224], "crop_pct": 1.0, "interpolation": "bicubic",
                                 "mean": list(MEAN), "std": list(STD), "num_classes": 1000}}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return {"shape": shape, "depth": depth, "heads": heads, "width": dim, "format": fmt, "dir": out_dir,
            "parameters": sum(v.numel() for v in state.values())}


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    shape = cfg["architecture"].split("_patch")[0]
    model = VisionTransformer(*SHAPES[shape], cfg["model_args"]["depth"])
    path = os.path.join(model_dir, "model.pt")
    if os.path.exists(path):
        model.load_state_dict(torch.load(path, map_location="cpu"))
    else:  # regenerate the same seeded weights (the safetensors fallback)
        model = make_model(shape, cfg["model_args"]["depth"])
    return model.eval(), shape, cfg


# ---------------------------------------------------------------------------------------------------- images
def png_pixels(path):
    """The runner's own PNGs (8-bit RGB, no interlace, filter 0 on every row) without PIL: [H, W, 3] uint8."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG (and PIL is not installed)")
    pos, idat, w, h = 8, [], 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour != 2 or interlace:
                raise ValueError(f"{path}: only 8-bit RGB PNGs are read without PIL")
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    rows = torch.frombuffer(bytearray(zlib.decompress(b"".join(idat))), dtype=torch.uint8).view(h, 1 + 3 * w)
    if bool((rows[:, 0] != 0).any()):
        raise ValueError(f"{path}: PNG row filters other than 0 need PIL")
    return rows[:, 1:].reshape(h, w, 3)


class ImageFiles(torch.utils.data.Dataset):
    """Decoded, resized (shortest edge to size / crop_pct, bicubic) and centre-cropped as timm's eval transform:
    [size, size, 3] uint8; normalisation happens on the device."""

    def __init__(self, paths, size=224, crop_pct=1.0):
        self.paths, self.size, self.scale = paths, size, int(size / crop_pct)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if Image is not None:
            img = Image.open(self.paths[i]).convert("RGB")
            w, h = img.size
            if min(w, h) != self.scale:
                s = self.scale
                img = img.resize((s, int(s * h / w)) if w <= h else (int(s * w / h), s), Image.BICUBIC)
                w, h = img.size
            if (w, h) != (self.size, self.size):
                left, top = int(round((w - self.size) / 2.0)), int(round((h - self.size) / 2.0))
                img = img.crop((left, top, left + self.size, top + self.size))
            return torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(self.size, self.size, 3)
        x = png_pixels(self.paths[i])
        if tuple(x.shape[:2]) != (self.size, self.size):  # torch's antialiased bicubic is PIL's resampling
            h, w = x.shape[:2]
            s = self.scale
            hw = (int(s * h / w), s) if w <= h else (s, int(s * w / h))
            y = F.interpolate(x.permute(2, 0, 1)[None].float(), size=hw, mode="bicubic", antialias=True)
            top, left = int(round((hw[0] - self.size) / 2.0)), int(round((hw[1] - self.size) / 2.0))
            x = y[0, :, top:top + self.size, left:left + self.size].round().clamp(0, 255).byte().permute(1, 2, 0)
        return x.contiguous()


def read_list(path):
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        return [p if os.path.isabs(p) else os.path.join(base, p) for p in (line.strip() for line in f) if p]


# ---------------------------------------------------------------------------------------------------- analyses
class Analyses:
    """docs/analyses.md sections 1, 3, 4 over a batch: per-image values [B, K] in float64 on the device, and their
    sums."""

    def __init__(self, device, grid, prefix, patch, depth, radius=3):
        self.grid, self.P, self.patch, self.depth, self.radius = grid, prefix, patch, depth, radius
        g, side = grid, 2 * radius + 1
        pos = torch.stack(torch.meshgrid(torch.arange(g), torch.arange(g), indexing="ij"), -1).reshape(-1, 2).double()
        off = pos[None, :, :] - pos[:, None, :]                                   # [q, k, 2] = pos_k - pos_q
        self.off_y, self.off_x = off[..., 0].to(device), off[..., 1].to(device)
        self.dist = off.norm(dim=-1).to(device)
        interior = [r * g + c for r in range(radius, g - radius) for c in range(radius, g - radius)]
        window = range(-radius, radius + 1)
        keys = [[(q // g + dy) * g + q % g + dx for dy in window for dx in window] for q in interior]
        self.interior = torch.tensor(interior, dtype=torch.long, device=device)
        self.keys = torch.tensor(keys, dtype=torch.long, device=device)
        cells = torch.arange(side * side)
        self.cell_y = (cells // side - radius).double().to(device)
        self.cell_x = (cells % side - radius).double().to(device)
        self.names, self.sum, self.sum2, self.n = None, None, None, 0

    def token_similarity(self, taps, B, cols, names):
        for key, tap in TAPS:
            first = 0 if key == "x" else 1
            for l, t in enumerate(taps[key], first):
                z = t[:B].double()
                unit = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                n, p = z.shape[1], self.P
                patches = unit[:, p:].sum(1)
                every = patches + unit[:, :p].sum(1)
                for s, m, which in ((every, n, "all"), (patches, n - p, "patches")):
                    cols.append(((s * s).sum(-1) - m) / (m * (m - 1)))
                    names.append(f"ts/{l}/{tap}/{which}")

    def head_centres(self, attn, B, cols, names):
        P, np_ = self.P, self.grid * self.grid
        side = 2 * self.radius + 1
        for l, a in enumerate(attn, 1):
            rows = a[:B, :, P:]                                                   # [B, H, np, N]
            w = rows[..., P:].double()
            aq = w / w.sum(-1, keepdim=True).clamp_min(1e-300)                    # a_q(k)
            H = a.shape[1]
            m = aq.index_select(2, self.interior).gather(3, self.keys.expand(B, H, -1, -1)).mean(2)  # [B, H, 49]
            mass, peak = m.sum(-1), m.argmax(-1)
            my = (m * self.cell_y).sum(-1, keepdim=True) / mass[..., None]
            mx = (m * self.cell_x).sum(-1, keepdim=True) / mass[..., None]
            spread = (m * ((self.cell_y - my) ** 2 + (self.cell_x - mx) ** 2)).sum(-1)
            fields = [(aq * self.off_y).sum((2, 3)) / np_, (aq * self.off_x).sum((2, 3)) / np_,
                      (torch.div(peak, side, rounding_mode="floor") - self.radius).double(),
                      (peak % side - self.radius).double(),
                      (aq * self.dist).sum((2, 3)) * (self.patch / np_), (spread / mass).sqrt(),
                      rows[..., :P].double().sum((2, 3)) / np_, mass]
            block = torch.cat([torch.stack(fields, 2), m], 2)                     # [B, H, 8 + 49]
            cols.extend(block.reshape(B, -1).unbind(1))
            for h in range(H):
                names.extend(f"hc/{l}/{h}/{f}" for f in CENTRE_FIELDS)
                names.extend(f"hc/{l}/{h}/map{c}" for c in range(side * side))

    def snr(self, taps, B, cols, names):
        norm = lambda t: t.square().sum((1, 2)).sqrt()                            # per image, [B]
        centred = lambda t: t - t.mean(1, keepdim=True)
        noise = {}
        for key, tap in TAPS:
            first = 0 if key == "x" else 1
            for l, t in enumerate(taps[key], first):
                c, n = t[:B].double(), t[B:].double()
                e = norm(n - c)
                if key == "x":
                    noise[l] = e
                cols.append(20 * (norm(centred(c)) / e.clamp_min(1e-300)).log10())
                names.append(f"snr/{l}/{tap}")
        for l in range(1, len(taps["u"]) + 1):
            x, u = taps["x"][l - 1][:B].double(), taps["u"][l - 1][:B].double()
            s, sh = centred(x), centred(u)
            e, eh = taps["x"][l - 1][B:].double() - x, taps["u"][l - 1][B:].double() - u
            ns, nsh, ne = norm(s), norm(sh), norm(e)
            alpha, beta, gamma = nsh / ns, (s * sh).sum((1, 2)) / (ns * nsh).clamp_min(1e-300), norm(eh) / ne
            gain = (norm(s + sh) / norm(e + eh)) / (ns / ne)
            bound = (1 + 2 * alpha * beta + alpha * alpha).sqrt() / (1 + gamma)
            holds = (torch.minimum(alpha, beta) > gamma).double()
            values = (alpha, beta, gamma, gain, bound, holds, noise[l] / noise[0])
            for f, v in zip(("alpha", "beta", "gamma", "gain", "bound", "condition_holds", "sensitivity"), values):
                cols.append(v)
                names.append(f"diag/{l}/{f}")

    def add(self, taps, B):
        cols, names = [], []
        self.snr(taps, B, cols, names)
        self.head_centres(taps["a"], B, cols, names)
        self.token_similarity(taps, B, cols, names)
        v = torch.stack(cols, 1)                                                  # [B, K]
        if self.sum is None:
            self.names, self.sum, self.sum2 = names, v.sum(0), v.square().sum(0)
        else:
            self.sum += v.sum(0)
            self.sum2 += v.square().sum(0)
        self.n += B

    def result(self):
        mean = (self.sum / self.n).cpu().tolist()
        var = ((self.sum2 - self.sum * self.sum / self.n) / max(self.n - 1, 1)).clamp_min(0).cpu().tolist()
        return dict(zip(self.names, zip(mean, var)))


# ---------------------------------------------------------------------------------------------------- the runs
def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def set_precision(precision):
    """TF32 off for fp32 (products and convolutions), on for tf32. PyTorch >= 2.9 has fp32_precision settings and warns
    about (and refuses mixing with) the allow_tf32 flags, so the new ones are used where they exist."""
    tf32 = precision == "tf32"
    try:
        new_api = torch.backends.cuda.matmul.fp32_precision is not None and hasattr(torch.backends.cudnn, "conv")
    except (AttributeError, AssertionError):  # torch < 2.9: its cuBLAS module asserts on unknown names
        new_api = False
    if new_api:
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def analyse_dataset(args):
    device = torch.device(args.device)
    set_precision(args.precision)
    model, shape, cfg = load_model(args.model)
    model = model.to(device)
    paths = read_list(args.images)
    size, crop_pct = cfg["pretrained_cfg"]["input_size"][1], cfg["pretrained_cfg"]["crop_pct"]
    data = ImageFiles(paths, size, crop_pct)
    workers = args.workers if args.workers >= 0 else (min(8, os.cpu_count() or 1) if device.type == "cuda" else 0)
    extra = {"persistent_workers": False, "prefetch_factor": 4} if workers else {}
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, num_workers=workers,
                                         pin_memory=device.type == "cuda", **extra)
    acc = Analyses(device, model.grid, 1, model.patch, len(model.blocks))
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    predictions = []
    autocast = args.precision == "bf16"

    def step(u8, accumulate):
        x = u8.to(device, non_blocking=True).permute(0, 3, 1, 2).float()     # [B, 3, H, W], 0..255
        B = x.shape[0]
        noisy = x + args.sigma * torch.randn(x.shape, generator=gen, device=device)
        inp = (torch.cat([x, noisy]) * (1.0 / 255.0) - mean) / std
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            logits, taps = model(inp)
        if accumulate:
            acc.add(taps, B)
            top = logits[:B].float().softmax(-1).topk(5)  # kept on the device: no synchronisation per batch
            predictions.append((top.indices, top.values))

    with torch.inference_mode():
        first = torch.stack([data[i] for i in range(min(args.batch, len(data)))])
        resident, decode_seconds = None, None
        if args.resident:  # decoded and uploaded once, untimed: the timed loop reads the device's copy
            t = time.perf_counter()
            resident = torch.cat([u8.to(device) for u8 in loader])
            sync(device)
            decode_seconds = time.perf_counter() - t
        for _ in range(args.warmup):  # CUDA context, cuBLAS handles, cudnn autotuning: outside the timed loop
            step(first, False)
        sync(device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        batches = (resident[i:i + args.batch] for i in range(0, len(resident), args.batch)) if args.resident else loader
        for u8 in batches:
            step(u8, True)
        stats = acc.result()
        top5 = torch.cat([i for i, _ in predictions]).cpu(), torch.cat([v for _, v in predictions]).cpu()
        sync(device)
        seconds = time.perf_counter() - t0
    ts = {}
    for key, value in stats.items():
        if key.startswith("ts/"):
            _, l, tap, which = key.split("/")
            ts.setdefault(f"{tap}/{which}", {})[int(l)] = value[0]
    out = {"mode": "analyse", "shape": shape, "depth": len(model.blocks), "batch": args.batch, "images": acc.n,
           "seconds": seconds, "images_per_s": acc.n / seconds, "device": str(device), "precision": args.precision,
           "workers": workers, "resident": args.resident, "decode_seconds": decode_seconds, "top5_rows": len(top5[0]), "torch": torch.__version__, "pil": Image is not None,
           "values_per_image": len(stats),
           "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "token_similarity": {k: [v[l] for l in sorted(v)] for k, v in ts.items()},
           "head_centres": {k[3:]: v[0] for k, v in stats.items() if k.startswith("hc/") and k.split("/")[3] in (
               "centre_dy", "centre_dx", "mean_distance_px", "bandwidth", "prefix_mass", "window_mass")},
           "snr_db_block": [stats[f"snr/{l}/block"][0] for l in range(len(model.blocks) + 1)],
           "gain_minus_bound_min": min(stats[f"diag/{l}/gain"][0] - stats[f"diag/{l}/bound"][0]
                                       for l in range(1, len(model.blocks) + 1))}
    if device.type == "cuda":
        out["max_memory_allocated_mb"] = torch.cuda.max_memory_allocated(device) / 2 ** 20
        out["max_memory_reserved_mb"] = torch.cuda.max_memory_reserved(device) / 2 ** 20
        out["gpu"] = torch.cuda.get_device_name(device)
    return out


def sgemm(args):
    """The device's matrix-product peaks with large square torch.mm: FP32 with TF32 off (the one the targets use),
    and on CUDA also TF32 and BF16. TFLOP/s = 2 n^3 / time, the best of a few timed rounds."""
    device = torch.device(args.device)
    sizes = args.sgemm_sizes or ([4096, 8192] if device.type == "cuda" else [512, 1024])
    kinds = [("fp32", torch.float32, False)]
    if device.type == "cuda":
        kinds += [("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)]
    out = {"mode": "sgemm", "device": str(device), "torch": torch.__version__}
    if device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)
    for name, dtype, tf32 in kinds:
        set_precision("tf32" if tf32 else "fp32")
        best = {}
        for n in sizes:
            a = torch.randn(n, n, device=device).to(dtype)
            b = torch.randn(n, n, device=device).to(dtype)
            c = torch.empty(n, n, device=device, dtype=dtype)
            reps = max(3, int(1e13 / (2 * n ** 3))) if device.type == "cuda" else max(2, int(2e10 / (2 * n ** 3)))
            for _ in range(2):
                torch.mm(a, b, out=c)
            sync(device)
            rates = []
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(reps):
                    torch.mm(a, b, out=c)
                sync(device)
                rates.append(2 * n ** 3 * reps / (time.perf_counter() - t) / 1e12)
            best[n] = max(rates)
            del a, b, c
        out[f"{name}_tflops"] = max(best.values())
        out[f"{name}_by_size"] = {str(k): v for k, v in best.items()}
    set_precision("fp32")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--write-model", metavar="DIR", help="write the seeded checkpoint and config.json into DIR")
    ap.add_argument("--shape", default="vit_small", choices=sorted(SHAPES))
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--format", default="pt", choices=["pt", "safetensors"])
    ap.add_argument("--model", help="a folder written by --write-model")
    ap.add_argument("--images", help="a text file listing images, one path a line")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=2, help="untimed batches first (of the first images)")
    ap.add_argument("--resident", action="store_true", help="decode every image first and keep them on the device")
    ap.add_argument("--workers", type=int, default=-1, help="DataLoader workers (-1: 8 on CUDA, 0 on the CPU)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--sigma", type=float, default=8.0, help="Gaussian pixel noise, 0..255 units")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    ap.add_argument("--sgemm", action="store_true", help="measure the matrix-product peaks instead")
    ap.add_argument("--sgemm-sizes", type=int, nargs="*")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.write_model:
        result = write_model(args.write_model, args.shape, args.depth, args.format)
    elif args.sgemm:
        result = sgemm(args)
    elif args.model and args.images:
        result = analyse_dataset(args)
    else:
        ap.error("give --write-model DIR, --sgemm, or --model DIR --images LIST")
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
