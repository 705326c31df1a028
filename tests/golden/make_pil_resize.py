#!/usr/bin/python3
"""Writes tests/golden/pil_resize/: what PIL's Image.resize makes of two 8-bit RGB images, enlarged and reduced, with
bilinear, bicubic and nearest filters, for tests/engine/PilResizeTest.cpp (attnscope's preprocessing must give the same
pixels: docs/models.md, "Preprocessing"). Each output is also checked to be what torchvision's Resize gives a PIL image.

Debian 12's python3-pil (9.4) and python3-torchvision (0.14): /usr/bin/python3 tests/golden/make_pil_resize.py
"""
import json
import os

from PIL import Image
import torchvision.transforms as T

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pil_resize")
FILTERS = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "nearest": Image.NEAREST}
TV = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
      "nearest": T.InterpolationMode.NEAREST}

# (source, filter, (height, width))
CASES = [
    ("small", "bicubic", (224, 224)),  # a CIFAR-sized image into a 224-pixel model (torchvision's Resize((224, 224)))
    ("small", "bilinear", (224, 224)),
    ("small", "bicubic", (50, 75)),
    ("small", "nearest", (50, 75)),
    ("photo", "bilinear", (47, 61)),
    ("photo", "bicubic", (47, 61)),
    ("photo", "bicubic", (40, 250)),  # reduced along one axis, enlarged along the other
    ("photo", "nearest", (47, 61)),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    small = Image.open(os.path.join(HERE, "fixtures", "tv_timm", "image.png")).convert("RGB")  # 32x32
    photo = Image.open(os.path.join(HERE, "..", "..", "resources", "samples", "photos", "chelsea.png")).convert("RGB")
    photo = photo.crop((100, 40, 300, 190))  # 200x150
    sources = {"small": small, "photo": photo}
    for name, image in sources.items():
        image.save(os.path.join(OUT, name + ".png"))
    cases = []
    for source, filt, (h, w) in CASES:
        out = sources[source].resize((w, h), FILTERS[filt])
        assert out.tobytes() == T.Resize((h, w), interpolation=TV[filt])(sources[source]).tobytes()
        file = "%s_%s_%dx%d.png" % (source, filt, h, w)
        out.save(os.path.join(OUT, file))
        cases.append({"source": source + ".png", "filter": filt, "height": h, "width": w, "expected": file})
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main()
