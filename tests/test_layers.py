"""Imports point one way: burako_env <- agents <- training (docs/architecture.md, layers).

Every ``.py`` under ``burako_env/``, ``agents/`` and ``training/`` is parsed
(AST, so imports inside functions count too), with the modules named by
``importlib.import_module("...")`` / ``__import__("...")`` string literals,
and no module may import a package above its own layer. Also: the agent
names the env resolves through entry points (pyproject.toml) are the
registry's own.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: each package, and the packages it must not import (the layers above it)
LAYERS: dict[str, tuple[str, ...]] = {
    "burako_env": ("agents", "training", "burako_web"),
    "agents": ("training", "burako_web"),
    "training": ("burako_web",),
}

_IMPORT_FUNCTIONS = {"import_module", "__import__"}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in a file: ``import x``, ``from x
    import y`` (relative ones resolved), at any depth, and string literals given
    to ``importlib.import_module`` or ``__import__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            if name in _IMPORT_FUNCTIONS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
    return found


def layer_violations(root: Path) -> list[str]:
    """Every import that points up a layer, as ``path:line: package imports module``."""
    problems: list[str] = []
    for package, above in LAYERS.items():
        for path in sorted((root / package).rglob("*.py")):
            for line, module in imported_modules(path, root):
                top = module.split(".")[0]
                if top in above:
                    where = path.relative_to(root).as_posix()
                    problems.append(f"{where}:{line}: {package} imports {module} (a layer above it)")
    return problems


def test_imports_point_one_way() -> None:
    """No import from burako_env to agents/training/burako_web, nor from agents to training."""
    problems = layer_violations(ROOT)
    assert not problems, "imports against the layers (docs/architecture.md):\n" + "\n".join(problems)
    # the walk really read the packages (a wrong root would pass vacuously)
    assert len(list((ROOT / "agents").rglob("*.py"))) > 5 and len(list((ROOT / "burako_env").rglob("*.py"))) > 10


def test_the_check_catches_every_kind_of_upward_import(tmp_path: Path) -> None:
    """The checker itself fails on violations: a top-level import, one inside a
    function, a relative import that climbs out, and an import_module literal."""
    for package in LAYERS:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "burako_env" / "sub").mkdir()
    (tmp_path / "burako_env" / "sub" / "__init__.py").write_text("")
    (tmp_path / "burako_env" / "top.py").write_text("import numpy\nfrom agents.registry import make_agent\n")
    (tmp_path / "burako_env" / "sub" / "inner.py").write_text(
        "def f():\n    import training.ppo\n    from .. import engine\n    return engine\n"
    )
    (tmp_path / "agents" / "lazy.py").write_text(
        "import importlib\n\ndef g():\n    return importlib.import_module('training.network')\n"
    )
    (tmp_path / "agents" / "fine.py").write_text("from burako_env import engine\nfrom . import lazy\n")
    (tmp_path / "training" / "fine.py").write_text("from agents import registry\nimport burako_env\n")
    problems = layer_violations(tmp_path)
    assert problems == [
        "burako_env/sub/inner.py:2: burako_env imports training.ppo (a layer above it)",
        "burako_env/top.py:2: burako_env imports agents.registry (a layer above it)",
        "agents/lazy.py:4: agents imports training.network (a layer above it)",
    ]
    assert (3, "burako_env") in imported_modules(tmp_path / "burako_env/sub/inner.py", tmp_path)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_entry_points_declare_the_registry() -> None:
    """pyproject.toml's ``burako_env.agents`` entry points (how the env resolves
    names without importing agents) are exactly ``agents.registry.AGENTS``."""
    import tomllib

    from agents.registry import AGENTS
    from burako_env.plugins import ENTRY_POINT_GROUP

    with (ROOT / "pyproject.toml").open("rb") as handle:
        declared = tomllib.load(handle)["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert declared == AGENTS
