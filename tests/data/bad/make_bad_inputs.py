#!/usr/bin/env python3
"""Writes the bad-input corpus of tests/data/bad: broken models and images, each with the result it must give.

    /work/venv/bin/python tests/data/bad/make_bad_inputs.py        # needs numpy and Pillow

Every file is made here from scratch (a tiny timm-named ViT, images drawn with numpy/Pillow or written byte by
byte), so the corpus is reproducible and each file stays a few KB. expected.json lists every case: the file (or
folder), its kind (model | image), what it covers, and either the substring its one-line error must contain or,
for unusual but valid files, what it must decode to. BadInputTest.cpp (engine_tests) walks it; the tests need
no Python. Rerunning this script rewrites the same bytes.
"""
import io
import json
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parent
CASES = []


def case(name, kind, covers, error=None, **decoded):
    entry = {"file": name, "kind": kind, "covers": covers}
    if error is not None:
        entry["error"] = error
    else:
        entry["ok"] = decoded
    CASES.append(entry)


# --------------------------------------------------------------------------------------------------- models
# A timm ViT small enough to keep every variant near 10 KB: 8x8 RGB input, patch 4 (4 patches + CLS),
# width 16, 2 heads, 1 block, MLP 32, 3 classes.
D, HEADS, MLP, P, IMG, K = 16, 2, 32, 4, 8, 3
N = 1 + (IMG // P) ** 2
CONFIG = {
    "architecture": "vit_tiny_bad_input_corpus",
    "num_classes": K,
    "global_pool": "token",
    "model_args": {"img_size": IMG, "patch_size": P, "embed_dim": D, "depth": 1, "num_heads": HEADS, "mlp_ratio": MLP / D},
    "label_names": ["a", "b", "c"],
}
METADATA = {"num_heads": str(HEADS), "image_size": str(IMG)}


def base_tensors():
    rng = np.random.RandomState(0)
    shapes = {
        "cls_token": (1, 1, D),
        "pos_embed": (1, N, D),
        "patch_embed.proj.weight": (D, 3, P, P),
        "patch_embed.proj.bias": (D,),
        "blocks.0.norm1.weight": (D,),
        "blocks.0.norm1.bias": (D,),
        "blocks.0.attn.qkv.weight": (3 * D, D),
        "blocks.0.attn.qkv.bias": (3 * D,),
        "blocks.0.attn.proj.weight": (D, D),
        "blocks.0.attn.proj.bias": (D,),
        "blocks.0.norm2.weight": (D,),
        "blocks.0.norm2.bias": (D,),
        "blocks.0.mlp.fc1.weight": (MLP, D),
        "blocks.0.mlp.fc1.bias": (MLP,),
        "blocks.0.mlp.fc2.weight": (D, MLP),
        "blocks.0.mlp.fc2.bias": (D,),
        "norm.weight": (D,),
        "norm.bias": (D,),
        "head.weight": (K, D),
        "head.bias": (K,),
    }
    return {name: (rng.standard_normal(shape) * 0.05).astype("<f4") for name, shape in shapes.items()}


def header_and_data(tensors, metadata=METADATA):
    """The safetensors header (as a dict, so that a case can break it) and the data block."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        raw = tensors[name].tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return header, data


def safetensors_bytes(header, data, header_text=None):
    text = (header_text if header_text is not None else json.dumps(header, separators=(",", ":"))).encode()
    return struct.pack("<Q", len(text)) + text + data


def write(name, payload):
    path = OUT / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)


def model_file(name, covers, error, header=None, data=None, raw=None):
    if raw is None:
        h, d = header_and_data(base_tensors())
        raw = safetensors_bytes(header if header is not None else h, data if data is not None else d)
    write(name, raw)
    case(name, "model", covers, error, **({} if error else {"loads": True}))


def model_folder(name, covers, error, config=CONFIG, tensors=None, config_text=None):
    h, d = header_and_data(tensors if tensors is not None else base_tensors(), metadata=None)
    write(f"{name}/model.safetensors", safetensors_bytes(h, d))
    write(f"{name}/config.json", (config_text if config_text is not None else json.dumps(config, indent=1)).encode())
    case(name, "model", covers, error, **({} if error else {"loads": True}))


def edited(edit):
    h, d = header_and_data(base_tensors())
    edit(h)
    return h


def make_models():
    h, d = header_and_data(base_tensors())
    good = safetensors_bytes(h, d)
    model_file("model_ok.safetensors", "control: the intact corpus model loads (bare file, heads from metadata)", None, raw=good)
    model_folder("model_ok_folder", "control: the intact model as a folder with a timm config.json", None)

    model_file("model_empty.safetensors", "empty file", "shorter than the 8-byte header length", raw=b"")
    model_file("model_truncated_header_length.safetensors", "truncated header (3 of the 8 length bytes)",
               "shorter than the 8-byte header length", raw=b"\x10\x00\x00")
    model_file("model_header_beyond_file.safetensors", "header length beyond the end of the file",
               "is beyond the end of the file", raw=good[:200])
    model_file("model_huge_header_length.safetensors", "header length of 2^60", "exceeds the limit",
               raw=struct.pack("<Q", 1 << 60) + b"{}")
    model_file("model_invalid_json.safetensors", "header is not valid JSON", "invalid safetensors header JSON",
               raw=struct.pack("<Q", 9) + b'{"a": [1,' + d)
    model_file("model_header_not_object.safetensors", "header is a JSON array, not an object",
               "its header does not start with '{'", raw=safetensors_bytes(None, d, header_text="[1, 2, 3]"))
    model_file("model_not_safetensors.safetensors", "a text file named .safetensors",
               "not a safetensors file", raw=b"this is a README, not a model\n" * 4)

    def negative(h):
        h["cls_token"]["data_offsets"] = [-64, 0]

    def overlapping(h):
        h["cls_token"]["data_offsets"] = list(h["head.bias"]["data_offsets"])
        h["cls_token"]["shape"] = [1, 1, K]

    def beyond(h):
        end = len(d)
        h["cls_token"]["data_offsets"] = [end, end + 4 * D]

    def reversed_offsets(h):
        b, e = h["cls_token"]["data_offsets"]
        h["cls_token"]["data_offsets"] = [e, b]

    def dtype(h):
        h["cls_token"]["dtype"] = "F8_E9"

    def mismatch(h):
        h["cls_token"]["shape"] = [1, 1, D + 1]

    def negative_dim(h):
        h["cls_token"]["shape"] = [1, -1, D]

    def wrong_shape(h):
        h["blocks.0.attn.qkv.weight"]["shape"] = [D, 3 * D]  # same byte count, transposed

    def no_dtype(h):
        del h["cls_token"]["dtype"]

    def metadata_not_int(h):
        h["__metadata__"]["num_heads"] = "two"

    model_file("model_negative_offsets.safetensors", "negative data offsets", "are not two non-negative integers", header=edited(negative))
    model_file("model_overlapping_offsets.safetensors", "two tensors sharing bytes", "data overlaps", header=edited(overlapping))
    model_file("model_offsets_beyond_data.safetensors", "offsets past the end of the data", "reach beyond the data", header=edited(beyond))
    model_file("model_offsets_reversed.safetensors", "end offset before begin offset", "end before they begin", header=edited(reversed_offsets))
    model_file("model_unknown_dtype.safetensors", "dtype unknown", "cls_token: unknown dtype", header=edited(dtype))
    model_file("model_entry_without_dtype.safetensors", "header entry lacking dtype", "lacks dtype, shape or data_offsets", header=edited(no_dtype))
    model_file("model_shape_byte_mismatch.safetensors", "shape disagrees with the byte count",
               f"cls_token: shape [1, 1, {D + 1}] of F32 needs {4 * (D + 1)} bytes", header=edited(mismatch))
    model_file("model_negative_dimension.safetensors", "negative dimension in a shape",
               "has a negative or non-integer dimension", header=edited(negative_dim))
    model_file("model_wrong_tensor_shape.safetensors", "a tensor of the wrong shape (same bytes)",
               f"blocks.0.attn.qkv.weight: shape [{D}, {3 * D}], expected [{3 * D}, {D}]", header=edited(wrong_shape))
    model_file("model_metadata_not_integer.safetensors", "metadata num_heads that is not a number",
               'metadata num_heads = "two" is not an integer', header=edited(metadata_not_int))
    model_file("model_truncated_data.safetensors", "data cut short", "truncated file?", raw=good[:-100])

    for name, value, covers in (("model_nan_weight.safetensors", np.nan, "a NaN weight"),
                                ("model_inf_weight.safetensors", np.inf, "an Inf weight")):
        t = base_tensors()
        t["blocks.0.norm2.weight"][3] = value
        h2, d2 = header_and_data(t)
        model_file(name, covers, "blocks.0.norm2.weight holds NaN or Inf", raw=safetensors_bytes(h2, d2))

    t = base_tensors()
    del t["blocks.0.mlp.fc2.bias"]
    h2, d2 = header_and_data(t)
    model_file("model_missing_tensor.safetensors", "a tensor missing", "missing tensors: blocks.0.mlp.fc2.bias",
               raw=safetensors_bytes(h2, d2))
    t = base_tensors()
    t["blocks.0.attn.rel_pos_bias"] = np.ones(4, "<f4")
    h2, d2 = header_and_data(t)
    model_file("model_extra_tensor.safetensors", "an extra tensor", "unexpected tensors: blocks.0.attn.rel_pos_bias",
               raw=safetensors_bytes(h2, d2))
    h2, d2 = header_and_data({"encoder.conv1.weight": np.ones((4, 3, 3, 3), "<f4"), "fc.weight": np.ones((2, 4), "<f4")})
    model_file("model_unknown_architecture.safetensors", "unknown architecture (a CNN's tensor names)",
               "no known ViT convention", raw=safetensors_bytes(h2, d2))

    bad_heads = json.loads(json.dumps(CONFIG))
    bad_heads["model_args"]["num_heads"] = 3
    model_folder("model_heads_not_dividing_width", "config: heads not dividing the width", "3 heads do not divide width 16", config=bad_heads)
    hf = {"model_type": "vit", "hidden_size": D, "num_hidden_layers": 1, "num_attention_heads": HEADS, "intermediate_size": MLP,
          "patch_size": 16, "image_size": IMG, "num_channels": 3}
    model_folder("model_config_wrong_patch_size", "config: patch size contradicting the tensors", "patch_size 16 contradicts", config=hf)
    deep = dict(hf, patch_size=P, num_hidden_layers=12)
    model_folder("model_config_wrong_depth", "config: depth contradicting the tensors", "num_hidden_layers 12 contradicts the checkpoint's 1", config=deep)
    model_folder("model_config_unknown_model_type", "config: unknown architecture (model_type resnet)",
                 'model_type "resnet" is not a vision transformer', config=dict(hf, patch_size=P, model_type="resnet"))
    model_folder("model_config_model_type_not_string", "config: model_type of the wrong JSON type",
                 "config.json: a value has the wrong JSON type", config=dict(hf, patch_size=P, model_type=7))
    model_folder("model_config_invalid_json", "config: not valid JSON", "invalid JSON", config_text='{"architecture": "vit_tiny", ')

    # Families attnscope does not run (docs/models.md, "Families"): refused naming what they lack, never run as the
    # nearest family they resemble.
    model_folder("model_family_rope", "config: a timm architecture with a rotary embedding beside blocks attnscope does not run",
                 "vit_pe_core_base_patch16_224: attnscope does not run a norm before the first block",
                 config=dict(CONFIG, architecture="vit_pe_core_base_patch16_224"))
    model_folder("model_family_dinov3_with_table", "config: DINOv3 (rotary positions) over tensors with a position table",
                 "the model's positions are rotary alone (timm's vit_small_patch16_dinov3), but the checkpoint has a pos_embed tensor",
                 config=dict(CONFIG, architecture="vit_small_patch16_dinov3"))
    without_table = {k: v for k, v in base_tensors().items() if k != "pos_embed"}
    model_folder("model_family_rope_mixed_no_freqs", "config: RoPE-Mixed over tensors without its learned frequencies",
                 "rope.freqs", config=dict(CONFIG, architecture="vit_small_patch16_rope_mixed_224"), tensors=without_table)
    gated = dict(base_tensors())
    gated["blocks.0.mlp.fc1.weight"] = np.concatenate([gated["blocks.0.mlp.fc1.weight"]] * 2)
    gated["blocks.0.mlp.fc1.bias"] = np.concatenate([gated["blocks.0.mlp.fc1.bias"]] * 2)
    model_folder("model_gated_mlp_unstated", "tensors: a gated MLP (fc1 twice what fc2 reads) whose activation nothing states",
                 "a gated MLP (SwiGLU), whose activation nothing states", tensors=gated)
    model_folder("model_family_eva02_plain_mlp", "config: EVA-02 (a gated MLP) over tensors of a plain MLP",
                 "the architecture has a gated MLP (SwiGLU), but blocks.0.mlp.fc1.weight is not twice as wide",
                 config=dict(CONFIG, architecture="eva02_tiny_patch14_224"))
    model_folder("model_config_rope_variant_unknown", "config: model_args naming a rotary variant attnscope does not know",
                 'model_args.rope_type = "spiral" changes the model in a way attnscope does not run',
                 config=dict(CONFIG, model_args=dict(CONFIG["model_args"], rope_type="spiral")))
    model_folder("model_family_hf_swin", "config: a Hugging Face model_type naming a Swin over a ViT's tensors",
                 'model_type "swin" names a Swin, but the tensors are not a Swin\'s',
                 config=dict(hf, patch_size=P, model_type="swin"))
    model_folder("model_config_model_args_unsupported", "config: a timm model_args key the tensors do not show (qk_norm)",
                 "model_args.qk_norm = true changes the model in a way attnscope does not run",
                 config=dict(CONFIG, model_args=dict(CONFIG["model_args"], qk_norm=True)))
    t = base_tensors()
    del t["pos_embed"]
    h2, d2 = header_and_data(t)
    model_file("model_no_position_table.safetensors", "no pos_embed and nothing stating the position scheme",
               "no position embedding tensor (pos_embed), and nothing states the model has none",
               raw=safetensors_bytes(h2, d2))
    # A valid file whose header length's low byte is 0x80, a pickle's first byte: read as safetensors by its structure.
    text = json.dumps(h, separators=(",", ":"))
    text += " " * ((0x80 - len(text)) % 256)
    model_file("model_header_length_0x80.safetensors", "control: a valid file whose first byte is 0x80 (a pickle's PROTO)",
               None, raw=struct.pack("<Q", len(text)) + text.encode() + d)

    write("model_no_model_folder/README.txt", b"A folder with no checkpoint in it.\n")
    case("model_no_model_folder", "model", "a directory without a model", "no model in this folder")

    # A PyTorch checkpoint whose pickle names os.system: the restricted unpickler refuses it, nothing runs.
    pickle = b"\x80\x02cos\nsystem\nq\x00X\x0b\x00\x00\x00touch pwnedq\x01\x85q\x02Rq\x03."
    buf = io.BytesIO()
    import zipfile
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        info = zipfile.ZipInfo("archive/data.pkl", date_time=(2020, 1, 1, 0, 0, 0))
        z.writestr(info, pickle)
        z.writestr(zipfile.ZipInfo("archive/version", date_time=(2020, 1, 1, 0, 0, 0)), b"3\n")
    write("model_pickle_runs_code.pt", buf.getvalue())
    case("model_pickle_runs_code.pt", "model", "a .pt whose pickle would call os.system (never executed)", "no code is run")


# --------------------------------------------------------------------------------------------------- images
def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(width, height, bit_depth, colour_type, rows, idat=None):
    """A PNG written byte by byte (for sizes and depths Pillow will not write); rows: raw scanlines."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    if idat is None:
        idat = zlib.compress(b"".join(b"\x00" + r for r in rows), 9)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def pil_bytes(image, fmt, **kw):
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


def gradient(width, height):
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), np.full_like(x, 128)], -1).astype(np.uint8)


