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


#: distribution names (pyproject.toml) whose import name differs
IMPORT_NAME = {"pillow": "PIL", "stable-baselines3": "stable_baselines3", "sb3-contrib": "sb3_contrib"}


def _distribution(requirement: str) -> str:
    name = requirement.split(";")[0].split("[")[0]
    for mark in "<>=!~ ":
        name = name.split(mark)[0]
    return name.strip().lower()


def test_the_extras_launcher_knows_what_each_extra_installs() -> None:
    """``burako_env.extras.EXTRAS`` names, per extra, the packages pyproject.toml's extra installs (by
    import name; ``open_spiel`` also installs ``pyspiel``): a command run without them names the extra."""
    from burako_env.extras import EXTRAS

    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, packages in EXTRAS.items():
        declared = {IMPORT_NAME.get(d, d.replace("-", "_")) for d in map(_distribution, optional[extra])}
        assert declared == set(packages) - {"pyspiel"}, extra


def test_every_console_script_names_its_missing_extra_instead_of_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core-only install ran ``burako-train`` into a ``ModuleNotFoundError`` traceback. Every
    ``[project.scripts]`` entry goes through ``run_command``, whose module has a ``main``; without a
    package of an extra the command says which extra to install and exits 1. Any other missing module
    is a fault and keeps its traceback."""
    import importlib
    import subprocess
    import sys

    from burako_env import extras

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    launched: dict[str, str] = {}
    for command, target in scripts.items():
        module_name, _, function = target.partition(":")
        launcher = importlib.import_module(module_name)
        assert launcher.run_command is extras.run_command, command
        with monkeypatch.context() as patch:
            patch.setattr(launcher, "run_command", lambda module, name, extra=None: launched.update({name: module}))
            getattr(launcher, function)()
        assert callable(importlib.import_module(launched[command]).main), command
    assert set(launched) == set(scripts)

    # a fresh interpreter in which ``import torch`` fails as on a core-only install
    blocked = "import sys; sys.modules['torch'] = None; sys.argv = ['burako-train', '--help']; "
    launch = "from training.commands import train; sys.exit(train())"
    done = subprocess.run([sys.executable, "-c", blocked + launch], capture_output=True, text=True, cwd=ROOT)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "burako-train: the package 'torch' is not installed; it comes with the [train] extra: "
        "pip install 'burako-env[train]' (from a checkout: pip install -e '.[train]')\n"
    )
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        extras.run_command("no_such_module", "burako-nothing", "train")
