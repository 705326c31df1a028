#!/usr/bin/env python3
"""The tables of docs/papers.md, from the CSVs that scripts/reproduce-papers.sh had attnscope-cli write.

    scripts/papers_tables.py RUNS_DIR > tables.md

RUNS_DIR holds one folder per analyze run (neutreno, neutreno-off, boost, bilateral, depth, quadratic), each with
figures/*.csv (every model of the run, by label) and, for the quadratic run, info.json (attnscope-cli info --json).
Standard library only; every number printed is read from those files.
"""
import csv
import json
import math
import os
import sys


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def by_label(path, **match):
    """{label: {layer: row}} for the rows whose columns equal `match`."""
    out = {}
    for r in rows(path):
        if all(r[k] == v for k, v in match.items()):
            out.setdefault(r["label"], {})[int(r["layer"])] = r
    return out


def fmt(x, digits=3):
    return f"{float(x):.{digits}f}"


def table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(lines)


def layer_table(curves, column, ci=None, digits=3):
    """One row per layer, one column per (title, {layer: row}); 'mean ± ci95' where ci is a column name."""
    layers = sorted({l for _, c in curves for l in c})
    body = []
    for l in layers:
        cells = [str(l)]
        for _, c in curves:
            if l not in c:
                cells.append("")
                continue
            cell = fmt(c[l][column], digits)
            if ci:
                cell += " ± " + fmt(c[l][ci], digits)
            cells.append(cell)
        body.append(cells)
    return table(["layer"] + [t for t, _ in curves], body)


def main(root):
    out = []
    sim = lambda run: by_label(os.path.join(root, run, "figures", "token_similarity.csv"), tap="block", tokens="all")
    neutreno, off, boost, bilateral, depth = (sim(r) for r in ("neutreno", "neutreno-off", "boost", "bilateral", "depth"))
    n = next(iter(neutreno["fmnist-vit"].values()))["n"]
    out.append(f"<!-- scripts/reproduce-papers.sh: {n} Fashion-MNIST test images -->\n")

    out.append("### Token cosine similarity of the block outputs X_l (all tokens), mean ± 95% interval over "
               f"{n} images\n")
    out.append(layer_table([
        ("fmnist-vit", neutreno["fmnist-vit"]),
        ("fmnist-neutreno (λ 0.6)", neutreno["fmnist-neutreno"]),
        ("fmnist-neutreno, λ 0 at inference", off["fmnist-neutreno (NeuTRENO 0)"]),
        ("fmnist-vit, λ 0.6 at inference", neutreno["fmnist-vit (NeuTRENO 0.6)"]),
        ("fmnist-boost (t 0.3)", boost["fmnist-boost"]),
        ("fmnist-bilateral", bilateral["fmnist-bilateral"]),
        ("fmnist-vit-d4", depth["fmnist-vit-d4"]),
    ], "mean", "ci95"))
    out.append("")

    for noise, title in (("gaussian:sigma=8", "Gaussian noise, σ = 8/255"), ("fgsm:eps=1", "FGSM, ε = 1/255")):
        snr = lambda run: by_label(os.path.join(root, run, "figures", "snr.csv"), tap="block", perturbation=noise)
        diag = lambda run: by_label(os.path.join(root, run, "figures", "snr_diagnostics.csv"), perturbation=noise)
        b, nt, bl = snr("boost"), snr("neutreno"), snr("bilateral")
        out.append(f"### SNR of the block outputs X_l in dB ({title}), mean ± 95% interval\n")
        out.append(layer_table([("fmnist-vit", b["fmnist-vit"]), ("fmnist-boost", b["fmnist-boost"]),
                                ("fmnist-neutreno", nt["fmnist-neutreno"]), ("fmnist-bilateral", bl["fmnist-bilateral"])],
                               "snr_db_mean", "ci95", 2))
        out.append("")
        db, dn, dl = diag("boost"), diag("neutreno"), diag("bilateral")
        out.append(f"### Sensitivity K_l = ‖ΔX_l‖ / ‖ΔX_0‖ ({title})\n")
        out.append(layer_table([("fmnist-vit", db["fmnist-vit"]), ("fmnist-boost", db["fmnist-boost"]),
                                ("fmnist-neutreno", dn["fmnist-neutreno"]), ("fmnist-bilateral", dl["fmnist-bilateral"])],
                               "sensitivity", None, 3))
        out.append("")

    att = lambda run: by_label(os.path.join(root, run, "figures", "attention_similarity.csv"))
    an, ab = att("neutreno"), att("bilateral")
    out.append("### Attention similarity: successive layers (cos(A_l, A_l+1), at l) and heads (mean pairwise cosine)\n")
    body = []
    for l in sorted(an["fmnist-vit"]):
        body.append([l, fmt(an["fmnist-vit"][l]["successive_cos"]), fmt(an["fmnist-neutreno"][l]["successive_cos"]),
                     fmt(ab["fmnist-vit"][l]["head_redundancy"]), fmt(ab["fmnist-bilateral"][l]["head_redundancy"])])
    out.append(table(["layer", "successive, fmnist-vit", "successive, fmnist-neutreno", "heads, fmnist-vit",
                      "heads, fmnist-bilateral"], body))
    out.append("")

    # Cordonnier et al.: each quadratic head against its learned centre and sharpness (attnscope-cli info).
    info = json.load(open(os.path.join(root, "quadratic", "info.json")))
    centres = {(int(r["layer"]), int(r["head"])): r for r in rows(os.path.join(root, "quadratic", "head_centres.csv"))}
    kernels = {}
    for r in rows(os.path.join(root, "quadratic", "figures", "head_kernels.csv")):
        kernels.setdefault((int(r["layer"]), int(r["head"])), []).append((int(r["dy"]), int(r["dx"]), float(r["weight"])))
    out.append("### fmnist-quadratic: each head's learned centre Δ_h and sharpness α_h against what the head-centre "
               "analysis measures\n")
    body = []
    for l, heads in enumerate(info["quadratic_heads"], start=1):
        for h, q in enumerate(heads):
            c, k = centres[(l, h)], kernels[(l, h)]
            mass = sum(w for _, _, w in k)
            cy, cx = sum(w * dy for dy, _, w in k) / mass, sum(w * dx for _, dx, w in k) / mass
            nearest = (round(q["dy"]), round(q["dx"]))
            peak = (round(float(c["peak_dy"])), round(float(c["peak_dx"])))
            body.append([l, h, f"({fmt(q['dy'], 2)}, {fmt(q['dx'], 2)})", fmt(q["alpha"], 2),
                         f"({peak[0]}, {peak[1]})" + ("" if peak == nearest else f" ≠ ({nearest[0]}, {nearest[1]})"),
                         f"({fmt(cy, 2)}, {fmt(cx, 2)})", fmt(c["bandwidth"], 2), fmt(1 / math.sqrt(q["alpha"]), 2),
                         fmt(float(c["mean_distance_px"]), 1)])
    out.append(table(["layer", "head", "learned Δ (dy, dx)", "α", "measured peak", "kernel centroid",
                      "bandwidth", "1/√α", "mean distance (px)"], body))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
