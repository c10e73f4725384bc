"""Files written whole or not at all: a temporary file in the same folder, renamed over the target.

The rename is atomic on POSIX and Windows, so a kill or a full disk (or, as the
bytes and the rename are both flushed to disk, a power cut) leaves the previous
file or the new one, never half of one. Each write has its own temporary name,
so two writers of one target never publish each other's half-written bytes.
The target keeps its permissions; a symbolic link keeps pointing where it did
(the file it names is replaced, the link stays a link); a target that is not a
regular file (``/dev/stdout``, a named pipe) is written directly, as there is
nothing to replace.

Used for reports and summaries (``training.files.write_text_atomic``) and for
checkpoints and exported policies (``agents.checkpoint.save``).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write`` on a binary file whose bytes then replace ``path`` at once, or not at all."""
    path = Path(path)
    if path.exists() and not path.is_file():  # nothing to replace: a device or a pipe takes the bytes as they come
        with path.open("wb") as f:
            write(f)
        return path
    target = path.resolve()  # through a symbolic link: the file it names is replaced, the link stays
    # a name no other writer uses; created like open(path, "w") would (0o666 less the umask)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` as UTF-8, line ends as given (no translation), through :func:`write_atomic`."""
    data = text.encode("utf-8")
    return write_atomic(path, lambda f: f.write(data))


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; a no-op where folders cannot be opened (Windows)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(handle)
