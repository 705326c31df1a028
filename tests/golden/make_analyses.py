#!/usr/bin/env python3
"""Reference outputs of the analyses (docs/analyses.md sections 1-5), for the C++ tests of attnscope.

A plain PyTorch, float64 forward of a pre-norm timm-named ViT (written from the formulas, independent of the
C++ engine and of torchvision/timm), recording per block l = 1..L the attention A_l [H, N, N], the attention
branch U_l [N, D] (output of attn.proj), the residual sum R_l = X_{l-1} + U_l, and the block outputs X_l
(l = 0..L, X_0 = tokens after the position embedding). Its logits, attention and block outputs are first
checked against the fixture's torchvision outputs (relative 1e-5). Then, per case, it writes to
tests/golden/analyses/<case>/:

  token_similarity.csv      section 1: cosine similarity of the tokens, taps block/attn/residual, all/patches
  cosine_matrix_L{L}.npy    section 1: the [N, N] cosine matrix of X_L (all tokens)
  attention_similarity.csv  section 2: successive-layer cosine of head-mean maps, head redundancy
  attention_maps.json       section 2: a few attention maps (patch part [gh][gw], prefix mass, renormalised)
  rollout.npy               section 2: attention rollout [N, N]
  head_centres.csv          section 3: centre, peak, mean distance, bandwidth, prefix/window mass, contours
  offset_maps.npy           section 3: [L, H, 2R+1, 2R+1] offset maps (R = 3), float64
  snr.csv, snr_diagnostics.csv, input.npy, input_noisy.npy   section 4 (Gaussian pixel noise, sigma 8/255)
  decomposition_{tt,tp,pt,pp,s1}.npy   section 5, layer 1, query rows listed in case.json
  case.json                 what was computed, with every parameter

and, when the CIFAR-10 test images are available (../shared/data/cifar10-test-1000), the dataset-mean case
cifar200_tv_grid16/ (token_similarity.csv with mean/sd/n, head_centres.csv, offset_maps.npy, images.csv).

Run: /usr/bin/python3 tests/golden/make_analyses.py [--cifar DIR] [--out DIR]
(Debian python3-torch + numpy + PIL; about 12 s.) The output is byte-identical from run to run.
See tests/golden/README.md, section "Analyses".
"""
import argparse
import glob
import hashlib
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
OUT = os.path.join(HERE, "analyses")
CIFAR_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "cifar10-test-1000"))

EPS = 1e-6              # LayerNorm eps of the torchvision/timm ViT
R_WINDOW = 3            # offset-map radius
SHARES = (0.5, 0.9)     # contour mass shares
NOISE_SIGMA = 8.0       # Gaussian pixel noise, 0..255 units
NOISE_SEED = 0
N_CIFAR = 200
NAN = float("nan")


# --------------------------------------------------------------------------
# I/O
# --------------------------------------------------------------------------

# The fixtures' weights, read as make_variants.py reads them (one reader for both reference scripts).
from make_variants import read_safetensors  # noqa: E402


