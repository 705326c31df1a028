"""What gpu_bench.py reads from each side's output and compares (split from it): attnscope-cli's token similarity and
head centres, the largest differences between the two sides, memory growth over a run, a cell's format."""
import os

CENTRE_FIELDS = ("centre_dy", "centre_dx", "mean_distance_px", "bandwidth", "prefix_mass", "window_mass")


def read_token_similarity(out_dir):
    """token_similarity.csv -> {"block/all": {layer: mean}, ...} and its n."""
    result, n = {}, None
    with open(os.path.join(out_dir, "token_similarity.csv")) as f:
        header = f.readline().strip().split(",")
        for line in f:
            row = dict(zip(header, line.strip().split(",")))
            result.setdefault(f"{row['tap']}/{row['tokens']}", {})[int(row["layer"])] = float(row["mean"])
            n = int(row["n"])
    return result, n


def read_head_centres(out_dir):
    """head_centres.csv -> {"l/h/field": mean} for the fields that do not come from an argmax."""
    result = {}
    with open(os.path.join(out_dir, "head_centres.csv")) as f:
        header = f.readline().strip().split(",")
        for line in f:
            row = dict(zip(header, line.strip().split(",")))
            for field in CENTRE_FIELDS:
                result[f"{row['layer']}/{row['head']}/{field}"] = float(row[field])
    return result


def max_relative_difference(peer, ours):
    """max |peer - ours| / max(1, |ours|) over the peer's keys; None when attnscope lacks one."""
    if not peer or any(k not in ours for k in peer):
        return None
    return max(abs(v - ours[k]) / max(1.0, abs(ours[k])) for k, v in peer.items())


def max_difference(peer_ts, ours_ts):
    diffs = []
    for key, curve in peer_ts.items():
        first = 0 if key.startswith("block") else 1
        for l, v in enumerate(curve, first):
            if key not in ours_ts or l not in ours_ts[key]:
                return None
            diffs.append(abs(v - ours_ts[key][l]))
    return max(diffs) if diffs else None


def growth(series):
    """The peak of a [(t, value)] series over its last quarter (by time) minus its peak over the first quarter: zero
    when the memory reached in the first quarter (model, buffers, the first batches) is all the run ever needs."""
    if len(series) < 8:
        return None
    start, end = series[0][0], series[-1][0]
    first = [v for t, v in series if t <= start + (end - start) / 4]
    last = [v for t, v in series if t >= start + 3 * (end - start) / 4]
    return max(last) - max(first) if first and last else None


def fmt(v, spec="{:.1f}", none=""):
    return none if v is None else spec.format(v)
