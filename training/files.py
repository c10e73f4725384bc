"""Output files the command-line tools write: checked before any work, written whole.

A path given on the command line is checked when the command starts, so a
typo costs nothing, not the evaluation or tournament it would have ended.
Summaries and reports are written through a temporary file in the same folder
and renamed over the target (atomic on POSIX and Windows): a kill or a full
disk leaves the previous file or the new one, never half of one. The target
keeps its permissions; a symbolic link keeps pointing where it did (the file
it names is replaced); a target that is not a regular file (``/dev/stdout``,
a named pipe) is written directly, as there is nothing to replace.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


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


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` all at once, or not at all."""
    path = Path(path)
    if path.exists() and not path.is_file():  # nothing to replace: a device or a pipe takes the text as it comes
        with path.open("w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return path
    target = path.resolve()  # through a symbolic link: the file it names is replaced, the link stays
    tmp = target.with_name(target.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