def fmt(v):
    """A CSV field: ints as ints, floats with repr precision (shortest round-trip), nan as 'nan'."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    if isinstance(v, str):
        return v
    v = float(v)
    if math.isnan(v):
        return "nan"
    return repr(v)


def write_csv(path, header, rows):
    with open(path, "w", newline="\n") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            assert len(r) == len(header)
            f.write(",".join(fmt(v) for v in r) + "\n")


def save_npy(path, a, dtype=np.float32):
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    np.save(path, np.ascontiguousarray(a, dtype=dtype))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, allow_nan=False)
        f.write("\n")


def rel_err(a, ref):
    a = torch.as_tensor(np.asarray(a, dtype=np.float64)) if not isinstance(a, torch.Tensor) else a.double()
    ref = torch.as_tensor(np.asarray(ref, dtype=np.float64)) if not isinstance(ref, torch.Tensor) else ref.double()
    assert a.shape == ref.shape, (a.shape, ref.shape)
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-300))


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

class Model:
    def __init__(self, fixture_dir):
        self.dir = fixture_dir
        self.w = read_safetensors(os.path.join(fixture_dir, "model.safetensors"))
        self.meta = json.load(open(os.path.join(fixture_dir, "meta.json")))
        self.cfg = json.load(open(os.path.join(fixture_dir, "config.json")))
        w = self.w
        self.H = self.meta["num_heads"]
        self.L = self.meta["num_layers"]
        self.D = w["pos_embed"].shape[-1]
        self.p = w["patch_embed.proj.weight"].shape[-1]
        self.P = 1  # CLS only (both fixtures)
        assert "cls_token" in w and self.meta["num_prefix_tokens"] == 1
        ih, iw = self.meta["input_size"]
        self.gh, self.gw = ih // self.p, iw // self.p
        self.N = self.P + self.gh * self.gw
        assert w["pos_embed"].shape == (1, self.N, self.D)
        pc = self.cfg["pretrained_cfg"]
        self.mean, self.std = pc["mean"], pc["std"]

    def forward(self, x):
        """x [1, C, H, W] float64 -> dict of float64 tensors (batch dim removed):
        logits [K]; X: [X_0..X_L] [N, D]; A, U, R: lists over l = 1..L; S1 = layer-1 logits [H, N, N]."""
        w, H, D, p = self.w, self.H, self.D, self.p
        d = D // H
        tok = F.conv2d(x, w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=p)
        tok = tok.flatten(2).transpose(1, 2)[0]                                   # [gh*gw, D], row-major
        X = torch.cat([w["cls_token"][0], tok], 0) + w["pos_embed"][0]           # [N, D]
        out = {"X": [X], "A": [], "U": [], "R": []}
        for l in range(self.L):
            b = f"blocks.{l}."
            h = F.layer_norm(X, (D,), w[b + "norm1.weight"], w[b + "norm1.bias"], EPS)
            qkv = h @ w[b + "attn.qkv.weight"].T + w[b + "attn.qkv.bias"]          # [N, 3D], rows q|k|v
            q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(-1, H, d).transpose(0, 1) for i in range(3))
            s = q @ k.transpose(1, 2) / math.sqrt(d)                               # [H, N, N]
            a = torch.softmax(s, -1)
            o = (a @ v).transpose(0, 1).reshape(-1, D)                              # concat heads
            u = o @ w[b + "attn.proj.weight"].T + w[b + "attn.proj.bias"]
            r = X + u
            h2 = F.layer_norm(r, (D,), w[b + "norm2.weight"], w[b + "norm2.bias"], EPS)
            m = F.gelu(h2 @ w[b + "mlp.fc1.weight"].T + w[b + "mlp.fc1.bias"])       # exact (erf) GELU
            X = r + m @ w[b + "mlp.fc2.weight"].T + w[b + "mlp.fc2.bias"]
            if l == 0:
                out["S1"] = s
            out["A"].append(a)
            out["U"].append(u)
            out["R"].append(r)
            out["X"].append(X)
        fin = F.layer_norm(X, (D,), w["norm.weight"], w["norm.bias"], EPS)
        out["logits"] = fin[0] @ w["head.weight"].T + w["head.bias"]
        return out

    def check_against_fixture(self, out):
        """The plain forward must reproduce torchvision's float32 outputs (relative 1e-5)."""
        errs = [rel_err(out["logits"], np.load(os.path.join(self.dir, "logits.npy")))]
        for l in range(1, self.L + 1):
            # tv_grid16 keeps no attention files (1 MB each); its logits and block outputs still pin the forward.
            attn = os.path.join(self.dir, f"attn_L{l}.npy")
            if os.path.exists(attn):
                errs.append(rel_err(out["A"][l - 1], np.load(attn)))
        for l in range(self.L + 1):
            errs.append(rel_err(out["X"][l], np.load(os.path.join(self.dir, f"block_L{l}.npy"))))
        worst = max(errs)
        assert worst < 1e-5, f"{self.dir}: forward disagrees with the fixture: {errs}"
        return worst

    def input_from_u8(self, u8):
        """(px/255 - mean)/std per channel, computed in float32 as make_golden.py does -> [1, C, H, W]."""
        a = u8.astype(np.float32) / np.float32(255.0)
        a = (a - np.asarray(self.mean, dtype=np.float32)) / np.asarray(self.std, dtype=np.float32)
        return np.ascontiguousarray(a.transpose(2, 0, 1)[None].astype(np.float32))


