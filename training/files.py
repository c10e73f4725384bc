"""Output files the command-line tools write: checked before any work, written whole.

A path given on the command line is checked when the command starts, so a
typo costs nothing, not the evaluation or tournament it would have ended.
Summaries and reports are written through a temporary file in the same folder
and renamed over the target (atomic on POSIX and Windows): a kill or a full
disk (or, as both are flushed to disk, a power cut) leaves the previous file or
the new one, never half of one; each write has its own temporary name. The target
keeps its permissions; a symbolic link keeps pointing where it did (the file
it names is replaced); a target that is not a regular file (``/dev/stdout``,
a named pipe) is written directly, as there is nothing to replace.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

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


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` all at once, or not at all.

    The temporary file has a name of its own (two writers of one target do not share it), and
    it is flushed to disk before the rename, and the folder after it, so the file survives a
    power cut as well as a kill."""
    path = Path(path)
    if path.exists() and not path.is_file():  # nothing to replace: a device or a pipe takes the text as it comes
        with path.open("w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return path
    target = path.resolve()  # through a symbolic link: the file it names is replaced, the link stays
    # a name no other writer uses; created like open(path, "w") would (0o666 less the umask)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
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
