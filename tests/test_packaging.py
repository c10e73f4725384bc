"""The package list in pyproject.toml is explicit (``burako_env.presets``
is mapped from ``configs/rules``), so a new subpackage that is not added to
it would be missing from a wheel while an editable install still finds it:
this test catches that."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("burako_env", "agents", "training", "burako_web")


def test_every_python_package_in_the_tree_is_in_pyproject_packages() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in TOP_LEVEL
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    missing = sorted(on_disk - declared)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    mapped = config.get("package-dir", {})
    for package in declared:
        folder = ROOT / mapped.get(package, package.replace(".", "/"))
        if package not in mapped and not any(package.startswith(m + ".") for m in mapped):
            assert folder.is_dir(), f"pyproject.toml lists {package}, but {folder} does not exist"