def taps(out, L):
    """(tap name, layer, tensor) in the CSV order: block l=0..L, attn l=1..L, residual l=1..L."""
    res = [("block", l, out["X"][l]) for l in range(L + 1)]
    res += [("attn", l, out["U"][l - 1]) for l in range(1, L + 1)]
    res += [("residual", l, out["R"][l - 1]) for l in range(1, L + 1)]
    return res


# --------------------------------------------------------------------------
# section 1: token similarity
# --------------------------------------------------------------------------

def unit_rows(Z):
    return Z / Z.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def token_cos_sim(Z):
    M = Z.shape[0]
    s = unit_rows(Z).sum(0)
    return float((s @ s - M) / (M * (M - 1)))


def token_similarity_rows(out, m):
    rows = []
    for tap, l, T in taps(out, m.L):
        rows.append((l, tap, "all", token_cos_sim(T)))
        rows.append((l, tap, "patches", token_cos_sim(T[m.P:])))
    return rows


# --------------------------------------------------------------------------
# section 2: attention maps, rollout, layer/head similarity
# --------------------------------------------------------------------------

def cos_flat(a, b):
    a, b = a.reshape(-1), b.reshape(-1)
    return float(a @ b / (a.norm() * b.norm()))


def attention_similarity_rows(out, m):
    rows = []
    means = [a.mean(0) for a in out["A"]]
    for l in range(1, m.L + 1):
        succ = cos_flat(means[l - 1], means[l]) if l < m.L else NAN
        A = out["A"][l - 1]
        pairs = [cos_flat(A[h], A[g]) for h in range(m.H) for g in range(h + 1, m.H)]
        red = float(np.mean(pairs)) if pairs else NAN
        rows.append((l, succ, red))
    return rows


def attention_map(out, m, layer, head, query):
    A = out["A"][layer - 1]
    row = (A.mean(0) if head == -1 else A[head])[query]
    patch = row[m.P:]
    q_patch = None if query < m.P else list(divmod(query - m.P, m.gw))
    return {"layer": layer, "head": head, "query": query, "query_patch_rc": q_patch,
            "prefix_mass": float(row[:m.P].sum()),
            "map": patch.reshape(m.gh, m.gw).tolist(),
            "map_renormalised": (patch / patch.sum()).reshape(m.gh, m.gw).tolist()}


def rollout(out, m):
    Rm = None
    I = torch.eye(m.N, dtype=torch.float64)
    for a in out["A"]:
        ah = 0.5 * a.mean(0) + 0.5 * I
        ah = ah / ah.sum(-1, keepdim=True)
        Rm = ah if Rm is None else ah @ Rm
    return Rm


# --------------------------------------------------------------------------
# section 3: head centres
# --------------------------------------------------------------------------

def grid_pos(gh, gw):
    r, c = torch.meshgrid(torch.arange(gh, dtype=torch.float64), torch.arange(gw, dtype=torch.float64),
                          indexing="ij")
    return torch.stack([r.reshape(-1), c.reshape(-1)], 1)                     # [gh*gw, 2] (row, col)


