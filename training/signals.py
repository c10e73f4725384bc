"""``kill`` stops a command-line run the way Ctrl-C does.

A run started in the background from a script (``cmd &``) ignores SIGINT (the
shell sets it to ignored for background jobs), and SIGTERM's default action
ends the process without unwinding: no ``finally``, no writer closed, no
message. :func:`sigterm_as_interrupt` turns SIGTERM into ``KeyboardInterrupt``
for the duration of a run, so ``kill PID`` unwinds like Ctrl-C: worker
processes are stopped, files are closed, and the command says how to resume.
A stop that lands while a checkpoint or report is written waits for that file
to be in place (``burako_env.atomic_file.stop_signals_held``), so the resume
starts from it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` in the main
    thread; the previous handler is restored after it. Off the main thread
    (where Python cannot install handlers) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
