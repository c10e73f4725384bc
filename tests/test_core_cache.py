"""Kernels that compile the compiled core's functions into themselves (burako_env/vector.py,
agents/fast_search.py) are recompiled after burako_env/fast.py changes: numba's disk cache keys a
kernel on its own file only, so without ``fast.refresh_dependent_caches`` they would run stale code."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import runpy
import sys
from pathlib import Path

from burako_env import fast as F

KERNEL_MODULE = """
import numba

@numba.njit(cache=True)
def double(x):
    return 2 * x
"""


def test_a_dependent_kernels_cache_is_flushed_when_the_core_changed(tmp_path: Path) -> None:
    """The first import stamps the core's hash and flushes; the same core flushes nothing; a stamp of
    another core (fast.py edited since) flushes again, and the kernel then compiles afresh instead of
    loading from the cache."""
    path = tmp_path / "dependent_kernels.py"
    path.write_text(KERNEL_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("dependent_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dependent_kernels"] = module
    try:
        spec.loader.exec_module(module)
        namespace = vars(module)
        assert F.refresh_dependent_caches("dependent_kernels", namespace)  # no stamp yet
        assert module.double(21) == 42  # compiled and saved to the cache
        stamp = tmp_path / "__pycache__" / "dependent_kernels.core-sha1"
        assert stamp.read_text(encoding="ascii") == hashlib.sha1(Path(F.__file__).read_bytes()).hexdigest()
        assert not F.refresh_dependent_caches("dependent_kernels", namespace)  # the same core
        index = next((tmp_path / "__pycache__").glob("dependent_kernels.double-*.nbi"))
        saved = index.stat().st_size
        stamp.write_text("0" * 40, encoding="ascii")  # compiled against another fast.py
        assert F.refresh_dependent_caches("dependent_kernels", namespace)
        assert index.stat().st_size < saved  # the index no longer lists the compiled overload
        assert stamp.read_text(encoding="ascii") != "0" * 40
    finally:
        del sys.modules["dependent_kernels"]


STAMPED_MODULE = """
import numba
from burako_env import fast as F

@numba.njit(cache=True)
def double(x):
    return 2 * x

FLUSHED = F.refresh_dependent_caches(__name__, globals(), ({extra!r},))
"""


def test_a_module_run_with_python_m_keeps_its_own_stamp(tmp_path: Path) -> None:
    """scripts/install.sh compiles kernels with ``python -m agents.fast_search`` and ``python -m
    agents.fast_planner``: run so, a module's ``__name__`` is ``__main__``. Its stamp must carry the
    module's own name: under ``__main__`` the two shared one stamp with different hashes, so each run
    flushed the other's caches and every install recompiled both, and the import after (the tests,
    training) found no stamp of its name and flushed them again."""
    names = ("stamped_kernels_a", "stamped_kernels_b")
    for name in names:  # two modules whose kernels compile in different files, as fast_search and fast_planner
        extra = tmp_path / f"{name}.constants"
        extra.write_text(name, encoding="utf-8")
        (tmp_path / f"{name}.py").write_text(STAMPED_MODULE.format(extra=str(extra)), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        assert [runpy.run_module(name, run_name="__main__")["FLUSHED"] for name in names] == [True, True]
        assert not (tmp_path / "__pycache__" / "__main__.core-sha1").exists()
        # again, as the next install does: each finds its own stamp, and nothing is flushed
        assert [runpy.run_module(name, run_name="__main__")["FLUSHED"] for name in names] == [False, False]
        assert [importlib.import_module(name).FLUSHED for name in names] == [False, False]
    finally:
        sys.path.remove(str(tmp_path))
        for name in names:
            sys.modules.pop(name, None)


def test_the_batched_core_and_the_fast_search_are_stamped_with_this_core() -> None:
    """The modules whose kernels inline the core's functions call the refresh at import."""
    import agents.fast_planner as fast_planner
    import agents.fast_search as fast_search
    from burako_env import vector

    digest = hashlib.sha1(Path(F.__file__).read_bytes()).hexdigest()
    # the compiled heuristics also bake in the heuristics' and the tiles' constants: their stamp covers those files
    planner_digest = hashlib.sha1(b"".join(Path(f).read_bytes() for f in (F.__file__, *fast_planner.COMPILED_IN)))
    for module, expected in ((vector, digest), (fast_search, digest), (fast_planner, planner_digest.hexdigest())):
        kernel = next(v for v in vars(module).values() if hasattr(v, "_cache") and hasattr(v, "py_func"))
        stamp = Path(kernel._cache.cache_path) / f"{module.__name__}.core-sha1"
        assert stamp.read_text(encoding="ascii") == expected, module.__name__
