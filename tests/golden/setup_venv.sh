#!/bin/sh
# Create the Python environment used by make_golden.py for the timm and
# transformers fixtures.  Debian 12: needs python3-torch (1.13), python3-torchvision
# (0.14), python3-pil and python3-venv from apt; timm/transformers come from PyPI.
# The venv sees the system torch/torchvision/numpy (--system-site-packages); pip
# must not replace them (the check at the end fails if it did).
set -eu
VENV=${VENV:-/work/venv}
/usr/bin/python3 -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install --quiet \
    "timm==1.0.9" "transformers==4.40.2" "safetensors==0.8.0" \
    "huggingface_hub==0.36.2" "tokenizers==0.19.1" "numpy<2"
"$VENV/bin/python" - <<'PY'
import numpy, torch, torchvision, timm, transformers, safetensors
assert torch.__file__.startswith("/usr/lib/python3/"), torch.__file__
assert numpy.__file__.startswith("/usr/lib/python3/"), numpy.__file__
print("ok: torch", torch.__version__, "torchvision", torchvision.__version__, "numpy", numpy.__version__,
      "timm", timm.__version__, "transformers", transformers.__version__, "safetensors", safetensors.__version__)
PY
