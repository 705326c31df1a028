#!/usr/bin/env python3
"""`make bench-gpu`: attnscope-cli against the batched PyTorch peer (gpu_peer.py) on one GPU, in the same run, with
the device's FP32 sgemm peak measured in that run; prints the table of docs/performance.md ("GPU (make bench-gpu)").

    tests/benchmarks/gpu_bench.py BUILD_DIR [--quick] [--device cuda] [--json OUT.json] [--tiny] [--long N]

What it does: writes the peer's seeded ViT-S/16 and ViT-B/16 weights as a timm checkpoint (model.pt + config.json)
that both sides load; writes synthetic PNG images into a temporary folder; measures the sgemm peak (gpu_peer.py
--sgemm); runs the peer and attnscope-cli at each batch on the same image list (images/s, GPU utilisation and memory
from nvidia-smi sampled every 200 ms, host RSS peak, and the largest difference between the two sides' per-layer
mean token similarity as a correctness column), and the peer again with its inputs decoded first and kept on the
device; a long dataset run of attnscope with its host RSS and device memory
sampled over time (growth from the first to the last quarter); then the targets of issues 15 and 33 with met / not met.
Exits non-zero if a run fails. Only the standard library here (the peer needs torch).
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from gpu_bench_images import make_images, write_list
from gpu_bench_results import fmt, growth, max_difference, max_relative_difference, read_head_centres, \
    read_token_similarity

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {"vit_small": (384, 6), "vit_base": (768, 12)}
TARGETS = {"vit_small_ips": 2000, "vit_base_ips": 550, "share": 0.70, "peer_ratio": 1.6, "resident_ratio": 1.5,
           "batch1_ratio": 2.0,
           "host_growth_mb": 50, "device_growth_mb": 64}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ sampling
class GpuSampler:
    """nvidia-smi's utilisation and memory.used every `ms` in the background; nothing where there is no nvidia-smi."""

    def __init__(self, index, ms=200):
        self.exe, self.index, self.ms = shutil.which("nvidia-smi"), index, ms
        self.samples, self.proc, self.thread = [], None, None

    def start(self):
        if not self.exe:
            return self
        self.proc = subprocess.Popen([self.exe, "-i", str(self.index), "--query-gpu=utilization.gpu,memory.used",
                                      "--format=csv,noheader,nounits", "-lms", str(self.ms)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        time.sleep(0.5)  # a baseline before the measured process starts
        return self

    def _read(self):
        for line in self.proc.stdout:
            try:
                util, mem = (float(v) for v in line.split(","))
                self.samples.append((time.perf_counter(), util, mem))
            except ValueError:
                pass

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
            self.thread.join(timeout=2)
        return self

    def summary(self, t0, t1):
        """The samples taken while the process ran, times from its start, and memory.used before it started."""
        before = [m for t, _, m in self.samples if t < t0]
        during = [(t - t0, u, m) for t, u, m in self.samples if t0 <= t <= t1]
        return {"series": during, "baseline_mb": min(before) if before else 0.0} if during else {}


def gpu_stats(g, wall, active):
    """Mean utilisation over the process's last `active` seconds (its timed loop or run, not its start-up), peak
    memory.used and its rise over the baseline."""
    series = g.get("series")
    if not series:
        return {}
    busy = [u for t, u, _ in series if t >= wall - active] if active else []
    peak = max(m for _, _, m in series)
    return {"util_mean": statistics.mean(busy or [u for _, u, _ in series]), "mem_peak_mb": peak,
            "mem_over_baseline_mb": peak - g["baseline_mb"]}


def run_measured(cmd, log_path, gpu=None, rss_every=0.2, timeout=None, env=None):
    """Runs cmd with its stdout and stderr in files; returns (rc, stdout, wall s, peak RSS MB from wait4, the RSS
    series [(t, MB)] read from /proc, the GPU summary)."""
    log("  $", " ".join(c if c else '""' for c in cmd))
    out_path = log_path + ".out"
    if gpu:
        gpu.start()
    with open(out_path, "w") as out, open(log_path, "w") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        series, stop = [], threading.Event()

        def poll():
            while not stop.is_set():
                try:
                    with open(f"/proc/{p.pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                series.append((time.perf_counter() - t0, int(line.split()[1]) / 1024))
                except (OSError, ValueError):
                    pass
                stop.wait(rss_every)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        killer = threading.Timer(timeout, p.kill) if timeout else None
        if killer:
            killer.start()
        _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage: its peak RSS
        stop.set()
        p.returncode = os.waitstatus_to_exitcode(status)
        t1 = time.perf_counter()
        if killer:
            killer.cancel()
        thread.join()
    g = {}
    if gpu:
        gpu.stop()
        g = gpu.summary(t0, t1)
        gpu.samples = []
    with open(out_path) as f:
        stdout = f.read()
    if p.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-3000:]
        log(f"  FAILED ({p.returncode}): {tail}")
    return p.returncode, stdout, t1 - t0, usage.ru_maxrss / 1024, series, g


# ------------------------------------------------------------------------------------------------ the two sides
def forward_flops(width, depth, tokens=197, patches=196, patch=16, classes=1000):
    """One ViT forward at 224 x 224: 2 x (12 D^2 N L + 2 N^2 D L + patch embedding + head) FLOPs."""
    macs = 12 * width ** 2 * tokens * depth + 2 * tokens ** 2 * width * depth + patches * width * 3 * patch * patch
    return 2 * (macs + width * classes)


def cli_supports(cli):
    help_text = subprocess.run([cli, "analyze", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True).stdout
    return {"batch": "--batch" in help_text, "precision": "--precision" in help_text}


def check_model(cli, model_dir, shape, depth, device):
    """attnscope-cli info on the written checkpoint: it must load with the peer's heads, depth and width."""
    r = subprocess.run([cli, "info", "--json", "--device", device, model_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return r.stderr.strip() or r.stdout.strip()
    info = json.loads(r.stdout)
    want = {"heads": SHAPES[shape][1], "layers": depth, "width": SHAPES[shape][0], "classes": 1000}
    wrong = {k: (info.get(k), v) for k, v in want.items() if info.get(k) != v}
    return f"loaded with {wrong} (attnscope, peer)" if wrong else None


def run_attnscope(args, cli, flags, model_dir, image_list, batch, work, tag, gpu, rss_every=0.2, timeout=None,
                  analyses="similarity,centres,snr"):
    out = os.path.join(work, f"out-{tag}")
    cmd = [cli, "analyze", "--model", model_dir, "--images", image_list, "--out", out, "--device", args.device,
           "--analyses", analyses, "--seed", "0", "--formats", ""]
    if "snr" in analyses.split(","):
        cmd += ["--noise", "gaussian:sigma=8"]
    if flags["batch"] and batch is not None:
        cmd += ["--batch", str(batch)]
    if flags["precision"]:
        cmd += ["--precision", "fp32"]
    cmd += shlex.split(args.cli_args)
    rc, _, wall, rss_peak, series, g = run_measured(cmd, os.path.join(work, f"attnscope-{tag}.log"), gpu, rss_every,
                                                    timeout or args.timeout)
    res = {"rc": rc, "wall_s": wall, "rss_peak_mb": rss_peak, "rss_series": series,
           "gpu_series": [(t, m) for t, _, m in g.get("series", [])]}
    if rc != 0:
        return res
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    images = manifest.get("shard", {}).get("images_total") or len(manifest.get("images", []))
    timings = manifest.get("timings", {})
    res.update({"images": images, "images_per_s_process": images / wall, "timings": timings,
                "options": {k: manifest["options"].get(k) for k in ("batch", "precision", "device", "intra_op_threads",
                                                                 "inter_op_threads")}})
    active = None
    if timings.get("total_seconds") and timings.get("load_seconds") is not None:
        active = timings["total_seconds"] - timings["load_seconds"]
        res["images_per_s_run"] = images / active
    res["sampled"] = gpu_stats(g, wall, active)
    if os.path.exists(os.path.join(out, "token_similarity.csv")):
        res["token_similarity"], res["n"] = read_token_similarity(out)
    if os.path.exists(os.path.join(out, "head_centres.csv")):
        res["head_centres"] = read_head_centres(out)
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return res


def run_peer(args, extra, work, tag, gpu=None):
    cmd = [args.python, os.path.join(HERE, "gpu_peer.py"), "--device", args.device] + extra
    rc, stdout, wall, rss_peak, _, g = run_measured(cmd, os.path.join(work, f"peer-{tag}.log"), gpu,
                                                    timeout=args.timeout)
    if rc != 0:
        return {"rc": rc}
    res = json.loads(stdout.strip().splitlines()[-1])
    res.update({"rc": 0, "process_wall_s": wall, "process_rss_peak_mb": rss_peak,
                "sampled": gpu_stats(g, wall, res.get("seconds"))})
    return res


# ------------------------------------------------------------------------------------------------ the table
def report(res, args):
    lines = []
    out = lines.append
    s = res["sgemm"]
    peak = s.get("fp32_tflops")
    out(f"attnscope bench-gpu, {res['when']}, device {res['device_name']} ({args.device}), peer torch {s.get('torch')},"
        f" attnscope-cli --batch: {'yes' if res['flags']['batch'] else 'no (its default batching)'},"
        f" --precision: {'yes' if res['flags']['precision'] else 'no'}, weights {res['weights_format']}")
    extra = ", ".join(f"{k} {s[k + '_tflops']:.1f}" for k in ("tf32", "bf16") if s.get(k + "_tflops"))
    out(f"matrix-product peak (torch.mm, square): FP32 with TF32 off {peak:.2f} TFLOP/s"
        + (f"; {extra} TFLOP/s" if extra else ""))
    for shape, m in res["models"].items():
        out(f"{shape} (depth {m['depth']}): one forward {m['flops'] / 1e9:.2f} GFLOP; two forwards at the FP32 peak:"
            f" {m['bound_ips']:.0f} images/s")
    out("images/s: attnscope's over the whole process (what the user waits for) and over its run (manifest total -"
        " load); the peer's over its timed loop (after warm-up), reading its images with DataLoader workers, and again"
        " with every image decoded first and kept on the device (issue 33's peer; batches > 1). ratio = attnscope run /"
        " peer. share = attnscope run"
        " / the two-forward bound. util = mean GPU utilisation over the peer's timed loop and attnscope's run after"
        " loading; mem = peak nvidia-smi memory.used over the baseline (peer: torch's max_memory_allocated in"
        " brackets); max |d ts| = the largest difference"
        " between the two sides' per-layer mean token similarity (X, U, R; all, patches), same images; max rel d"
        " centres = the same for the head centres' means (dy, dx, distance, bandwidth, prefix and window mass),"
        " relative to max(1, |attnscope's|). wait / fwd = the share of attnscope's run spent waiting for the"
        " read-ahead images (decoding, preparing, perturbing on CPU threads) and in the forwards with their analyses"
        " (manifest timings).")
    out("")
    out("| model | batch | attnscope img/s (process) | attnscope img/s (run) | peer img/s | ratio | peer, inputs on the"
        " device | ratio | share of bound | wait / fwd | GPU util % (a / p) | GPU mem MB (a / p) | host RSS MB (a / p) |"
        " max abs d ts | max rel d centres |")
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape, m in res["models"].items():
        for b in args.batches:
            a = m["attnscope"].get(str(b), {})
            p = m["peer"].get(str(b), {})
            r = m.get("resident", {}).get(str(b), {})
            run_ips = a.get("images_per_s_run")
            ratio = run_ips / p["images_per_s"] if run_ips and p.get("images_per_s") else None
            r_ratio = run_ips / r["images_per_s"] if run_ips and r.get("images_per_s") else None
            share = run_ips / m["bound_ips"] if run_ips else None
            ag, pg = a.get("sampled", {}), p.get("sampled", {})
            mem_p = fmt(pg.get("mem_over_baseline_mb"), "{:.0f}", "-")
            if p.get("max_memory_allocated_mb") is not None:
                mem_p += f" ({p['max_memory_allocated_mb']:.0f})"
            label = str(b) if res["flags"]["batch"] else f"{b} (a: default)"
            t = a.get("timings", {})
            active = (t.get("total_seconds") or 0) - (t.get("load_seconds") or 0)
            split = "-"
            if active > 0 and t.get("waiting_for_images_seconds") is not None:
                split = (f"{t['waiting_for_images_seconds'] / active:.0%} /"
                         f" {t.get('forward_and_analyses_seconds', 0) / active:.0%}")
            out(f"| {shape} | {label} | {fmt(a.get('images_per_s_process'))} | {fmt(run_ips)} |"
                f" {fmt(p.get('images_per_s'))} | {fmt(ratio, '{:.2f}x')} | {fmt(r.get('images_per_s'), '{:.1f}', '-')} |"
                f" {fmt(r_ratio, '{:.2f}x', '-')} | {fmt(share, '{:.0%}')} | {split} |"
                f" {fmt(ag.get('util_mean'), '{:.0f}', '-')} / {fmt(pg.get('util_mean'), '{:.0f}', '-')} |"
                f" {fmt(ag.get('mem_over_baseline_mb'), '{:.0f}', '-')} / {mem_p} |"
                f" {fmt(a.get('rss_peak_mb'), '{:.0f}', '-')} / {fmt(p.get('process_rss_peak_mb'), '{:.0f}', '-')} |"
                f" {fmt(m['difference'].get(str(b)), '{:.1e}', 'n/a')} |"
                f" {fmt(m['centres_difference'].get(str(b)), '{:.1e}', 'n/a')} |")
    lg = res.get("long")
    if lg:
        out("")
        out(f"long run: {lg['images']} images ({lg['distinct']} files listed over and over), {lg['shape']}, batch"
            f" {lg['batch'] or '(its default)'}: {fmt(lg.get('images_per_s_process'))} images/s over the process,"
            f" host RSS peak {fmt(lg.get('rss_peak_mb'), '{:.0f}')} MB, growth first to last quarter: host"
            f" {fmt(lg.get('host_growth_mb'), '{:+.1f}', 'n/a')} MB,"
            f" device {fmt(lg.get('device_growth_mb'), '{:+.1f}', 'n/a')} MB")
    ab = res.get("ablation")
    if ab:
        a, p = ab["ablation"], ab["plain"]
        out("")
        out(f"head ablation (issue 35), vit_small, {ab['images']} images, batch {ab['batch'] or '(its default)'}:"
            f" {fmt(a.get('images_per_s_run'))} images/s over the run ({fmt(a.get('images_per_s_process'))} over the"
            f" process), each image 1 + {ab['heads']} forwards; one forward per image (similarity only):"
            f" {fmt(p.get('images_per_s_run'))} images/s; an image's ablation takes"
            f" {fmt(ab.get('plain_forwards_per_image'), '{:.1f}', 'n/a')} plain forwards' time")
    out("")
    out("| target (issues 15, 33 and 35) | measured | met |")
    out("|---|---|---|")
    decided = args.device.startswith("cuda") and not args.tiny and not args.quick
    for name, text, ok in res["targets"]:
        if ok is None:
            verdict = "n/a"
        elif decided:
            verdict = "MET" if ok else "NOT MET"
        else:
            verdict = ("(would be met)" if ok else "(would not be met)") + " not decided: smoke run"
        out(f"| {name} | {text} | {verdict} |")
    if not decided:
        out("")
        what = "a CPU run" if not args.device.startswith("cuda") else "a --quick or --tiny run"
        out(f"Not a measurement of the targets: {what}; the targets hold for ViT-S/16 and ViT-B/16 on an H100.")
    return "\n".join(lines)


def targets(res, args):
    t = []
    small, base = res["models"].get("vit_small"), res["models"].get("vit_base")

    def best(m, side, key):
        vals = [(v.get(key), b) for b, v in m[side].items() if v.get(key)]
        return max(vals) if vals else (None, None)

    if small:
        ips, b = best(small, "attnscope", "images_per_s_run")
        peer_ips, pb = best(small, "peer", "images_per_s")
        t.append((f"ViT-S/16 full analysis >= {TARGETS['vit_small_ips']} images/s at FP32",
                  f"{fmt(ips)} images/s (batch {b})", None if ips is None else ips >= TARGETS["vit_small_ips"]))
        share = ips / small["bound_ips"] if ips else None
        t.append((f"ViT-S/16 >= {TARGETS['share']:.0%} of the two forwards at the measured sgemm peak",
                  f"{fmt(share, '{:.0%}')} of {small['bound_ips']:.0f} images/s",
                  None if share is None else share >= TARGETS["share"]))
        ratio = ips / peer_ips if ips and peer_ips else None
        t.append((f"ViT-S/16 >= {TARGETS['peer_ratio']}x the peer's best batch",
                  f"{fmt(ratio, '{:.2f}x')} ({fmt(ips)} against the peer's {fmt(peer_ips)} at batch {pb})",
                  None if ratio is None else ratio >= TARGETS["peer_ratio"]))
        resident_ips, rb = best(small, "resident", "images_per_s")
        r_ratio = ips / resident_ips if ips and resident_ips else None
        t.append((f"ViT-S/16 >= {TARGETS['resident_ratio']}x the peer with its inputs on the device (its best batch)",
                  f"{fmt(r_ratio, '{:.2f}x')} ({fmt(ips)} against {fmt(resident_ips)} at batch {rb})" if r_ratio
                  else "needs a batch > 1", None if r_ratio is None else r_ratio >= TARGETS["resident_ratio"]))
        a1 = (small["attnscope"].get("1") or {}).get("images_per_s_run")
        p1 = (small["peer"].get("1") or {}).get("images_per_s")
        r1 = a1 / p1 if a1 and p1 and res["flags"]["batch"] else None
        t.append((f"ViT-S/16 batch 1 (the window's case) >= {TARGETS['batch1_ratio']}x the peer's batch 1",
                  f"{fmt(r1, '{:.2f}x')} ({fmt(a1)} against {fmt(p1)})" if r1 else "needs --batch 1",
                  None if r1 is None else r1 >= TARGETS["batch1_ratio"]))
    if base:
        ips, b = best(base, "attnscope", "images_per_s_run")
        t.append((f"ViT-B/16 full analysis >= {TARGETS['vit_base_ips']} images/s", f"{fmt(ips)} images/s (batch {b})",
                  None if ips is None else ips >= TARGETS["vit_base_ips"]))
    lg = res.get("long")
    if lg:
        hg, dg = lg.get("host_growth_mb"), lg.get("device_growth_mb")
        ok = None
        if hg is not None:
            ok = hg <= TARGETS["host_growth_mb"] and (dg is None or dg <= TARGETS["device_growth_mb"])
        if ok and lg["images"] < 1000000:
            ok = None  # flat over fewer images does not show the target
        t.append((f"1,000,000-image run, flat memory (first to last quarter: host <= {TARGETS['host_growth_mb']} MB,"
                  f" device <= {TARGETS['device_growth_mb']} MB)",
                  f"{lg['images']} images: host {fmt(hg, '{:+.1f}', 'n/a')} MB, device {fmt(dg, '{:+.1f}', 'n/a')} MB",
                  ok))
    ab = res.get("ablation")
    if ab:
        n = ab.get("plain_forwards_per_image")
        t.append((f"head ablation of ViT-S/16 ({ab['heads']} heads) <= {ab['heads']} plain forwards' time per image"
                  " (issue 35)", f"{fmt(n, '{:.1f}', 'n/a')} plain forwards", None if n is None else n <= ab["heads"]))
    for key, what in (("difference", "per-layer mean token similarity"), ("centres_difference", "head centres' means")):
        diffs = [v for m in res["models"].values() for v in m[key].values() if v is not None]
        t.append((f"correctness: {what}, attnscope vs the peer, < 1e-4",
                  f"max {max(diffs):.1e}" if diffs else "n/a", max(diffs) < 1e-4 if diffs else None))
    return t


def measure_ablation(args, cli, flags, model_dir, depth, paths, work, failures):
    """Head ablation (issue 35) of ViT-S/16 on the device: `analyze --analyses ablation` (each image's clean forward and
    one forward per head ablated, 73 in all at depth 12) beside `--analyses similarity` over the same images (one forward each
    and a light analysis: the plain forward's rate), at the batch given; images/s over each run."""
    batch = args.ablation_batch if flags["batch"] else None
    image_list = write_list(os.path.join(work, f"images-ablation-{args.ablation_images}.txt"), paths, args.ablation_images)
    out = {"images": args.ablation_images, "batch": batch, "heads": SHAPES["vit_small"][1] * depth}
    for kind, analyses in (("ablation", "ablation"), ("plain", "similarity")):
        log(f"vit_small, {kind} ({analyses}), batch {batch or '(its default)'}, {args.ablation_images} images ...")
        a = run_attnscope(args, cli, flags, model_dir, image_list, batch, work, f"ablation-{kind}", None,
                          analyses=analyses)
        if a["rc"]:
            failures.append(f"attnscope {kind} (head ablation row)")
        out[kind] = {k: a.get(k) for k in ("rc", "images", "images_per_s_run", "images_per_s_process", "timings")}
    ab, plain = out["ablation"].get("images_per_s_run"), out["plain"].get("images_per_s_run")
    out["plain_forwards_per_image"] = plain / ab if ab and plain else None
    return out


# ------------------------------------------------------------------------------------------------ main
def find_python():
    for exe in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if exe and subprocess.run([exe, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    sys.exit("gpu_bench: no Python with torch found for the peer (give --python)")


def save(res, args):
    """Every measurement so far, written after each run, so that a run stopped part-way (a device lease ending) still
    leaves what it measured."""
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w") as f:
            json.dump(res, f, indent=1, default=str)
        os.replace(args.json + ".tmp", args.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build folder holding app/attnscope-cli (build/libtorch2-headless)")
    ap.add_argument("--quick", action="store_true", help="fewer images (a smoke run, not the record)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:<i> or cpu (cpu: a tiny test of the runner)")
    ap.add_argument("--json", default=None, help="write every measurement here")
    ap.add_argument("--tiny", action="store_true", help="depth-2 models (a test of the runner, not the targets)")
    ap.add_argument("--models", default="vit_small,vit_base")
    ap.add_argument("--batches", default=None, help="comma-separated (default 1,16,64,128; CPU 1,4)")
    ap.add_argument("--images", type=int, default=None, help="images per run at batch > 1")
    ap.add_argument("--images-b1", type=int, default=None, help="images per run at batch 1")
    ap.add_argument("--distinct", type=int, default=None, help="distinct image files (the lists repeat them)")
    ap.add_argument("--image-size", type=int, default=224, help="side of the generated images (224: no resize)")
    ap.add_argument("--long", type=int, default=None, help="images of the flat-memory run (0: skip)")
    ap.add_argument("--python", default=None, help="the Python with torch that runs the peer (default: this one, or"
                    " the first python3 / /usr/bin/python3 that imports torch)")
    ap.add_argument("--weights", default="pt", choices=["pt", "safetensors"])
    ap.add_argument("--no-batch-flag", action="store_true", help="do not pass --batch/--precision to attnscope-cli")
    ap.add_argument("--cli-args", default="", help="more attnscope-cli analyze options, e.g. '--analyses-on device'")
    ap.add_argument("--gpu-index", type=int, default=0, help="nvidia-smi -i")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one, removed unless --keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--ablation-images", type=int, default=None,
                    help="images of the head-ablation row, ViT-S/16 (default 512; --quick 128; CPU 4; 0: skip)")
    ap.add_argument("--ablation-batch", type=int, default=64, help="its batch")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    args.python = args.python or find_python()
    if args.batches is None:
        args.batches = "1,16,64,128" if cuda else "1,4"
    args.batches = [int(b) for b in args.batches.split(",")]
    # images per run, images at batch 1, distinct files, long run: GPU full / GPU quick / CPU
    sizes = (10240, 1000, 2048, 1000000) if cuda else (8, 4, 8, 24)
    if cuda and args.quick:
        sizes = (1024, 200, 512, 20000)
    args.images = args.images or sizes[0]
    args.images_b1 = args.images_b1 or sizes[1]
    args.distinct = args.distinct or sizes[2]
    args.long = sizes[3] if args.long is None else args.long
    if args.ablation_images is None:
        args.ablation_images = (128 if args.quick else 512) if cuda else 4
    depth = 2 if args.tiny else 12
    cli = os.path.join(args.build, "app", "attnscope-cli")
    if not os.access(cli, os.X_OK):
        sys.exit(f"gpu_bench: {cli} not found (make libtorch2-headless, or give the build folder)")
    work = args.work or tempfile.mkdtemp(prefix="attnscope-bench-gpu-")
    os.makedirs(work, exist_ok=True)
    flags = {"batch": False, "precision": False} if args.no_batch_flag else cli_supports(cli)
    res = {"when": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), "device": args.device, "flags": flags,
           "args": {k: v for k, v in vars(args).items()}, "models": {}, "failures": []}
    failures = res["failures"]

    log("Writing the models ...")
    res["weights_format"] = args.weights
    model_dirs = {}
    for shape in args.models.split(","):
        d = os.path.join(work, "models", shape)
        r = run_peer(args, ["--write-model", d, "--shape", shape, "--depth", str(depth), "--format", args.weights],
                     work, f"write-{shape}")
        problem = "the peer could not write it" if r["rc"] else check_model(cli, d, shape, depth, args.device)
        if problem and args.weights == "pt":
            log(f"  attnscope-cli info {d}: {problem}; writing model.safetensors instead")
            res["weights_format"] = f"safetensors (model.pt failed: {problem[:200]})"
            run_peer(args, ["--write-model", d, "--shape", shape, "--depth", str(depth), "--format", "safetensors"],
                     work, f"write-{shape}-st")
            problem = check_model(cli, d, shape, depth, args.device)
        if problem:
            failures.append(f"{shape}: {problem}")
            log(f"  {shape}: {problem}")
            continue
        model_dirs[shape] = d

    log(f"Writing {args.distinct} images ...")
    paths = make_images(os.path.join(work, "images"), args.distinct, args.image_size)

    log("Measuring the matrix-product peak ...")
    res["sgemm"] = run_peer(args, ["--sgemm"], work, "sgemm")
    if res["sgemm"]["rc"]:
        failures.append("sgemm")
        res["sgemm"]["fp32_tflops"] = float("nan")
    res["device_name"] = res["sgemm"].get("gpu", "CPU")
    gpu = GpuSampler(args.gpu_index) if cuda else None

    for shape, d in model_dirs.items():
        width = SHAPES[shape][0]
        flops = forward_flops(width, depth)
        m = res["models"][shape] = {"depth": depth, "flops": flops, "attnscope": {}, "peer": {}, "resident": {}, "difference": {},
                                    "centres_difference": {},
                                    "bound_ips": res["sgemm"]["fp32_tflops"] * 1e12 / (2 * flops)}
        for b in args.batches:
            count = args.images_b1 if b == 1 else max(args.images, 2 * b)
            image_list = write_list(os.path.join(work, f"images-{count}.txt"), paths, count)
            log(f"{shape}, batch {b}, {count} images: the peer ...")
            p = run_peer(args, ["--model", d, "--images", image_list, "--batch", str(b)], work, f"{shape}-{b}", gpu)
            if p["rc"]:
                failures.append(f"peer {shape} batch {b}")
            m["peer"][str(b)] = p
            if b > 1:  # the same script with every input already on the device (issue 33's peer)
                r = run_peer(args, ["--model", d, "--images", image_list, "--batch", str(b), "--resident"], work,
                             f"{shape}-{b}-resident", gpu)
                if r["rc"]:
                    failures.append(f"peer (inputs on the device) {shape} batch {b}")
                m["resident"][str(b)] = r
            log(f"{shape}, batch {b if flags['batch'] else '(its default)'}, {count} images: attnscope ...")
            a = run_attnscope(args, cli, flags, d, image_list, b, work, f"{shape}-{b}", gpu)
            a.pop("rss_series", None)
            a.pop("gpu_series", None)
            if a["rc"]:
                failures.append(f"attnscope {shape} batch {b}")
            m["attnscope"][str(b)] = a
            if not p["rc"] and not a["rc"] and a.get("n") == p.get("images"):
                m["difference"][str(b)] = max_difference(p["token_similarity"], a["token_similarity"])
                m["centres_difference"][str(b)] = max_relative_difference(p.get("head_centres"), a["head_centres"])
            a.pop("head_centres", None)
            save(res, args)

    if args.long and "vit_small" in model_dirs:
        runs = res["models"]["vit_small"]["attnscope"]
        fastest = max((v.get("images_per_s_run") or 0, int(k)) for k, v in runs.items())[1] if runs else 64
        batch = fastest if flags["batch"] else None
        log(f"Long run: {args.long} images, vit_small, batch {batch} ...")
        image_list = write_list(os.path.join(work, "images-long.txt"), paths, args.long)
        a = run_attnscope(args, cli, flags, model_dirs["vit_small"], image_list, batch, work, "long",
                          GpuSampler(args.gpu_index, 1000) if cuda else None, rss_every=1.0 if cuda else 0.2,
                          # --timeout is sized for the timed runs; the long run gets at least 10 ms an image more
                          timeout=max(args.timeout, 120 + args.long / 100))
        if a["rc"]:
            failures.append("attnscope long run")
        a.update({"images": args.long, "distinct": args.distinct, "shape": "vit_small", "batch": batch,
                  "host_growth_mb": growth(a["rss_series"]), "device_growth_mb": growth(a["gpu_series"])})
        res["long"] = a
    if args.ablation_images and "vit_small" in model_dirs:
        res["ablation"] = measure_ablation(args, cli, flags, model_dirs["vit_small"], depth, paths, work, failures)
        save(res, args)
    res["targets"] = targets(res, args)
    table = report(res, args)
    res["table"] = table
    save(res, args)
    print(table)
    if failures:
        log("gpu_bench: failed: " + "; ".join(failures) + f" (logs in {work})")
    elif not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
