"""docs/python.md's worked example, run as written: every ```python block of "A worked example", in order, from a
folder that has the repository's resources/ (so that its relative paths hold) and nothing else."""

import os
import re

import pytest

from conftest import SOURCE


def example_blocks():
    text = open(os.path.join(SOURCE, "docs", "python.md")).read()
    section = text.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_worked_example_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib", reason="the example draws with matplotlib")
    blocks = example_blocks()
    assert len(blocks) >= 4
    os.symlink(os.path.join(SOURCE, "resources"), tmp_path / "resources")
    monkeypatch.chdir(tmp_path)
    scope = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), scope)
    printed = capsys.readouterr().out
    assert "Prediction(index=9, label='Ankle boot'" in printed
    assert "['fmnist-vit', 'fmnist-neutreno']" in printed
    assert (tmp_path / "fmnist-run" / "token_similarity.csv").is_file()
    assert (tmp_path / "fmnist-run" / "runs" / "fmnist-neutreno" / "token_similarity.csv").is_file()
    assert (tmp_path / "attention.png").stat().st_size > 5000
