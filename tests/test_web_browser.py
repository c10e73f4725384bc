"""The web table in a real headless browser (Debian's chromium, driven by Playwright).

A person plays a whole hand against the shipped bot by clicking; two browser
sessions share a room; a reload keeps the seat; a replay steps forward and
back. The server runs on 127.0.0.1 in a thread; the bots play fast here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
playwright = pytest.importorskip("playwright.sync_api")

from agents.random_agent import RandomAgent  # noqa: E402
from agents.runner import play_game  # noqa: E402
from burako_env.records import read_records  # noqa: E402
from burako_web.app import Limits  # noqa: E402
from burako_web.testing import CHROMIUM, CHROMIUM_ARGS, LiveServer, play_by_clicking, serve, state_of  # noqa: E402

if not os.path.exists(CHROMIUM):  # scripts/install.sh installs it (apt-get install chromium)
    pytest.skip(f"no browser at {CHROMIUM}: apt-get install chromium", allow_module_level=True)

LIMITS = Limits(bot_delay=0.01, rate=500.0, burst=500.0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serve(LIMITS, records_dir=tmp_path_factory.mktemp("web-records"), seed=1000) as live:
        yield live


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def new_page(browser: Any, errors: list[str]) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def create_room(page: Any, server: LiveServer, seats: list[str]) -> str:
    page.goto(server.url)
    page.wait_for_selector("#f-seat-1")
    page.select_option("#f-preset", "burako")
    for seat, kind in enumerate(seats):
        page.select_option(f"#f-seat-{seat}", kind)
    page.click("#f-create")
    page.wait_for_function("window.burako && window.burako.msg")
    return state_of(page)["room"]


def test_a_person_plays_a_whole_hand_against_the_shipped_bot_by_clicking(browser: Any, tmp_path: Path) -> None:
    """Clicks only (stock, pile, tiles, meld button, highlighted melds, discard
    button) until the hand ends; the score sheet shows it and the room's record
    replays exactly (E4). Seed 2028 deals a hand the shipped bot closes early
    (43 moves of the person with this clicking, so CI stays quick)."""
    errors: list[str] = []
    with serve(LIMITS, records_dir=tmp_path, seed=2028) as live:
        page = new_page(browser, errors)
        room = create_room(page, live, ["person", "policy"])
        page.wait_for_function("window.burako.msg.view !== null")
        assert state_of(page)["seats"][1]["kind"] == "policy"
        clicked = play_by_clicking(page, take_pile_every=7)
        assert clicked.count("draw") + clicked.count("take_pile") >= 5
        assert {"take_pile", "discard"} <= set(clicked)
        page.wait_for_selector("#sheet:not([hidden])")
        sheet = page.inner_text("#sheet")
        assert "Score sheet" in sheet and ("Hand 1 is over" in sheet or "Match over" in sheet)
        page.click("#btn-close-sheet")  # look at the final table, then open the sheet again
        page.wait_for_selector("#sheet", state="hidden")
        page.click("#show-sheet")
        page.wait_for_selector("#sheet:not([hidden]) #btn-next")
        page.click("#btn-next")  # the match goes on to its target (B28): the next hand is dealt
        page.wait_for_function("window.burako.msg.hand_number === 1")
        page.wait_for_selector("#sheet", state="hidden")
        msg = state_of(page)
        records = read_records(tmp_path / f"room-{room}.jsonl", verify=True)  # the web game replays (E4)
        assert len(records) == 1
        assert records[0]["agents"] == ["person", "policy (bot)"]
        assert msg["history"][0]["match_scores"] == records[0]["meta"]["match_scores"]
        assert _seats(records[0]).count(0) == len(clicked)
        assert not errors
        page.context.close()


def _seats(record: dict[str, Any]) -> list[int]:
    from burako_env.records import replay_steps

    return [step.seat for step in list(replay_steps(record))[1:]]


def test_two_browsers_share_a_room_and_a_reload_keeps_the_seat(browser: Any, server: LiveServer) -> None:
    errors: list[str] = []
    first = new_page(browser, errors)
    room = create_room(first, server, ["person", "person"])
    second = new_page(browser, errors)  # another browser session (own storage)
    second.goto(f"{server.url}?room={room}")
    for page in (first, second):
        page.wait_for_function("window.burako.msg && window.burako.msg.status === 'playing'")
    a, b = state_of(first), state_of(second)
    assert {a["seat"], b["seat"]} == {0, 1}
    assert a["room"] == b["room"] == room
    mover, watcher = (first, second) if a["view"]["current"] == a["seat"] else (second, first)
    before = state_of(watcher)
    # the player to act draws (privilege: keeps) by clicking; the other browser sees it
    if before["view"]["phase"] == "PRIVILEGE":
        mover.click("#btn-keep")
    else:
        mover.click("#stock")
    watcher.wait_for_function("window.burako.msg.step === 1")
    assert watcher.inner_text("#last-move").startswith(f"seat {state_of(mover)['seat']}:")
    # the watcher has no move to click: its table offers none
    assert state_of(watcher)["legal"] == []
    assert watcher.locator("#btn-draw").count() == 0
    # a reload keeps the seat and the hand
    seat, hand = state_of(watcher)["seat"], state_of(watcher)["view"]["hand"]
    watcher.reload()
    watcher.wait_for_function("window.burako.msg && window.burako.msg.view")
    again = state_of(watcher)
    assert again["seat"] == seat and again["view"]["hand"] == hand
    assert watcher.get_attribute("#room-info", "data-seat") == str(seat)
    mover.wait_for_function(f"window.burako.msg.seats[{seat}].online === true")
    assert not errors
    first.context.close()
    second.context.close()


def test_a_replay_steps_forward_and_back_with_hands_shown_or_hidden(browser: Any, tmp_path: Path) -> None:
    record = play_game([RandomAgent(seed=3), RandomAgent(seed=4)], "burako", 2, deal_seed=12).record
    path = tmp_path / "game.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    errors: list[str] = []
    with serve(LIMITS, records_dir=None) as live:
        page = new_page(browser, errors)
        page.goto(live.url)
        page.set_input_files("#replay-file", str(path))
        page.wait_for_selector("#replay:not([hidden])")
        assert page.get_attribute("#replay-index", "data-index") == "0"
        for _ in range(3):
            page.click("#replay-next")
        assert page.get_attribute("#replay-index", "data-index") == "3"
        assert page.inner_text("#replay-move").endswith(record["descriptions"][2])
        page.click("#replay-prev")
        assert page.get_attribute("#replay-index", "data-index") == "2"
        assert page.inner_text("#replay-move").endswith(record["descriptions"][1])
        shown = page.locator(".replay-hand .tile:not(.back)").count()
        assert shown == sum(len(h) for h in page.evaluate("window.burakoReplay.hands[0].frames[2].hands"))
        page.uncheck("#show-hands")
        assert page.locator(".replay-hand .tile:not(.back)").count() == 0
        assert page.locator(".replay-hand .tile.back").count() == shown
        page.click("#replay-last")
        last = len(record["actions"])
        assert page.get_attribute("#replay-index", "data-index") == str(last)
        assert record["end_reason"] in page.inner_text("#replay-move")
        page.click("#replay-first")
        assert page.get_attribute("#replay-index", "data-index") == "0"
        assert not errors
        page.context.close()
