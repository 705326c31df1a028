"""`make bench`, the whole process (docs/performance.md, "Whole process"): what a user waits for, from the command's
start to its exit. `attnscope-cli analyze` (the default analyses, figures included) on 1, 16 and 200 ViT-S/16 images
against peer_process.py doing the same analyses on the same model file and images, in the same run, the two sides
alternating round by round. Only the standard library is used here; the peer script makes the model and images.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peer_process.py")


def wall(cmd, env):
    """Seconds from start to exit of `cmd`, which must succeed."""
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=3600)
    seconds = time.perf_counter() - t
    if out.returncode != 0:
        sys.exit(f"whole_process: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return seconds


def measure(build, quick, env_for, peer_threads):
    """The rounds' times in seconds: {"n": {"ours": [...], "ours_no_figures": [...], "peer": [...]}, ...}."""
    cli = os.path.join(build, "app", "attnscope-cli")
    work = tempfile.mkdtemp(prefix="attnscope-whole-")
    model, description, images = os.path.join(work, "vit_s16.pth"), os.path.join(work, "vit_s16.json"), os.path.join(work, "images")
    py_env = env_for(peer_threads, GOMP_SPINCOUNT="0", OPENBLAS_NUM_THREADS=str(peer_threads))
    counts = (1, 16) if quick else (1, 16, 200)
    subprocess.run([sys.executable, PEER, "--make-model", model], env=py_env, check=True)
    subprocess.run([sys.executable, PEER, "--make-images", images, "--count", str(max(counts))], env=py_env, check=True)
    with open(description, "w") as f:
        f.write('{"attnscope_description": 1, "architecture": {"num_heads": 6}}\n')
    files = sorted(os.path.join(images, n) for n in os.listdir(images))
    # The hash cache of the model's sha256 in a folder of this run: the first analyze fills it, as a user's first run
    # of a model does; the rounds then find it, as every later run does. The cold run is reported on its own.
    env = env_for(2, XDG_CACHE_HOME=os.path.join(work, "cache"))
    res = {"peer_threads": peer_threads}
    for n in counts:
        listing = os.path.join(work, f"images-{n}.txt")
        with open(listing, "w") as f:
            f.write("".join(p + "\n" for p in files[:n]))
        ours = lambda out, *extra: [cli, "analyze", "--model", model, "--description", description, "--images", listing,
                                    "--out", os.path.join(work, out), "--fresh", *extra]
        peer = [sys.executable, PEER, "--model", model, "--images", listing, "--out", os.path.join(work, "peer"),
                "--threads", str(peer_threads)]
        r = {"ours": [], "ours_no_figures": [], "peer": []}
        if n == counts[0]:
            r["ours_cold_hash"] = wall(ours("cold"), env)
        print(f"  whole process, {n} images ...", file=sys.stderr, flush=True)
        for _ in range(1 if n >= 200 or quick else 3):
            r["ours"].append(wall(ours("ours"), env))
            r["ours_no_figures"].append(wall(ours("data", "--formats", "none"), env))
            r["peer"].append(wall(peer, py_env))
        res[str(n)] = r
    # What neither side can avoid: starting the process and loading its libraries.
    res["start"] = {"ours": statistics.median(wall([cli, "--version"], env) for _ in range(5)),
                    "peer": statistics.median(wall([sys.executable, "-c", "import numpy, torch, torchvision, PIL"], py_env)
                                              for _ in range(3))}
    subprocess.run(["rm", "-rf", work])
    return res


def rows(res, row):
    """The table's rows for these measurements (`row` as run_bench.py's)."""
    out = []
    start = res["start"]
    out.append(row("process start: attnscope-cli --version / python3 importing torch, torchvision, numpy, PIL (ms)",
                   1e3 * start["ours"], 1e3 * start["peer"]))
    for key, r in res.items():
        if not key.isdigit():
            continue
        n = int(key)
        ours, peer = statistics.median(r["ours"]), statistics.median(r["peer"])
        target = ">= 3x the peer" if n in (1, 16) else ""
        out.append(row(f"whole process, {n} ViT-S/16 images, figures included (ms; peer {res['peer_threads']} thr,"
                       f" median of {len(r['ours'])})", 1e3 * ours, 1e3 * peer, None, target,
                       peer / ours >= 3 if target else None))
        out.append(row(f"  the same without figures (--formats none)", 1e3 * statistics.median(r["ours_no_figures"]), 1e3 * peer))
        if "ours_cold_hash" in r:
            out.append(row(f"  the first run of a model (its sha256 not cached yet)", 1e3 * r["ours_cold_hash"], 1e3 * peer))
    return out
