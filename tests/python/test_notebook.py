"""examples/attnscope.ipynb executed as a reader runs it (nbclient, a python3 kernel that imports this attnscope):
every cell without an error, both figures drawn, the over-smoothing table of 200 images printed."""

import json
import os
import sys

import pytest

from conftest import SOURCE


def test_the_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="Debian's python3-nbformat is not installed")
    nbclient = pytest.importorskip("nbclient", reason="Debian's python3-nbclient is not installed")
    pytest.importorskip("matplotlib", reason="the notebook draws with matplotlib")
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    # A kernel of this very Python (the build tree's module on PYTHONPATH, or a venv's), not the system's python3.
    spec = tmp_path / "kernels" / "attnscope-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                                  "display_name": "attnscope test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    notebook = nbformat.read(os.path.join(SOURCE, "examples", "attnscope.ipynb"), as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="attnscope-test", resources={"metadata": {"path": SOURCE}})
    client.execute()
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 2
    text = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "fmnist-vit" in text and "fmnist-neutreno" in text and "X_12 patch-token similarity" in text
    out = os.environ.get("ATTNSCOPE_NOTEBOOK_OUT")
    if out:  # to look at the figures: the executed notebook
        nbformat.write(notebook, out)
