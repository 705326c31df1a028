#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/<harness>/seed-*.

Standard library only. Seeds are small valid inputs (and a few near-misses) built here, plus the repository's
own small fixtures: golden configs and .npy files, the .pt fixtures of tests/engine/data/pt and the data.pkl
records inside them. Crash regressions (crash-*) found by `make fuzz` live beside the seeds and are kept when
this script reruns: it only replaces seed-* files.

Run: python3 tests/fuzz/make_seeds.py
"""
import json
import pathlib
import struct
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "corpus"


def write(harness, name, data):
    folder = CORPUS / harness
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"seed-{name}").write_bytes(data)


def reset(harness):
    folder = CORPUS / harness
    folder.mkdir(parents=True, exist_ok=True)
    for f in folder.glob("seed-*"):
        f.unlink()


# --- safetensors ------------------------------------------------------------------------------------------------

DTYPE = {"F64": ("d", 8), "F32": ("f", 4), "F16": ("e", 2), "BF16": (None, 2), "I64": ("q", 8), "I32": ("i", 4),
         "I16": ("h", 2), "I8": ("b", 1), "U8": ("B", 1), "BOOL": ("?", 1)}


def safetensors(entries, metadata=None, pad=True, align_data=True):
    """entries: list of (name, dtype, shape, values)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in entries:
        fmt, size = DTYPE[dtype]
        if dtype == "BF16":
            raw = b"".join(struct.pack("<f", v)[2:] for v in values)
        else:
            raw = struct.pack("<" + fmt * len(values), *values)
        if align_data:
            while len(data) % 8:
                data += b"\0"
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - (len(h) + 8) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    reset("safetensors")
    write("safetensors", "f32", safetensors([("w", "F32", [2, 3], [0.5, -1, 2, 3, 4, 5]), ("b", "F32", [3], [1, 2, 3])]))
    write("safetensors", "all-dtypes", safetensors([
        ("f64", "F64", [2], [1.5, -2]), ("f16", "F16", [2, 1], [0.25, 65504]), ("bf16", "BF16", [3], [1, 2, 3]),
        ("i64", "I64", [2], [-1, 2**40]), ("i32", "I32", [1], [7]), ("i16", "I16", [2], [-3, 3]),
        ("i8", "I8", [2], [-128, 127]), ("u8", "U8", [3], [0, 1, 255]), ("bool", "BOOL", [2], [True, False])]))
    write("safetensors", "metadata", safetensors([("x", "F32", [1], [1])],
                                                 {"format": "pt", "num_heads": "4", "image_size": "32"}))
    write("safetensors", "scalar-and-empty", safetensors([("s", "F32", [], [3.0]), ("e", "F32", [0, 4], [])]))
    write("safetensors", "unaligned", safetensors([("a", "U8", [3], [1, 2, 3]), ("b", "F32", [2], [1, 2])],
                                                  align_data=False))
    write("safetensors", "empty-header", struct.pack("<Q", 2) + b"{}")
    write("safetensors", "overlap", struct.pack("<Q", 96) + json.dumps({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode().ljust(96) + bytes(12))
    write("safetensors", "truncated", safetensors([("w", "F32", [4], [1, 2, 3, 4])])[:-5])
    zoo = ROOT / "resources/models/conv3x3-as-attention/model.safetensors"
    write("safetensors", "conv3x3-as-attention", zoo.read_bytes())


# --- config -----------------------------------------------------------------------------------------------------

# The tensor sets of fuzz_config.cpp, in its order: the selector byte picks one.
SETS = ["fmnist-vit", "fmnist-bilateral", "fmnist-quadratic", "conv3x3-as-attention", "hf_vit_eps5",
        "hf_clip_vision", "hf_dinov2", "timm_deit_distilled", "timm_dinov2_reg", "timm_gray", "tv_torchvision",
        "timm_clip_quickgelu"]


def folder_of(name):
    zoo = ROOT / "resources/models" / name
    return zoo if zoo.is_dir() else ROOT / "tests/golden/fixtures" / name


def config_input(selector, config=b"", preprocessor=b"", description=b"", metadata=b""):
    return bytes([selector]) + b"\n%%\n".join([config, preprocessor, description, metadata])


def config_seeds():
    reset("config")
    for i, name in enumerate(SETS):
        folder = folder_of(name)
        cfg = folder / "config.json"
        pre = folder / "preprocessor_config.json"
        write("config", f"{name}", config_input(i, cfg.read_bytes() if cfg.exists() else b"",
                                               pre.read_bytes() if pre.exists() else b""))
        write("config", f"{name}-bare", config_input(i))
    description = {
        "attnscope_description": 1,
        "rename": [["^blocks\\.(\\d+)\\.", "blocks.$1."]],
        "drop": ["^optimizer\\.", "\\.num_batches_tracked$"],
        "architecture": {"num_heads": 4, "block_norm": "pre", "activation": "gelu_tanh", "layer_norm_eps": 1e-5,
                         "final_norm": True, "pooling": "cls", "image_size": 28, "pos_embed_includes_prefix": True,
                         "neutreno_lambda": 0.3, "boost_t": 0.5},
        "preprocessing": {"input_size": [1, 28, 28], "crop_pct": 1.0, "crop_mode": "squash",
                          "interpolation": "bilinear", "mean": [0.5], "std": [0.5]},
        "labels": [str(i) for i in range(10)],
    }
    write("config", "description", config_input(0, description=json.dumps(description).encode()))
    example = ROOT / "docs/examples/cifar10-vit-tintn.json"
    write("config", "description-example", config_input(0, description=example.read_bytes()))
    write("config", "metadata", config_input(0, metadata=b'{"num_heads": "2", "image_size": "28"}'))
    hf_pre = {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 32},
              "do_center_crop": True, "crop_size": {"height": 32, "width": 32}, "resample": 3,
              "do_rescale": True, "rescale_factor": 0.00392156862745098, "do_normalize": True,
              "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
    write("config", "hf-preprocessor", config_input(4, preprocessor=json.dumps(hf_pre).encode()))
    timm = {"architecture": "vit_tiny_patch16_224", "num_classes": 10,
            "model_args": {"num_heads": 3, "img_size": 224, "global_pool": "avg", "act_layer": "gelu"},
            "pretrained_cfg": {"input_size": [3, 224, 224], "crop_pct": 0.9, "crop_mode": "center",
                               "interpolation": "bicubic", "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]},
            "label_names": ["a", "b"]}
    write("config", "timm-config", config_input(9, config=json.dumps(timm).encode()))


# --- npy --------------------------------------------------------------------------------------------------------

def npy_file(descr, shape, payload, version=1, fortran=False):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}"
    pre = 10 if version == 1 else 12
    header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + payload


def npy_seeds():
    reset("npy")
    # Round trip (first byte even): rank, dims, then float bytes.
    write("npy", "roundtrip-2x3", bytes([0, 2, 2, 3]) + struct.pack("<6f", 1, -2, 0.5, float("inf"), -0.0, 1e-45))
    write("npy", "roundtrip-scalar", bytes([0, 0]) + struct.pack("<f", 3.25))
    write("npy", "roundtrip-empty", bytes([0, 3, 2, 0, 5]))
    write("npy", "roundtrip-rank8", bytes([0, 8, 2, 2, 2, 2, 2, 2, 2, 2]) + bytes(range(64)))
    write("npy", "roundtrip-nan", bytes([0, 1, 4]) + b"\x01\x00\xc0\x7f" * 4)
    # Reading (first byte odd): whole files.
    write("npy", "read-f4", b"\x01" + npy_file("<f4", [2, 2], struct.pack("<4f", 1, 2, 3, 4)))
    write("npy", "read-f8", b"\x01" + npy_file("<f8", [3], struct.pack("<3d", 1, 2, 3)))
    write("npy", "read-v2", b"\x01" + npy_file("<f4", [1], struct.pack("<f", 1), version=2))
    write("npy", "read-scalar", b"\x01" + npy_file("<f4", [], struct.pack("<f", 1)))
    write("npy", "read-fortran", b"\x01" + npy_file("<f4", [1], struct.pack("<f", 1), fortran=True))
    write("npy", "read-int", b"\x01" + npy_file("<i4", [1], struct.pack("<i", 1)))
    write("npy", "read-truncated", b"\x01" + npy_file("<f4", [4, 4], struct.pack("<f", 1)))
    golden = ROOT / "tests/golden/fixtures/hf_vit_eps5/logits.npy"
    write("npy", "read-golden-logits", b"\x01" + golden.read_bytes())


# --- torch_checkpoint -------------------------------------------------------------------------------------------

def torch_checkpoint_seeds():
    reset("torch_checkpoint")
    for pt in sorted((ROOT / "tests/engine/data/pt").glob("*.pt")):
        data = pt.read_bytes()
        if len(data) <= 8192:
            write("torch_checkpoint", pt.stem, data)
        if data[:2] == b"PK":
            try:
                with zipfile.ZipFile(pt) as z:
                    for info in z.infolist():
                        if info.filename.endswith("data.pkl"):
                            write("torch_checkpoint", pt.stem + "-data.pkl", z.read(info))
            except zipfile.BadZipFile:
                pass


if __name__ == "__main__":
    safetensors_seeds()
    config_seeds()
    npy_seeds()
    torch_checkpoint_seeds()
    for folder in sorted(CORPUS.iterdir()):
        print(f"{folder.name}: {len(list(folder.iterdir()))} files")
