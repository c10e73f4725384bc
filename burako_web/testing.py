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


# ---------------------------------------------------------------------- a person's clicks (Playwright)
CHROMIUM = "/usr/bin/chromium"
#: root in a container needs --no-sandbox; a small /dev/shm needs the other
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]


def state_of(page: Any) -> dict[str, Any]:
    """The last state message the page received (``window.burako.msg``)."""
    return page.evaluate("window.burako.msg")


def wait_my_turn_or_end(page: Any, timeout: float = 30_000) -> dict[str, Any]:
    page.wait_for_function(
        "window.burako.msg && window.burako.msg.view && "
        "(window.burako.msg.legal.length > 0 || ['hand_over', 'match_over'].includes(window.burako.msg.status))",
        timeout=timeout,
    )
    return state_of(page)


def _click_tiles(page: Any, hand: list[int], kinds: list[int]) -> None:
    used: set[int] = set()
    for kind in kinds:
        index = next(i for i, k in enumerate(hand) if k == kind and i not in used)
        used.add(index)
        page.click(f"#hand .tile[data-index='{index}']")


def click_one_move(page: Any, take_pile: bool = False) -> str:
    """Make one move of the seat to play by clicking the page as a person
    would: the stock (or the pile), keep, a meld of three selected tiles, an
    addition (a tile, then the highlighted meld), a discard, an end. Returns
    what was clicked. The page offers only what the server listed as legal."""
    msg = state_of(page)
    view, legal = msg["view"], msg["legal"]
    phase = view["phase"]
    if phase == "DRAW":
        if take_pile and any(m["kind"] == "take_pile" for m in legal):
            page.click("#pile-box")
            return "take_pile"
        page.click("#stock")
        return "draw"
    if phase == "PRIVILEGE":
        page.click("#btn-keep")
        return "keep"
    if phase == "CHOOSE_END":
        page.click("#btn-choose-0")
        return "choose"
    melds = [m for m in legal if m["kind"] == "meld"]
    adds = [m for m in legal if m["kind"] == "add"]
    if melds:
        _click_tiles(page, view["hand"], melds[0]["tiles"])
        page.click("#btn-meld")
        return "meld"
    if adds:
        side = view["side_of"][view["seat"]]
        _click_tiles(page, view["hand"], adds[0]["tiles"])
        page.click(f"#melds .meld.target[data-side='{side}'][data-slot='{adds[0]['slot']}']")
        return "add"
    discard = next(m for m in legal if m["kind"] == "discard")
    _click_tiles(page, view["hand"], discard["tiles"])
    page.click("#btn-discard")
    return "discard"


def play_by_clicking(page: Any, max_moves: int = 2000, take_pile_every: int = 0) -> list[str]:
    """Click moves until the hand is over; returns the kinds of moves clicked."""
    done: list[str] = []
    while len(done) < max_moves:
        msg = wait_my_turn_or_end(page)
        if msg["status"] in ("hand_over", "match_over"):
            return done
        take = take_pile_every > 0 and len(done) % take_pile_every == 0
        done.append(click_one_move(page, take_pile=take))
        page.wait_for_function(
            f"window.burako.msg.step !== {msg['step']} || window.burako.msg.hand_number !== {msg['hand_number']}"
        )
    raise RuntimeError(f"the hand did not end in {max_moves} moves")
