"""Shared by the Python module's tests (tests/python): where the sources, the CLI and ../shared are.

ctest runs them with PYTHONPATH at the build tree's python/ folder and ATTNSCOPE_CLI at the build's attnscope-cli;
`make python` runs them against the module pip installed into .venv (the CLI comparisons then use build/release's CLI
or build/headless's when one is there, and skip with their reason when neither is).
"""

import os

import pytest

SOURCE = os.environ.get("ATTNSCOPE_TEST_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(SOURCE, "tests", "golden")
SAMPLES = os.path.join(SOURCE, "resources", "samples", "fashion-mnist")
SHARED = os.environ.get("ATTNSCOPE_SHARED_DIR") or os.path.join(SOURCE, "..", "shared")


def golden_tolerance(ref):
    """The golden files' tolerance (tests/golden/README.md): max|a - ref| <= 1e-4 max|ref|."""
    import numpy

    return 1e-4 * float(numpy.abs(ref).max())


def near(actual, expected, rel=1e-4, floor=1e-2):
    """AnalysesTest.cpp's rule for one number: relative 1e-4, absolute 1e-6 below 1e-2; NaN equals NaN."""
    import math

    if math.isnan(expected):
        return math.isnan(actual)
    return abs(actual - expected) <= rel * max(abs(expected), floor)


@pytest.fixture(scope="session")
def cli():
    candidates = [os.environ.get("ATTNSCOPE_CLI")] + [os.path.join(SOURCE, "build", p, "app", "attnscope-cli") for p in ("release", "headless")]
    import subprocess

    import attnscope

    for path in candidates:
        if path and os.access(path, os.X_OK):
            version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            if "(LibTorch %s)" % attnscope._native.torch_version not in version:
                pytest.skip("%s is built against another LibTorch (%s) than this module (%s): its numbers differ in the last digits"
                            % (path, version.strip(), attnscope._native.torch_version))
            return path
    pytest.skip("no attnscope-cli to compare with (set ATTNSCOPE_CLI, or build build/release or build/headless)")


@pytest.fixture(scope="session")
def fmnist():
    import attnscope

    return attnscope.load("builtin:fmnist-vit")


@pytest.fixture(scope="session")
def samples():
    return sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES) if f.endswith(".png"))
