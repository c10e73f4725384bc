"""The notebooks run top to bottom (small sizes: BURAKO_NOTEBOOK_SMALL=1), and ship without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_every_issue_notebook_is_there() -> None:
    names = [p.stem for p in NOTEBOOKS]
    assert names == ["01_quickstart", "02_game_analysis", "03_training_curves", "04_tournament", "05_replay"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_ships_without_outputs_and_has_one_parameter_cell(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert [c for c in code if "parameters" in c.metadata.get("tags", [])] == [code[0]]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURAKO_NOTEBOOK_SMALL", "1")
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(
        book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute(env=dict(os.environ))
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    images = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, "every notebook shows at least one picture"