def patch_jpeg_size(jpeg, width, height):
    """Rewrites the frame header's height and width of a baseline JPEG."""
    i = jpeg.index(b"\xff\xc0")
    return jpeg[:i + 5] + struct.pack(">HH", height, width) + jpeg[i + 9:]


def image(name, covers, payload, error=None, **decoded):
    write(name, payload)
    case(name, "image", covers, error, **decoded)


def make_images():
    photo = Image.fromarray(gradient(64, 48))
    noisy = Image.fromarray(np.random.RandomState(1).randint(0, 256, (64, 64, 3), dtype=np.uint8))
    png = pil_bytes(noisy, "PNG")
    jpg = pil_bytes(noisy, "JPEG", quality=90)

    image("image_ok.png", "control: an ordinary RGB PNG decodes", pil_bytes(photo, "PNG"), width=64, height=48, channels=3,
          pixel=[0, 0, 128])
    image("image_empty.png", "empty file", b"", "empty file")
    image("image_text.png", "text renamed .png", b"This is a text file with a .png suffix.\n", "not an image")
    image("image_random_bytes.jpg", "random bytes named .jpg", np.random.RandomState(2).randint(0, 256, 512, dtype=np.uint8).tobytes(),
          "not an image")
    image("image_truncated_header.png", "PNG cut inside its header", png[:14], "truncated or corrupt PNG header")
    image("image_truncated.png", "PNG cut in its pixel data", png[:len(png) // 3], "corrupt or truncated PNG image")
    image("image_truncated.jpg", "JPEG cut in its scan data", jpg[:len(jpg) // 2], "truncated JPEG")
    no_frame = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\xff\xd9"
    image("image_jpeg_without_frame.jpg", "JPEG with no frame header", no_frame, "truncated or corrupt JPEG header")
    bad_crc = bytearray(png)
    idat = bytes(bad_crc).index(b"IDAT")
    bad_crc[idat + 10] ^= 0xFF
    image("image_bad_crc.png", "PNG whose pixel data fails its CRC", bytes(bad_crc), "corrupt or truncated PNG image")
    image("image_zero_size.png", "zero-size PNG (0 x 16 declared)", png_bytes(0, 16, 8, 0, []), "declares zero size (0x16)")
    # 30000 x 30000 declared, ten rows of data: a decoder that believed the header would allocate 2.7 GB.
    image("image_enormous.png", "enormous PNG (30000 x 30000 declared)",
          png_bytes(30000, 30000, 8, 2, [bytes(3 * 30000)] * 10), "declares 30000x30000 pixels, more than the budget")
    image("image_enormous.jpg", "enormous JPEG (30000 x 30000 declared)", patch_jpeg_size(jpg, 30000, 30000),
          "declares 30000x30000 pixels, more than the budget")
    bmp = pil_bytes(Image.fromarray(gradient(16, 16)), "BMP")
    image("image_enormous.bmp", "enormous BMP (30000 x 30000 declared)", bmp[:18] + struct.pack("<ii", 30000, 30000) + bmp[26:],
          "declares 30000x30000 pixels, more than the budget")
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (29999).to_bytes(3, "little") * 2
    image("image_enormous.webp", "enormous WebP (30000 x 30000 declared)", b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x,
          "declares 30000x30000 pixels, more than the budget")
    image("image_truncated.bmp", "BMP cut in its pixel data", bmp[:len(bmp) // 2], "corrupt or truncated BMP image")

    deep = ((np.arange(8 * 6, dtype=np.uint16).reshape(6, 8) + 1) * 1300).astype(">u2")
    image("image_16bit_grey.png", "16-bit grey PNG (valid: scaled to 8 bits)", png_bytes(8, 6, 16, 0, [r.tobytes() for r in deep]),
          width=8, height=6, channels=1, pixel=[5])
    deep_rgb = np.zeros((4, 5, 3), ">u2")
    deep_rgb[..., 0] = 65535
    deep_rgb[..., 2] = 257 * 100
    image("image_16bit_rgb.png", "16-bit RGB PNG (valid: scaled to 8 bits)", png_bytes(5, 4, 16, 2, [r.tobytes() for r in deep_rgb]),
          width=5, height=4, channels=3, pixel=[255, 0, 100])
    red = Image.new("RGB", (16, 16), (255, 0, 0)).convert("CMYK")
    image("image_cmyk.jpg", "CMYK JPEG (valid: converted to RGB)", pil_bytes(red, "JPEG", quality=95), width=16, height=16, channels=3,
          pixel=[255, 0, 0], tolerance=8)
    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[..., 3] = 0
    rgba[4:, :, 3] = 255
    image("image_rgba.png", "RGBA PNG (valid: transparent pixels composited on white)", pil_bytes(Image.fromarray(rgba, "RGBA"), "PNG"),
          width=8, height=8, channels=3, pixel=[255, 255, 255])
    la = np.zeros((4, 4, 2), np.uint8)
    la[..., 0] = 10
    la[..., 1] = 255
    image("image_grey_alpha.png", "grey + alpha PNG (valid)", pil_bytes(Image.fromarray(la, "LA"), "PNG"), width=4, height=4, channels=1,
          pixel=[10])
    frames = [Image.new("RGB", (12, 10), c) for c in ((255, 0, 0), (0, 0, 255))]
    image("image_animated.gif", "animated GIF (no GIF decoder in OpenCV 4.6)", pil_bytes(frames[0], "GIF", save_all=True,
          append_images=frames[1:], duration=100, loop=0), "GIF images are not supported")
    image("image_animated.png", "animated PNG (valid: the first frame is read)", pil_bytes(frames[0], "PNG", save_all=True,
          append_images=frames[1:], duration=100, loop=0), width=12, height=10, channels=3, pixel=[255, 0, 0])
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    image("image_exif_rotated.jpg", "JPEG with EXIF orientation 6 (valid: rotated, 8x4 stored -> 4x8)",
          pil_bytes(Image.fromarray(gradient(8, 4)), "JPEG", quality=95, exif=exif.tobytes()), width=4, height=8, channels=3)
    image("image_png_named.jpg", "a PNG with a .jpg suffix (valid: recognised by content)", pil_bytes(photo, "PNG"), width=64, height=48,
          channels=3)
    image("image_palette.png", "palette PNG with a transparent entry (valid)",
          pil_bytes(Image.new("P", (6, 6), 1), "PNG", transparency=0), width=6, height=6, channels=3)
    image("image_ok.webp", "lossless WebP (valid)", pil_bytes(Image.fromarray(gradient(10, 10)), "WEBP", lossless=True), width=10, height=10,
          channels=3, pixel=[0, 0, 128])


def main():
    for entry in OUT.iterdir():
        if entry.name.startswith(("model_", "image_")):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    make_models()
    make_images()
    for path in OUT.rglob("*"):
        assert not path.is_file() or path.stat().st_size < 100_000, path
    (OUT / "expected.json").write_text(json.dumps({"cases": CASES}, indent=1) + "\n")
    print(f"{len(CASES)} cases: {sum(c['kind'] == 'model' for c in CASES)} models, {sum(c['kind'] == 'image' for c in CASES)} images")


if __name__ == "__main__":
    main()
