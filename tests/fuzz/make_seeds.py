#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/<harness>/seed-*.

Standard library only. Seeds are small valid inputs (and a few near-misses) built here, plus the repository's
own small fixtures: golden configs and .npy files, the .pt fixtures of tests/engine/data/pt and the data.pkl
records inside them, the small images of tests/data/bad. Images are written byte by byte here (PNG through zlib),
one tiny valid file of each format OpenCV decodes where that is short to write, and header-only near misses. Crash regressions (crash-*) found by `make fuzz` live beside the seeds and are kept when
this script reruns: it only replaces seed-* files.

Run: python3 tests/fuzz/make_seeds.py
"""
import json
import pathlib
import struct
import zipfile
import zlib

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
SETS = ["fmnist-vit-d4", "fmnist-bilateral-d4", "fmnist-quadratic", "conv3x3-as-attention", "hf_vit_eps5",
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
    # Families and layouts (docs/models.md, "Families"; docs/model-description.md): a family named, the position
    # scheme stated, tensors concatenated, a patch order.
    layout = {"attnscope_description": 1, "family": "vit",
              "concatenate": [{"from": "^blocks\\.(\\d+)\\.attn\\.qkv\\.(weight|bias)$", "to": "joined.$2", "order": "$1"}],
              "drop": ["^joined\\."],
              "architecture": {"num_heads": 4, "position": "learned", "patch_size": 4, "channels": 1,
                               "pooling": "mean_all"}}
    write("config", "description-layout", config_input(0, description=json.dumps(layout).encode()))
    write("config", "timm-refused-family", config_input(9, config=json.dumps(dict(timm, architecture="vit_small_patch16_dinov3")).encode()))
    write("config", "hf-refused-family", config_input(4, config=json.dumps({"model_type": "beit", "architectures": ["BeitModel"]}).encode()))


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


# --- image ------------------------------------------------------------------------------------------------------

def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width, height, colour_type, bit_depth, rows, palette=None, interlace=0, idat_split=False):
    """rows: the filtered scanlines (each starting with its filter byte), already concatenated."""
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, interlace))
    if palette is not None:
        out += png_chunk(b"PLTE", palette)
    data = zlib.compress(rows, 9)
    if idat_split:
        out += png_chunk(b"IDAT", data[:len(data) // 2]) + png_chunk(b"IDAT", data[len(data) // 2:])
    else:
        out += png_chunk(b"IDAT", data)
    return out + png_chunk(b"IEND", b"")


def png_rows(width, height, bytes_per_pixel, filter_type=0):
    return b"".join(bytes([filter_type]) + bytes((x * 37 + y * 91 + c * 13) & 0xFF for x in range(width)
                                                 for c in range(bytes_per_pixel)) for y in range(height))


def jpeg(width, height, components, eoi=True):
    """A baseline JPEG whose every 8x8 block is flat (DC difference 0, end of block at once): one Huffman code of
    length 1 in each table, so a block is the two bits 00. 4:4:4, one quantisation table of ones."""
    def segment(marker, body):
        return b"\xFF" + bytes([marker]) + struct.pack(">H", len(body) + 2) + body
    out = b"\xFF\xD8"
    out += segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    out += segment(0xDB, b"\x00" + bytes([1] * 64))
    out += segment(0xC0, struct.pack(">BHHB", 8, height, width, components)
                   + b"".join(bytes([i + 1, 0x11, 0]) for i in range(components)))
    one_code = bytes([1] + [0] * 15)
    out += segment(0xC4, b"\x00" + one_code + b"\x00")  # DC table 0: category 0
    out += segment(0xC4, b"\x10" + one_code + b"\x00")  # AC table 0: end of block
    out += segment(0xDA, bytes([components]) + b"".join(bytes([i + 1, 0x00]) for i in range(components))
                   + b"\x00\x3F\x00")
    blocks = ((width + 7) // 8) * ((height + 7) // 8) * components
    bits = "00" * blocks
    bits += "1" * (-len(bits) % 8)
    out += bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    return out + (b"\xFF\xD9" if eoi else b"")


def bmp(width, height, bits=24, top_down=False):
    row = (width * bits // 8 + 3) // 4 * 4
    palette = b"".join(bytes([i, i, i, 0]) for i in range(256)) if bits == 8 else b""
    pixels = b"".join(bytes((x * 50 + y * 30 + k) & 0xFF for x in range(width) for k in range(bits // 8)).ljust(row, b"\0")
                      for y in range(height))
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bits, 0, len(pixels),
                       2835, 2835, 256 if bits == 8 else 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset) + info + palette + pixels


def bmp_os2(width, height):
    row = (width * 3 + 3) // 4 * 4
    pixels = bytes(row * height)
    return b"BM" + struct.pack("<IHHI", 26 + len(pixels), 0, 0, 26) + struct.pack("<IHHHH", 12, width, height, 1, 24) + pixels


def tiff(width, height, samples, big_endian=False):
    """Uncompressed strips, one IFD (entries in tag order), the pixels after it."""
    e = ">" if big_endian else "<"
    pixels = bytes((i * 29) & 0xFF for i in range(width * height * samples))
    entries = [(256, 3, 1, width), (257, 3, 1, height), (258, 3, 1, 8), (259, 3, 1, 1),
               (262, 3, 1, 2 if samples == 3 else 1), (273, 4, 1, 0), (277, 3, 1, samples), (278, 3, 1, height),
               (279, 4, 1, len(pixels))]
    ifd_size = 2 + 12 * len(entries) + 4
    data_at = 8 + ifd_size
    ifd = struct.pack(e + "H", len(entries))
    for tag, kind, count, value in entries:
        if tag == 273:
            value = data_at
        value_bytes = struct.pack(e + "H", value) + b"\0\0" if kind == 3 else struct.pack(e + "I", value)
        ifd += struct.pack(e + "HHI", tag, kind, count) + value_bytes
    ifd += struct.pack(e + "I", 0)
    head = (b"MM\x00*" if big_endian else b"II*\x00") + struct.pack(e + "I", 8)
    return head + ifd + pixels


def sun_raster(width, height, depth):
    row = (width * depth // 8 + 1) // 2 * 2
    pixels = bytes((i * 7) & 0xFF for i in range(row * height))
    return struct.pack(">8I", 0x59A66A95, width, height, depth, len(pixels), 1, 0, 0) + pixels


def image_seeds():
    reset("image")
    w = lambda name, data: write("image", name, data)  # noqa: E731
    # PNG: every colour type, 8 and 16 bits, filters, interlacing, split IDAT.
    w("png-grey", png(4, 3, 0, 8, png_rows(4, 3, 1)))
    w("png-rgb", png(4, 3, 2, 8, png_rows(4, 3, 3, filter_type=1)))
    w("png-rgba", png(3, 3, 6, 8, png_rows(3, 3, 4, filter_type=4)))
    w("png-grey-alpha-16", png(2, 2, 4, 16, png_rows(2, 2, 4)))
    w("png-rgb-16", png(2, 2, 2, 16, png_rows(2, 2, 6, filter_type=2)))
    w("png-grey-1bit", png(8, 2, 0, 1, b"\x00\xA5\x00\x5A"))
    w("png-palette", png(2, 2, 3, 8, b"\x00\x00\x01\x00\x02\x00", palette=b"\xFF\x00\x00\x00\xFF\x00\x00\x00\xFF"))
    w("png-interlaced", png(5, 5, 2, 8, bytes(5 * 5 * 3 + 20), interlace=1))
    w("png-split-idat", png(4, 4, 0, 8, png_rows(4, 4, 1, filter_type=3), idat_split=True))
    full = png(16, 16, 2, 8, png_rows(16, 16, 3))
    w("png-truncated", full[:len(full) - 30])
    w("png-declares-100000x100000", b"\x89PNG\r\n\x1a\n"
      + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)) + png_chunk(b"IEND", b""))
    w("png-header-only", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
    # JPEG: grey and colour, two sizes; one without its end-of-image marker; one without a frame.
    w("jpeg-grey", jpeg(8, 8, 1))
    w("jpeg-colour", jpeg(16, 8, 3))
    w("jpeg-odd-size", jpeg(13, 5, 3))
    w("jpeg-truncated-no-eoi", jpeg(16, 16, 3, eoi=False))
    w("jpeg-no-frame", b"\xFF\xD8\xFF\xE0\x00\x04JF\xFF\xD9")
    # BMP: 24 and 8 bits (palette), top-down, OS/2 header, truncated.
    w("bmp-24", bmp(3, 2))
    w("bmp-8-palette", bmp(4, 2, bits=8))
    w("bmp-32-top-down", bmp(2, 2, bits=32, top_down=True))
    w("bmp-os2", bmp_os2(2, 2))
    w("bmp-truncated", bmp(8, 8)[:80])
    # TIFF: little-endian grey, big-endian RGB.
    w("tiff-le-grey", tiff(3, 2, 1))
    w("tiff-be-rgb", tiff(2, 2, 3, big_endian=True))
    # Netpbm P1..P6 (16-bit too) and PFM.
    w("pbm-p1", b"P1\n# comment\n3 2\n0 1 0\n1 0 1\n")
    w("pgm-p2", b"P2\n2 2\n255\n0 64\n128 255\n")
    w("ppm-p3", b"P3\n2 1\n255\n255 0 0 0 0 255\n")
    w("pbm-p4", b"P4\n10 2\n" + b"\xAA\x40\x55\x80")
    w("pgm-p5", b"P5 3 2 255\n" + bytes(range(0, 240, 40)))
    w("pgm-p5-16bit", b"P5\n2 2\n65535\n" + struct.pack(">4H", 0, 1000, 40000, 65535))
    w("ppm-p6", b"P6\n2 2\n255\n" + bytes(range(12)))
    w("pfm-colour", b"PF\n2 2\n-1.0\n" + struct.pack("<12f", *[i / 12 for i in range(12)]))
    w("pfm-grey", b"Pf\n2 1\n1.0\n" + struct.pack(">2f", 0.25, 0.75))
    # Sun raster, 8 and 24 bits.
    w("sun-raster-8", sun_raster(3, 2, 8))
    w("sun-raster-24", sun_raster(2, 2, 24))
    # Radiance HDR, flat (rows shorter than 8 pixels are never run-length encoded).
    w("radiance", b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\nEXPOSURE=1.0\n\n-Y 2 +X 3\n"
      + bytes([128, 64, 32, 129] * 6))
    w("radiance-x-first", b"#?RGBE\nFORMAT=32-bit_rle_rgbe\n\n+X 2 -Y 1\n" + bytes([100, 100, 100, 128] * 2))
    # JPEG 2000: a codestream's main header (SIZ, COD, QCD) and one empty tile, bare and in JP2 boxes (no
    # entropy-coded data: OpenJPEG reads the headers and fails on the tile).
    j2k = (b"\xFF\x4F\xFF\x51\x00\x29\x00\x00" + struct.pack(">8I", 4, 4, 0, 0, 4, 4, 0, 0) + b"\x00\x01\x07\x01\x01"
           + b"\xFF\x52\x00\x0C\x00\x00\x00\x01\x00\x05\x04\x04\x00\x01" + b"\xFF\x5C\x00\x04\x40\x40"
           + b"\xFF\x90\x00\x0A" + struct.pack(">HIBB", 0, 14, 0, 1) + b"\xFF\x93\x00\x00\xFF\xD9")
    w("j2k-empty-tile", j2k)

    def box(kind, body):
        return struct.pack(">I", 8 + len(body)) + kind + body
    w("jp2-empty-tile", b"\x00\x00\x00\x0CjP  \r\n\x87\n" + box(b"ftyp", b"jp2 \x00\x00\x00\x00jp2 ")
      + box(b"jp2h", box(b"ihdr", struct.pack(">IIHBBBB", 4, 4, 1, 7, 7, 0, 0)) + box(b"colr", b"\x01\x00\x00\x00\x00\x00\x11"))
      + box(b"jp2c", j2k))
    # WebP: a VP8X header only; the two WebP files of tests/data/bad are below.
    w("webp-vp8x-header", b"RIFF" + struct.pack("<I", 22) + b"WEBPVP8X" + struct.pack("<I", 10) + bytes(4)
      + (3).to_bytes(3, "little") + (1).to_bytes(3, "little"))
    # GIF (refused: no decoder in OpenCV 4.6): a whole 1x1 GIF89a and a bare header.
    w("gif89a", b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xFF\xFF\xFF\x00\x00\x00!\xF9\x04\x01\x00\x00\x00\x00"
      b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
    w("gif87a-header", b"GIF87a\x20\x00\x10\x00")
    # Not images.
    w("garbage", bytes((i * 131 + 7) & 0xFF for i in range(200)))
    w("text", b"This is a text file, not an image.\n")
    w("empty", b"")
    # The repository's small image fixtures.
    for f in sorted((ROOT / "tests/data/bad").glob("image_*")):
        data = f.read_bytes()
        if 0 < len(data) <= 4096:
            w("fixture-" + f.name, data)
    w("fashion-mnist", (ROOT / "resources/samples/fashion-mnist/test-0000-ankle-boot.png").read_bytes())


def msgpack(value):
    """MessagePack of None, bool, int, float, str, bytes, list and dict: enough for the remote frame seeds."""
    if value is None:
        return b"\xc0"
    if value is True or value is False:
        return b"\xc3" if value else b"\xc2"
    if isinstance(value, int):
        if 0 <= value < 128:
            return bytes([value])
        if -32 <= value < 0:
            return struct.pack("b", value)
        return b"\xd3" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"\xcb" + struct.pack(">d", value)
    if isinstance(value, str):
        data = value.encode()
        return (bytes([0xA0 | len(data)]) if len(data) < 32 else b"\xda" + struct.pack(">H", len(data))) + data
    if isinstance(value, bytes):
        return b"\xc6" + struct.pack(">I", len(value)) + value
    if isinstance(value, list):
        return b"\xdc" + struct.pack(">H", len(value)) + b"".join(msgpack(v) for v in value)
    if isinstance(value, dict):
        return b"\xde" + struct.pack(">H", len(value)) + b"".join(msgpack(k) + msgpack(v) for k, v in value.items())
    raise TypeError(value)


def remote_frame(message, content_type=True):
    body = msgpack(message)
    header = f"Content-Length: {len(body)}\r\n" + ("Content-Type: application/msgpack\r\n" if content_type else "")
    return header.encode() + b"\r\n" + body


def remote_frame_seeds():
    """Byte 0: the piece size; then a stream of frames (fuzz_remote_frame.cpp)."""
    reset("remote_frame")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"protocol": 1, "client": "attnscope 0.4"}}
    tensor = {"dtype": "float32", "shape": [2, 2], "data": struct.pack("<4f", 0.25, 0.5, -1.0, 3.0)}
    rows = {"jsonrpc": "2.0", "id": 3, "result": {"rows": tensor}}
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "garbled"}}
    write("remote_frame", "hello", b"\x00" + remote_frame(hello))
    write("remote_frame", "hello-in-bytes", b"\x00" + remote_frame(hello, content_type=False))
    write("remote_frame", "three-in-pieces", b"\x06" + remote_frame(hello) + remote_frame(rows) + remote_frame(error))
    write("remote_frame", "tensor-short", b"\x3f" + remote_frame({"jsonrpc": "2.0", "id": 4, "result": {"t": dict(tensor, shape=[3, 2])}}))
    write("remote_frame", "body-only", b"\x00" + msgpack(rows))
    write("remote_frame", "truncated", b"\x01" + remote_frame(hello)[:-5])
    write("remote_frame", "huge-length", b"\x00Content-Length: 99999999999\r\n\r\n")
    write("remote_frame", "deep", b"\x00" + f"Content-Length: 300\r\n\r\n".encode() + b"\x91" * 300)


if __name__ == "__main__":
    safetensors_seeds()
    config_seeds()
    npy_seeds()
    torch_checkpoint_seeds()
    image_seeds()
    remote_frame_seeds()
    for folder in sorted(CORPUS.iterdir()):
        print(f"{folder.name}: {len(list(folder.iterdir()))} files")
