"""Files written whole or not at all: a temporary file in the same folder, renamed over the target.

The rename is atomic on POSIX and Windows, so a kill or a full disk (or, as the
bytes and the rename are both flushed to disk, a power cut) leaves the previous
file or the new one, never half of one. Each write has its own temporary name,
so two writers of one target never publish each other's half-written bytes.
The target keeps its permissions; a symbolic link keeps pointing where it did
(the file it names is replaced, the link stays a link); a target that is not a
regular file (``/dev/stdout``, a named pipe) is written directly, as there is
nothing to replace; a dangling link whose target's folder is missing is refused
with the link and its target named. A writer killed between the two (SIGKILL,
a power cut) leaves its temporary file behind; the next write of the same
target removes those whose process is gone (POSIX) and that are older than
:data:`STALE_SECONDS`. A stop signal (Ctrl-C's SIGINT, ``kill``'s SIGTERM) that
arrives during a write in the main thread is held until the file is in place,
then delivered: an interrupt raised inside a writer's own code (torch's zip
writer) could be replaced by that writer's clean-up error, and the user would
see a crash where they asked for a stop.

Used for reports and summaries (``training.files.write_text_atomic``) and for
checkpoints and exported policies (``agents.checkpoint.save``).
"""

from __future__ import annotations

import errno
import glob
import os
import re
import secrets
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

#: the signals a user stops a run with; held while a file is written
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Within the block, Ctrl-C and ``kill`` are recorded, not acted on; after it, the first one
    recorded is raised again under the handlers from before (so ``KeyboardInterrupt``, or the
    default action, comes once the block is done). A second one within the block meets those
    handlers at once (a hung write stays stoppable). Off the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous: dict[int, Any] = {}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def hold(signum: int, frame: Any) -> None:
        if held:  # asked twice: the handlers from before act now, as without the hold
            held.clear()
            restore()
            signal.raise_signal(signum)
            return
        held.append(signum)

    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not None:  # None: a handler not set from Python, which cannot be put back
            previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        restore()
        if held:
            signal.raise_signal(held[0])


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write`` on a binary file whose bytes then replace ``path`` at once, or not at all."""
    path = Path(path)
    if path.exists() and not path.is_file():  # nothing to replace: a device or a pipe takes the bytes as they come
        with path.open("wb") as f:
            write(f)
        return path
    target = path.resolve()  # through a symbolic link: the file it names is replaced, the link stays
    if path.is_symlink() and not target.parent.exists():
        why = f"it is a symbolic link to {target}, whose folder {target.parent} does not exist"
        raise FileNotFoundError(errno.ENOENT, f"cannot write {path}: {why}", str(path))
    _remove_stale_temporaries(target)
    # a name no other writer uses; created like open(path, "w") would (0o666 less the umask)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    with stop_signals_held():  # a stop asked for now comes once the new file is in place
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


#: a temporary file this old, of a process that is gone, is a killed writer's (a checkpoint takes seconds)
STALE_SECONDS = 600.0


def _remove_stale_temporaries(target: Path) -> None:
    """Delete the temporary files of ``target`` that killed writers left (checkpoint-sized, hidden).

    Only on POSIX, where ``os.kill(pid, 0)`` asks whether a process exists (on Windows it would end it),
    and only old ones: a writer on another machine sharing the folder has a pid this one cannot see."""
    if os.name != "posix":
        return
    own = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.[0-9a-f]{{8}}\.tmp")
    for entry in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        match = own.fullmatch(entry.name)
        if match is None or _process_exists(int(match.group(1))):
            continue
        try:
            if time.time() - entry.stat().st_mtime > STALE_SECONDS:
                entry.unlink()
        except OSError:
            pass  # gone already, or not ours to delete: the write goes on


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or a pid no process can have: left alone)
    return True


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
