"""Output files the command-line tools write: checked before any work, written whole.

A path given on the command line is checked when the command starts, so a
typo costs nothing, not the evaluation or tournament it would have ended.
Summaries and reports are written whole or not at all, with
:func:`write_text_atomic` (``burako_env.atomic_file``, which checkpoints share:
a temporary file renamed over the target; a symbolic link stays a link).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from burako_env.atomic_file import write_text_atomic

__all__ = [
    "KEPT_POLICIES",
    "LAST_POLICY_FILE",
    "POLICY_FILE",
    "check_output_file",
    "file_digest",
    "kept_policy_path",
    "kept_policy_updates",
    "write_text_atomic",
]

#: the policy a run leaves in its folder; with ``average_kept_policies`` the averaged one, and the last
#: network alone in ``LAST_POLICY_FILE``
POLICY_FILE = "policy.pt"
LAST_POLICY_FILE = "policy_last.pt"
#: the folder of the policies a run keeps (``keep_policy_every``), one file per update
KEPT_POLICIES = "policies"


def kept_policy_path(run_dir: Path, update: int) -> Path:
    """Where a run keeps its policy of ``update``."""
    return run_dir / KEPT_POLICIES / f"update_{update:06d}.pt"


def kept_policy_updates(run_dir: Path) -> list[int]:
    """The updates whose policies ``run_dir`` keeps, ascending (by file name; other files are ignored)."""
    names = (path.name for path in (run_dir / KEPT_POLICIES).glob("update_*.pt"))
    return sorted(int(m.group(1)) for name in names if (m := re.fullmatch(r"update_(\d+)\.pt", name)))


def check_output_file(path: str | Path, what: str) -> Path:
    """``path`` as a :class:`Path`, if a file can be written there: not a folder, in an
    existing folder this process may write in (or a writable device such as ``/dev/stdout``)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; name a file in it")
    if path.exists() and not path.is_file():  # a device or a pipe: written directly
        if not os.access(path, os.W_OK):
            raise ValueError(f"{what} {str(path)!r} cannot be written (no permission)")
        return path
    folder = path.resolve().parent
    if not folder.is_dir():
        why = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{what} {str(path)!r}: the folder {str(path.parent)!r} {why}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(path)!r}: the folder {str(folder)!r} cannot be written in (no permission)")
    return path


def file_digest(path: str | Path) -> str | None:
    """The SHA-256 of a file's bytes (hex), or None where it cannot be read (missing, a folder):
    what tells two files under one path apart."""
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def json_report(data: Any, indent: int | None = 2) -> str:
    """``data`` as indented JSON that strict parsers read: a figure that is not a number (the interval of a
    score over one deal: NaN) is written null, where ``json.dumps`` writes the non-standard ``NaN``."""

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(data), indent=indent, allow_nan=False) + "\n"
