"""A live server in a background thread, for tests and screenshots.

    with serve(Limits(bot_delay=0.05)) as server:
        server.url  # http://127.0.0.1:PORT/

Binds 127.0.0.1 on a free port, waits until it answers, stops it on exit.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burako_web.app import Limits, create_app


@dataclass
class LiveServer:
    url: str
    port: int
    app: Any

    @property
    def tables(self) -> Any:
        return self.app.state.tables


@contextlib.contextmanager
def serve(
    limits: Limits | None = None, records_dir: str | Path | None = None, seed: int | None = None
) -> Iterator[LiveServer]:
    import uvicorn

    app = create_app(limits, records_dir=records_dir, seed=seed)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws_max_size=64 * 1024)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield LiveServer(f"http://127.0.0.1:{port}/", port, app)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