def offset_map_stats(M):
    """peak (dy, dx), window mass, bandwidth about the map's own centroid, contour levels, and the
    float32-robustness margins (relative gap of the two largest cells; distance of the cumulative sum from
    each contour threshold, relative to the window mass)."""
    R = (M.shape[0] - 1) // 2
    flat = M.reshape(-1)
    i = int(torch.argmax(flat))  # first maximum in row-major order
    for j in range(flat.numel()):  # torch.argmax's tie rule is unspecified: enforce "first"
        if flat[j] == flat[i]:
            i = j
            break
    peak = (i // M.shape[1] - R, i % M.shape[1] - R)
    W = float(flat.sum())
    dy, dx = torch.meshgrid(torch.arange(-R, R + 1, dtype=torch.float64),
                            torch.arange(-R, R + 1, dtype=torch.float64), indexing="ij")
    cy, cx = float((M * dy).sum() / W), float((M * dx).sum() / W)
    bw = math.sqrt(float((M * ((dy - cy) ** 2 + (dx - cx) ** 2)).sum() / W))
    order = sorted(range(flat.numel()), key=lambda j: -float(flat[j]))  # descending, stable
    vals = [float(flat[j]) for j in order]
    cum = np.cumsum(vals)
    levels, margins = [], []
    for share in SHARES:
        k = next(j for j in range(len(cum)) if cum[j] >= share * W)
        levels.append(vals[k])
        lo = cum[k - 1] if k > 0 else 0.0
        margins.append(min(cum[k] - share * W, share * W - lo) / W)
    gap = (vals[0] - vals[1]) / vals[0]
    return peak, W, bw, levels, gap, min(margins)


def head_centres(A_list, m, R=R_WINDOW):
    """Per (layer, head): the per-image quantities of section 3 plus the offset map.
    Returns rows [(layer, head, cdy, cdx, pdy, pdx, dist_px, bw, prefix, window, c50, c90)], maps [L, H, 2R+1, 2R+1],
    and margins [(gap, contour_margin)]."""
    pos = grid_pos(m.gh, m.gw)
    off = pos[None, :, :] - pos[:, None, :]                                    # [q, k, 2] = pos_k - pos_q
    dist = off.norm(dim=-1)
    qr, qc = pos[:, 0].long(), pos[:, 1].long()
    interior = ((qr >= R) & (qr <= m.gh - 1 - R) & (qc >= R) & (qc <= m.gw - 1 - R)).nonzero().reshape(-1)
    rows, maps, margins = [], torch.full((len(A_list), m.H, 2 * R + 1, 2 * R + 1), NAN, dtype=torch.float64), []
    for l, A in enumerate(A_list, 1):
        for h in range(m.H):
            ap = A[h, m.P:, m.P:]
            a = ap / ap.sum(-1, keepdim=True)                                  # a_q(k)
            cen = (a[:, :, None] * off).sum(1).mean(0)                         # (dy, dx)
            dpx = m.p * float((a * dist).sum(1).mean())
            prefix = float(A[h, m.P:, :m.P].sum(-1).mean())
            if interior.numel() > 0:
                M = torch.zeros(2 * R + 1, 2 * R + 1, dtype=torch.float64)
                for q in interior.tolist():
                    r0, c0 = int(qr[q]), int(qc[q])
                    M += a[q].reshape(m.gh, m.gw)[r0 - R:r0 + R + 1, c0 - R:c0 + R + 1]
                M /= interior.numel()
                maps[l - 1, h] = M
                peak, W, bw, (c50, c90), gap, cm = offset_map_stats(M)
                margins.append((gap, cm))
                rows.append((l, h, float(cen[0]), float(cen[1]), peak[0], peak[1], dpx, bw, prefix, W, c50, c90))
            else:
                rows.append((l, h, float(cen[0]), float(cen[1]), NAN, NAN, dpx, NAN, prefix, NAN, NAN, NAN))
    return rows, maps, margins


HEAD_CENTRE_COLS = ["layer", "head", "centre_dy", "centre_dx", "peak_dy", "peak_dx", "mean_distance_px",
                    "bandwidth", "prefix_mass", "window_mass", "contour50", "contour90"]


# --------------------------------------------------------------------------
# section 4: SNR
# --------------------------------------------------------------------------

def noisy_input(x_np, std, sigma, seed):
    """x~_c = x_c + (sigma/255/std_c) * n, n ~ N(0, 1) from numpy.random.RandomState(seed).standard_normal
    with the input's shape [1, C, H, W] (C order), in float64, then rounded to float32 (the saved file is
    exactly what the reference consumes)."""
    n = np.random.RandomState(seed).standard_normal(x_np.shape)
    scale = (sigma / 255.0 / np.asarray(std, dtype=np.float64)).reshape(1, -1, 1, 1)
    return (x_np.astype(np.float64) + scale * n).astype(np.float32)


def centred(T):
    return T - T.mean(0, keepdim=True)


def snr_rows(clean, noisy, m):
    rows = []
    tc, tn = taps(clean, m.L), taps(noisy, m.L)
    for (tap, l, T), (_, _, Tn) in zip(tc, tn):
        rows.append((l, tap, 20.0 * math.log10(float(centred(T).norm() / (Tn - T).norm()))))
    diag = []
    e0 = float((noisy["X"][0] - clean["X"][0]).norm())
    for l in range(1, m.L + 1):
        u, uh = centred(clean["X"][l - 1]), centred(clean["U"][l - 1])
        eta = noisy["X"][l - 1] - clean["X"][l - 1]
        etah = noisy["U"][l - 1] - clean["U"][l - 1]
        nu, nuh, ne, neh = (float(t.norm()) for t in (u, uh, eta, etah))
        alpha, beta, gamma = nuh / nu, float((u * uh).sum()) / (nu * nuh), neh / ne
        gain = (float((u + uh).norm()) / float((eta + etah).norm())) / (nu / ne)
        bound = math.sqrt(1 + 2 * alpha * beta + alpha ** 2) / (1 + gamma)
        assert gain >= bound - 1e-12, f"Proposition 3.1 violated at layer {l}: gain {gain} < bound {bound}"
        holds = 1 if min(alpha, beta) > gamma else 0
        sens = float((noisy["X"][l] - clean["X"][l]).norm()) / e0
        diag.append((l, alpha, beta, gamma, gain, bound, holds, sens))
    return rows, diag


# --------------------------------------------------------------------------
# section 5: logit decomposition (layer 1)
# --------------------------------------------------------------------------

def decomposition(out, m):
    w, H, D = m.w, m.H, m.D
    d = D // H
    X0 = out["X"][0]
    Pe = w["pos_embed"][0]
    E = X0 - Pe
    s = torch.sqrt(X0.var(-1, unbiased=False, keepdim=True) + EPS)               # LayerNorm's denominator
    g, b = w["blocks.0.norm1.weight"], w["blocks.0.norm1.bias"]
    eh = g * (E - E.mean(-1, keepdim=True)) / s
    ph = g * (Pe - Pe.mean(-1, keepdim=True)) / s + b
    Wqkv, bqkv = w["blocks.0.attn.qkv.weight"], w["blocks.0.attn.qkv.bias"]
    WQ, WK, bQ, bK = Wqkv[:D], Wqkv[D:2 * D], bqkv[:D], bqkv[D:2 * D]

    def heads(t):
        return t.reshape(-1, H, d).transpose(0, 1)                                 # [H, N, d]
    qe, qp = heads(eh @ WQ.T), heads(ph @ WQ.T + bQ)
    ke, kp = heads(eh @ WK.T), heads(ph @ WK.T + bK)
    sc = 1.0 / math.sqrt(d)
    terms = {"tt": qe @ ke.transpose(1, 2) * sc, "tp": qe @ kp.transpose(1, 2) * sc,
             "pt": qp @ ke.transpose(1, 2) * sc, "pp": qp @ kp.transpose(1, 2) * sc}
    S1 = out["S1"]
    err = float((terms["tt"] + terms["tp"] + terms["pt"] + terms["pp"] - S1).abs().max())
    assert err <= 1e-10 * max(1.0, float(S1.abs().max())), f"decomposition does not add up to S_1: {err}"
    return terms, S1, err


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------

def check_margins(case, margins):
    if not margins:
        return None, None
    gap = min(g for g, _ in margins)
    cm = min(c for _, c in margins)
    # a float32 engine (relative error ~1e-6) must pick the same peak cell and contour cell
    assert gap > 1e-4 and cm > 1e-4, f"{case}: peak/contour too close to a tie (gap {gap:.2e}, contour {cm:.2e})"
    return gap, cm


def image_case(root, case, fixture, map_triples, decomp_queries):
    m = Model(os.path.join(FIXTURES, fixture))
    d = os.path.join(root, case)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    x_np = np.load(os.path.join(m.dir, "input.npy"))
    xn_np = noisy_input(x_np, m.std, NOISE_SIGMA, NOISE_SEED)
    np.save(os.path.join(d, "input.npy"), x_np)
    np.save(os.path.join(d, "input_noisy.npy"), xn_np)
    clean = m.forward(torch.from_numpy(x_np).double())
    noisy = m.forward(torch.from_numpy(xn_np).double())
    fix_err = m.check_against_fixture(clean)

    # 1
    ts = token_similarity_rows(clean, m)
    write_csv(os.path.join(d, "token_similarity.csv"), ["layer", "tap", "tokens", "value"], ts)
    save_npy(os.path.join(d, f"cosine_matrix_L{m.L}.npy"), unit_rows(clean["X"][m.L]) @ unit_rows(clean["X"][m.L]).T)
    # 2
    write_csv(os.path.join(d, "attention_similarity.csv"), ["layer", "successive_cos", "head_redundancy"],
              attention_similarity_rows(clean, m))
    maps = [attention_map(clean, m, *t) for t in map_triples]
    with open(os.path.join(d, "attention_maps.json"), "w") as f:  # one map entry per line
        f.write(f'{{"grid":[{m.gh},{m.gw}],"num_prefix_tokens":{m.P},"maps":[\n')
        f.write(",\n".join(json.dumps(mp, separators=(",", ":"), allow_nan=False) for mp in maps))
        f.write("\n]}\n")
    assert json.load(open(os.path.join(d, "attention_maps.json")))["maps"] == maps
    save_npy(os.path.join(d, "rollout.npy"), rollout(clean, m))
    # 3
    hc, omaps, margins = head_centres(clean["A"], m)
    write_csv(os.path.join(d, "head_centres.csv"), HEAD_CENTRE_COLS, hc)
    save_npy(os.path.join(d, "offset_maps.npy"), omaps, np.float64)
    gap, cm = check_margins(case, margins)
    # 4
    snr, diag = snr_rows(clean, noisy, m)
    write_csv(os.path.join(d, "snr.csv"), ["layer", "tap", "snr_db"], snr)
    write_csv(os.path.join(d, "snr_diagnostics.csv"),
              ["layer", "alpha", "beta", "gamma", "gain", "bound", "condition_holds", "sensitivity"], diag)
    # 5
    terms, S1, derr = decomposition(clean, m)
    qidx = torch.tensor(decomp_queries, dtype=torch.long)
    for k, v in terms.items():
        save_npy(os.path.join(d, f"decomposition_{k}.npy"), v[:, qidx, :])
    save_npy(os.path.join(d, "decomposition_s1.npy"), S1[:, qidx, :])

    write_json(os.path.join(d, "case.json"), {
        "case": case, "fixture": f"tests/golden/fixtures/{fixture}", "num_layers": m.L, "num_heads": m.H,
        "width": m.D, "patch_size": m.p, "grid": [m.gh, m.gw], "num_prefix_tokens": m.P, "num_tokens": m.N,
        "layernorm_eps": EPS,
        "input": "input.npy = the fixture's input.npy (float32 [1, C, H, W])",
        "perturbation": {"kind": "gaussian_pixel_noise", "sigma_255": NOISE_SIGMA, "seed": NOISE_SEED,
                         "rule": "x~_c = x_c + (sigma/255/std_c) * n, n = numpy.random.RandomState(seed)"
                                 ".standard_normal(input.shape), not clipped, rounded to float32",
                         "std": list(m.std)},
        "offset_map_radius": R_WINDOW, "contour_shares": list(SHARES),
        "attention_map_triples": [list(t) for t in map_triples],
        "decomposition_layer": 1,
        "decomposition_queries": list(decomp_queries),
        "decomposition_shape": [m.H, len(decomp_queries), m.N],
        "decomposition_max_abs_sum_error": derr,
        "reference_vs_fixture_max_rel": fix_err,
        "float32_robustness": {"min_peak_gap_rel": gap, "min_contour_margin_rel": cm},
        "torch": torch.__version__, "numpy": np.__version__,
    })

    blk = {(r[0], r[1], r[2]): r[3] for r in ts}
    print(f"{case}: N={m.N} L={m.L} H={m.H}  ref-vs-fixture {fix_err:.1e}  decomposition err {derr:.1e}")
    print("  token cos sim block/all: " + " ".join(f"L{l}={blk[(l, 'block', 'all')]:.3f}" for l in range(m.L + 1)))
    print("  SNR dB block: " + " ".join(f"L{r[0]}={r[2]:.2f}" for r in snr if r[1] == "block")
          + "  | K_l: " + " ".join(f"{r[7]:.2f}" for r in diag)
          + "  | min(a,b)>g: " + "".join(str(r[6]) for r in diag))
    for r in hc:
        if r[0] == 1:
            print(f"  L1 h{r[1]}: centre ({r[2]:+.2f},{r[3]:+.2f}) peak ({fmt(r[4])},{fmt(r[5])}) "
                  f"dist {r[6]:.2f}px bw {r[7]:.2f} prefix {r[8]:.3f} window {r[9]:.3f}")
    if gap is not None:
        print(f"  float32 robustness: min peak gap {gap:.1e}, min contour margin {cm:.1e} (relative)")


def cifar_case(root, case, fixture, data_dir):
    m = Model(os.path.join(FIXTURES, fixture))
    paths = sorted(glob.glob(os.path.join(data_dir, "*", "*.jpg")))[:N_CIFAR]
    assert len(paths) == N_CIFAR, f"{data_dir}: {len(paths)} images"
    d = os.path.join(root, case)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    ts_all, hc_all, maps_all, img_rows, img_gaps = [], [], [], [], []
    for i, pth in enumerate(paths):
        im = Image.open(pth)
        im = im.convert("RGB")
        u8 = np.asarray(im, dtype=np.uint8)
        assert u8.shape == (32, 32, 3), (pth, u8.shape)
        rel = os.path.relpath(pth, data_dir).replace(os.sep, "/")
        img_rows.append((i, rel, int(u8.astype(np.int64).sum()), hashlib.md5(u8.tobytes()).hexdigest()))
        x = torch.from_numpy(m.input_from_u8(u8)).double()
        out = m.forward(x)
        ts_all.append([r[3] for r in token_similarity_rows(out, m)])
        hc, omaps, mg = head_centres(out["A"], m)
        img_gaps.append(min(g for g, _ in mg))
        hc_all.append([list(r[2:10]) for r in hc])
        maps_all.append(omaps)
    keys = [r[:3] for r in token_similarity_rows(out, m)]
    ts = np.asarray(ts_all)                                                      # [n, rows]
    n = ts.shape[0]
    rows = [(k[0], k[1], k[2], float(ts[:, j].mean()), float(ts[:, j].std(ddof=1)), n) for j, k in enumerate(keys)]
    write_csv(os.path.join(d, "token_similarity.csv"), ["layer", "tap", "tokens", "mean", "sd", "n"], rows)
    hcv = np.asarray(hc_all).mean(0)                                             # [L*H, 8]
    mean_maps = torch.stack(maps_all).mean(0)                                    # [L, H, 2R+1, 2R+1]
    rows, margins = [], []
    for j, (l, h) in enumerate([(l, h) for l in range(1, m.L + 1) for h in range(m.H)]):
        M = mean_maps[l - 1, h]
        _, _, _, (c50, c90), gap, cm = offset_map_stats(M)
        margins.append((1.0, cm))  # the peak columns are per-image means, no argmax on the mean map
        rows.append((l, h) + tuple(float(v) for v in hcv[j]) + (c50, c90))
    write_csv(os.path.join(d, "head_centres.csv"), HEAD_CENTRE_COLS, rows)
    save_npy(os.path.join(d, "offset_maps.npy"), mean_maps, np.float64)
    _, cm = check_margins(case, margins)
    write_csv(os.path.join(d, "images.csv"), ["index", "path", "pixel_sum", "md5_rgb"], img_rows)
    write_json(os.path.join(d, "case.json"), {
        "case": case, "fixture": f"tests/golden/fixtures/{fixture}", "num_images": n,
        "images": "sorted(glob('<cifar10-test-1000>/*/*.jpg'))[:200] (Python string sort of the full paths; "
                  "= airplane/0000..0099.jpg then automobile/0000..0099.jpg), listed in images.csv",
        "decode": "PIL Image.open(path).convert('RGB'), uint8 [32, 32, 3]; images.csv gives the sum of the "
                  "decoded bytes and the md5 of the raw RGB bytes (row-major, RGB interleaved) per image",
        "preprocess": "(px/255 - mean)/std per channel in float32 with the fixture's ImageNet mean/std, no resize",
        "token_similarity": "mean and sample sd (ddof 1) over the images of each per-image value",
        "head_centres": "centre_dy..window_mass: mean over images of the per-image values (peak_dy/peak_dx "
                        "are means of per-image integer peaks); contour50/contour90 from the mean offset map",
        "offset_maps": "mean over images of the per-image offset maps, float64 [L, H, 2R+1, 2R+1]",
        "offset_map_radius": R_WINDOW, "contour_shares": list(SHARES),
        "float32_robustness": {"min_contour_margin_rel": cm, "min_per_image_peak_gap_rel": min(img_gaps)},
        "torch": torch.__version__, "numpy": np.__version__,
    })
    print(f"{case}: {n} images from {data_dir} ({img_rows[0][1]} .. {img_rows[-1][1]})")
    blk = {(r[0], r[1], r[2]): (r[3], r[4]) for r in
           [(k[0], k[1], k[2], float(ts[:, j].mean()), float(ts[:, j].std(ddof=1))) for j, k in enumerate(keys)]}
    print("  token cos sim block/all mean(sd): "
          + " ".join(f"L{l}={blk[(l, 'block', 'all')][0]:.3f}({blk[(l, 'block', 'all')][1]:.3f})"
                     for l in range(m.L + 1)))
    for r in rows[:m.H]:
        print(f"  L1 h{r[1]}: centre ({r[2]:+.2f},{r[3]:+.2f}) peak ({r[4]:+.2f},{r[5]:+.2f}) "
              f"dist {r[6]:.2f}px prefix {r[8]:.3f} window {r[9]:.3f} c50 {r[10]:.4f} c90 {r[11]:.4f}")
    print(f"  float32 robustness: min contour margin {cm:.1e}, min per-image peak gap {min(img_gaps):.1e} "
          "(relative)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--cifar", default=CIFAR_DIR, help="cifar10-test-1000 directory (default %(default)s)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # (layer, head or -1 for the head mean, query token): CLS, a corner patch (0,0), a central patch
    image_case(args.out, "tv_grid16_image", "tv_grid16",
               [(1, -1, 0), (1, 0, 0), (1, 0, 1), (1, 0, 137), (1, 1, 137), (1, 2, 137), (1, 3, 137),
                (2, -1, 137), (3, 2, 1), (3, -1, 0)],
               [0, 1, 16, 120, 137, 241, 256])
    image_case(args.out, "tv_timm_image", "tv_timm",
               [(1, -1, 0), (1, 0, 0), (1, 1, 1), (2, 2, 11), (2, -1, 11)],
               list(range(17)))
    if os.path.isdir(args.cifar):
        cifar_case(args.out, "cifar200_tv_grid16", "tv_grid16", args.cifar)
    else:
        print(f"SKIP cifar200_tv_grid16: {args.cifar} not found (the committed files are kept)")
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    print(f"done: {args.out} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    sys.exit(main())
