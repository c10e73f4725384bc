"""The optional extras (pyproject.toml's ``[project.optional-dependencies]``) by the packages they
install, and the launcher of the console scripts.

A console script run on an install that lacks its extra (``pip install burako-env`` and then
``burako-train``) ended in a ``ModuleNotFoundError`` traceback. :func:`run_command` names the extra
to install instead. The core never imports the commands' modules itself: each layer's
``commands`` module hands this launcher its own module names (``training/commands.py``,
``agents/commands.py``, ``burako_web/commands.py``).
"""

from __future__ import annotations

import importlib
import sys

#: each extra and the packages it installs, by the name they are imported under (pyproject.toml
#: lists them by distribution name; tests/test_packaging.py keeps the two in step)
EXTRAS: dict[str, tuple[str, ...]] = {
    "pictures": ("PIL", "matplotlib"),
    "train": ("torch", "tensorboard", "tqdm", "matplotlib", "filelock"),
    "tournament": ("tqdm", "choix", "openskill", "scipy", "matplotlib", "filelock"),
    "analysis": ("pandas", "matplotlib", "tensorboard"),
    "web": ("starlette", "uvicorn", "websockets"),
    "ray": ("ray",),
    "sb3": ("stable_baselines3", "sb3_contrib"),
    "openspiel": ("open_spiel", "pyspiel"),
}


def extra_providing(package: str, preferred: str | None = None) -> str | None:
    """The extra that installs ``package`` (an import name): ``preferred`` if it does, else the
    first that does, else ``None`` (not an optional dependency of this project)."""
    if preferred is not None and package in EXTRAS[preferred]:
        return preferred
    return next((extra for extra, packages in EXTRAS.items() if package in packages), None)


def run_command(module: str, command: str, extra: str | None = None) -> int:
    """Run ``module.main()`` as the console script ``command`` (whose own extra is ``extra``). A
    package of an extra that is not installed ends the command with a line naming the extra to
    install (exit status 1); any other missing module is a fault and keeps its traceback."""
    try:
        return importlib.import_module(module).main()
    except ModuleNotFoundError as exc:
        package = (exc.name or "").partition(".")[0]
        needed = extra_providing(package, extra)
        if needed is None:
            raise
        print(
            f"{command}: the package {package!r} is not installed; it comes with the [{needed}] extra: "
            f"pip install 'burako-env[{needed}]' (from a checkout: pip install -e '.[{needed}]')",
            file=sys.stderr,
        )
        return 1
