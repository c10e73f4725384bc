"""Output files the command-line tools write: checked before any work, written whole.

A path given on the command line is checked when the command starts, so a
typo costs nothing, not the evaluation or tournament it would have ended.
Summaries and reports are written through a temporary file in the same folder
and renamed over the target (atomic on POSIX and Windows): a kill or a full
disk leaves the previous file or the new one, never half of one.
"""

from __future__ import annotations

import os
from pathlib import Path


def check_output_file(path: str | Path, what: str) -> Path:
    """``path`` as a :class:`Path`, if it can name a file to write: not a folder, in an existing folder."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; name a file in it")
    if not path.parent.is_dir():
        raise ValueError(f"{what} {str(path)!r}: the folder {str(path.parent)!r} does not exist")
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` all at once, or not at all."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
