#!/usr/bin/python3
"""`make bench-builds`: the CPU forward of two builds of attnscope side by side in one run, by default Debian's
LibTorch 1.13 (build/release) against LibTorch 2.x (build/libtorch2-headless), with the target of issue 33 item 5:
the 2.x build within 5% of the 1.13 build (docs/performance.md, "LibTorch 2.x").

    tests/benchmarks/compare_builds.py [BASE_BUILD] [OTHER_BUILD] [--rounds N] [--quick] [--json OUT.json]

The two builds alternate in rounds, each round running engine_bench's ViT-S/16 forward and one-image analysis as
single-iteration repetitions, so that a slow minute of the host (this machine's wall times vary by 20% from minute to
minute) touches both builds alike. Each row gives the lower quartile of all a build's samples (the machine's own speed,
less the host's bursts) and the median; the ratio is the median over rounds of the rounds' lower-quartile ratios.
Native and as an AVX2 CPU runs it (oneDNN, OpenBLAS and MKL held to AVX2 by their own switches). Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from run_bench import AVX2, env_for, kernels, run

BENCHES = {"BM_Forward/1/0/real_time": "ViT-S/16 forward, logits only",
           "BM_Forward/1/1/real_time": "ViT-S/16 forward, recording every tap",
           "BM_FullAnalysis/1/real_time": "ViT-S/16 full one-image analysis"}
FILTER = "BM_Forward/1/0/|BM_Forward/1/1/|BM_FullAnalysis/1/"


def samples(build, threads, extra, repetitions):
    """{benchmark: [ms per iteration]} and the run's context (its kernels)."""
    exe = os.path.join(build, "tests", "benchmarks", "engine_bench")
    cmd = [exe, "--benchmark_format=json", f"--benchmark_filter={FILTER}", f"--benchmark_repetitions={repetitions}",
           "--benchmark_min_time=0.001"]  # one iteration per repetition: a sample per forward
    data = json.loads(run(cmd, env_for(threads, **extra)))
    out = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "iteration" and b["run_name"] in BENCHES:
            assert b["time_unit"] == "ms", b["time_unit"]
            out.setdefault(b["run_name"], []).append(b["real_time"])
    return out, data.get("context", {})


def quartile(v):
    v = sorted(v)
    return v[len(v) // 4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base", nargs="?", default="build/release")
    ap.add_argument("other", nargs="?", default="build/libtorch2-headless")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repetitions", type=int, default=12)
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 6 samples (a smoke run, not the record)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.repetitions = 2, 6
    builds = (args.base, args.other)
    modes = {"native": {}, "avx2": AVX2}
    res = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "load": os.getloadavg(), "builds": builds, "rounds": []}
    context = {}
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds} ...", file=sys.stderr)
        rnd = {}
        for mode, extra in modes.items():
            for t in (1, 2):
                for b in builds:
                    s, ctx = samples(b, t, extra, args.repetitions)
                    context[(b, mode)] = ctx
                    rnd[f"{b}|{mode}|{t}"] = s
        res["rounds"].append(rnd)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)

    print(f"Two builds' CPU forward, {res['when']}, {args.rounds} rounds of {args.repetitions} samples each, load"
          f" {res['load'][0]:.2f}; ms, lower quartile (median) of every sample; ratio = {args.other} / {args.base},"
          " the median of the rounds' lower-quartile ratios")
    for b in builds:
        for mode in modes:
            print(f"kernels of {b} ({mode}): {kernels(context[(b, mode)])}")
    print()
    print(f"| measurement | {args.base} | {args.other} | ratio | target |")
    print("|---|---:|---:|---:|---|")
    met_all = True
    for mode in modes:
        for t in (1, 2):
            for name, label in BENCHES.items():
                cell, per_round = [], []
                for b in builds:
                    every = [x for rnd in res["rounds"] for x in rnd[f"{b}|{mode}|{t}"][name]]
                    cell.append(f"{quartile(every):.1f} ({statistics.median(every):.1f})")
                for rnd in res["rounds"]:
                    a, o = (quartile(rnd[f"{b}|{mode}|{t}"][name]) for b in builds)
                    per_round.append(o / a)
                ratio = statistics.median(per_round)
                target = ""
                if mode == "native" and name == "BM_Forward/1/0/real_time":
                    met = ratio <= 1.05
                    met_all &= met
                    target = f"<= 1.05: {'met' if met else 'NOT met'}"
                print(f"| {label}, {t} thr{', AVX2' if mode == 'avx2' else ''} | {cell[0]} | {cell[1]} | {ratio:.3f} |"
                      f" {target} |")
    return 0 if met_all else 1


if __name__ == "__main__":
    sys.exit(main())
