#!/usr/bin/python3
"""How far one analyze output folder is from another, analysis by analysis: for --precision tf32|bf16 against fp32
(docs/performance.md, Precision), or a GPU run against a CPU run.

    tests/benchmarks/compare_outputs.py REFERENCE_DIR OTHER_DIR [--markdown LABEL]

For every CSV both folders hold and every numeric column of it: the largest absolute difference, the largest
difference relative to the reference value (over values with |reference| >= 1e-3 of the column's largest), and the
column's largest |reference|, so that an absolute difference can be read against the scale. Standard library only.
"""
import argparse
import csv
import math
import os
import sys

COLUMNS = {  # the statistic of each CSV a reader looks at; the rest are sd, n, ...
    "token_similarity.csv": ["mean"],
    "attention_similarity.csv": ["successive_cos", "head_redundancy"],
    "head_centres.csv": ["centre_dy", "centre_dx", "peak_dy", "peak_dx", "mean_distance_px", "bandwidth", "prefix_mass", "window_mass"],
    "snr.csv": ["snr_db_mean"],
    "snr_diagnostics.csv": ["alpha", "beta", "gamma", "gain", "bound", "condition_holds", "sensitivity"],
}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        return float(text)
    except ValueError:
        return math.nan


def compare(ref_dir, other_dir):
    out = []
    for name in sorted(os.listdir(ref_dir)):
        base = name.split("_")[0] if name.startswith("snr") and name not in COLUMNS else None
        key = name if name in COLUMNS else ("snr_diagnostics.csv" if name.startswith("snr_diagnostics") else "snr.csv" if base else None)
        if key is None or not os.path.exists(os.path.join(other_dir, name)):
            continue
        a, b = rows(os.path.join(ref_dir, name)), rows(os.path.join(other_dir, name))
        if len(a) != len(b):
            sys.exit(f"{name}: {len(a)} rows against {len(b)}")
        for column in COLUMNS[key]:
            ref = [number(r[column]) for r in a]
            oth = [number(r[column]) for r in b]
            pairs = [(x, y) for x, y in zip(ref, oth) if math.isfinite(x) and math.isfinite(y)]
            if not pairs:
                continue
            scale = max(abs(x) for x, _ in pairs)
            absolute = max(abs(y - x) for x, y in pairs)
            relative = max((abs(y - x) / abs(x) for x, y in pairs if abs(x) >= 1e-3 * scale and x != 0), default=0.0)
            out.append((name, column, absolute, relative, scale))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--markdown", metavar="LABEL", help="print markdown table rows, first cell LABEL")
    args = ap.parse_args()
    result = compare(args.reference, args.other)
    if not result:
        sys.exit("no CSV in common")
    for name, column, absolute, relative, scale in result:
        if args.markdown:
            print(f"| {args.markdown} | {name.removesuffix('.csv')} | {column} | {absolute:.2g} | {relative:.2g} | {scale:.3g} |")
        else:
            print(f"{name:36s} {column:18s} max |d| {absolute:9.2g}  max rel {relative:9.2g}  (largest |value| {scale:.3g})")


if __name__ == "__main__":
    main()
