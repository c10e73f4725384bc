"""Locks for output folders and files, so runs that share one refuse instead of corrupting it.

Two ``burako-eval`` runs writing the same ``--record``, two tournaments in one
``out`` folder, two processes resuming the same training run: the second one
stops at once with a clear error naming the file and the lock. The locks are
``filelock`` locks (``fcntl.flock`` on Unix, ``msvcrt.locking`` on Windows),
held by the open file: a killed process releases its lock with it, so a stale
lock never blocks a later run. The lock file itself stays (deleting it would
race with a process about to lock it); it is empty and harmless.
"""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout


class LockedError(ValueError):
    """Another process holds the lock of an output folder or file."""


def _acquire(lock_path: Path, what: str, target: Path) -> FileLock:
    lock = FileLock(str(lock_path), is_singleton=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise LockedError(
            f"another process is using {what} {str(target)!r} (it holds {str(lock_path)!r}); "
            "wait for it to finish or choose another path"
        ) from None
    return lock


def folder_lock(folder: Path, what: str) -> FileLock:
    """Lock an existing output folder (the lock file is ``.lock`` inside it)."""
    return _acquire(Path(folder) / ".lock", what, Path(folder))


def file_lock(path: Path, what: str) -> FileLock:
    """Lock an output file (the lock file is ``<name>.lock`` beside it)."""
    path = Path(path)
    return _acquire(path.with_name(path.name + ".lock"), what, path)
