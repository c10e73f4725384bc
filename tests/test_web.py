"""The web table without a browser: seat views (E2), moves, records (E4),
and the server's WebSocket protocol against a live server on 127.0.0.1.

The browser tests are in tests/test_web_browser.py.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
websockets_sync = pytest.importorskip("websockets.sync.client")

from agents.random_agent import RandomAgent  # noqa: E402
from agents.runner import play_game  # noqa: E402
from burako_env.records import read_records, replay, replay_steps  # noqa: E402
from burako_web.app import Limits  # noqa: E402
from burako_web.games import GAMES, BurakoTable  # noqa: E402
from burako_web.match import Match, MoveError  # noqa: E402
from burako_web.testing import serve  # noqa: E402

GAME: BurakoTable = GAMES["burako"]  # type: ignore[assignment]
FAST = Limits(bot_delay=0.0, rate=1e6, burst=1e6)
#: every key a state message may carry (a new key must be added here, after checking what it reveals)
STATE_KEYS = {
    "type", "room", "game", "rules", "status", "seat", "seats", "hand_number", "step", "match_scores",
    "target", "ready", "view", "legal", "last_move", "history", "error",
}  # fmt: skip
VIEW_KEYS = {
    "game", "cards", "num_players", "num_sides", "side_of", "seat", "phase", "current", "mano", "turn", "hand",
    "privilege_tile", "melds", "pile", "pile_top_required", "known", "hand_sizes", "stock_size", "muerto_taken",
    "muerto_sizes", "match_scores", "pending", "end_reason", "closer", "hand_scores",
}  # fmt: skip


# ---------------------------------------------------------------------- seat views (no server)
@pytest.mark.parametrize("preset,players", [("burako", 2), ("burako", 4), ("burako_casual", 3), ("buraco_cards", 2)])
def test_seat_view_is_unchanged_when_hidden_tiles_are_resampled_E2(preset: str, players: int) -> None:
    """E2 for the web: at every position of whole hands, each seat's view and
    legal moves are identical for the true state and for a state where all it
    cannot see (other hands, stock order, muertos) is resampled."""
    rng = np.random.default_rng(0)
    for deal in range(2):
        result = play_game([RandomAgent(seed=s) for s in range(players)], preset, players, deal_seed=deal)
        for step in replay_steps(result.record):
            for seat in range(players):
                truth = step.state
                other = truth.determinize(seat, rng)
                view = GAME.seat_view(truth, seat)
                assert view == GAME.seat_view(other, seat)
                assert GAME.legal_moves(truth, seat) == GAME.legal_moves(other, seat)
                assert set(view) == VIEW_KEYS
                assert view["hand"] == np.repeat(np.arange(53), truth.hands[seat]).tolist()


def test_legal_moves_are_the_engine_mask_and_only_for_the_seat_to_play_E3() -> None:
    result = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=3)
    for step in list(replay_steps(result.record))[:-1]:
        state = step.state
        moves = GAME.legal_moves(state, state.current)
        assert [m["action"] for m in moves] == state.legal_actions()
        assert GAME.legal_moves(state, 1 - state.current) == []


def test_table_rules_from_a_browser_never_name_a_file() -> None:
    assert GAME.rules_from_request("burako", "target: 1500\nmano_privilege: false").target == 1500
    assert GAME.rules_from_request("burako_casual", None).name == "burako_casual"
    for preset, text in [
        ("/etc/passwd", None),
        ("../configs/rules/burako.yaml", None),
        ("burako", "preset: /etc/hosts.yaml"),
        ("burako", "preset: [1]"),
        ("burako", "not_a_field: 1"),
        ("burako", "- a list"),
        ("burako", "target: 1\n" * 3000),
    ]:
        with pytest.raises(ValueError):
            GAME.rules_from_request(preset, text)


# ---------------------------------------------------------------------- matches (no server)
def test_a_web_match_runs_to_the_target_and_every_hand_replays_exactly_B28_E4(tmp_path: Path) -> None:
    """Hands follow each other to the target (B28), the mano passes left (B5),
    and each hand's record, read back from the file, replays exactly (E4)."""
    rules = GAME.rules_from_request("burako", "target: 1500")
    path = tmp_path / "room.jsonl"
    match = Match(GAME, rules, 2, ["greedy", "greedy"], seed=11, record_path=path)
    manos = []
    while not match.match_over:
        match.start_hand()
        manos.append(match.mano)
        while not match.hand_over:
            match.play(match.state.current, match.bot_move())
        if match.state.end_reason != "void":
            assert match.next_mano == (match.mano + 1) % 2
    assert max(match.match_scores) >= 1500
    assert len(match.records) >= 2
    for a, b, record in zip(manos, manos[1:], match.records, strict=False):
        if record["end_reason"] != "void":
            assert b == (a + 1) % 2  # B5
    records = read_records(path, verify=True)  # every hand replays (E4)
    assert records == [json.loads(json.dumps(r)) for r in match.records]
    totals = np.zeros(2, dtype=int)
    for record in records:
        if record["hand_scores"] is not None:
            totals += [s["total"] for s in record["hand_scores"]]
        assert record["meta"]["match_scores"] == totals.tolist()
    with pytest.raises(MoveError):
        match.start_hand()


def test_refused_moves_change_nothing() -> None:
    match = Match(GAME, GAME.rules_from_request("burako", None), 2, ["person", "person"], seed=3)
    match.start_hand()
    seat = match.state.current
    illegal = next(a for a in range(3519) if not match.state.is_legal(a))
    before = match.state.to_json()
    for who, action, reason in [
        (1 - seat, match.state.legal_actions()[0], "not your turn"),
        (seat, illegal, "not legal"),
        (seat, -1, "not legal"),
        (seat, 10**9, "not legal"),
        (seat, True, "integer"),
        (seat, "0", "integer"),
        (seat, 1.0, "integer"),
        (seat, None, "integer"),
    ]:
        with pytest.raises(MoveError, match=reason):
            match.play(who, action)
        assert match.state.to_json() == before
        assert match.step == 0


def test_the_default_bot_is_the_shipped_one_where_its_network_fits_the_table() -> None:
    from burako_web.match import default_bot

    assert default_bot(GAME.rules_from_request("burako", None), 2) == "policy"
    assert default_bot(GAME.rules_from_request("burako", None), 4) == "planner"
    assert default_bot(GAME.rules_from_request("burako_casual", None), 3) == "planner"


def test_a_bot_that_cannot_play_the_table_is_refused() -> None:
    with pytest.raises(ValueError, match="another observation/action layout"):
        Match(GAME, GAME.rules_from_request("burako", None), 4, ["person"] + ["policy"] * 3, seed=0)
    with pytest.raises(ValueError, match="unknown player"):
        Match(GAME, GAME.rules_from_request("burako", None), 2, ["person", "nobody"], seed=0)
    with pytest.raises(ValueError, match="not allowed"):
        Match(GAME, GAME.rules_from_request("buraco_cards", None), 4, ["person"] * 4, seed=0)


# ---------------------------------------------------------------------- the live server
def post(url: str, data: Any, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
    body = raw if raw is not None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def open_socket(port: int, room: str) -> Any:
    # websockets wants connect() used as a context manager; a test closes it by hand
    return websockets_sync.connect(f"ws://127.0.0.1:{port}/ws/{room}", max_size=2**22).__enter__()


class Client:
    """A WebSocket client of one seat that keeps every message it receives."""

    def __init__(self, port: int, room: str, token: str | None = None) -> None:
        self.ws = open_socket(port, room)
        self.messages: list[dict[str, Any]] = []
        self.send({"type": "hello", "token": token})
        welcome = self.recv()
        assert welcome["type"] == "welcome", welcome
        self.seat, self.token = welcome["seat"], welcome["token"]

    def send(self, payload: Any) -> None:
        self.ws.send(payload if isinstance(payload, (str, bytes)) else json.dumps(payload))

    def recv(self, timeout: float = 30) -> dict[str, Any]:
        message = json.loads(self.ws.recv(timeout=timeout))
        self.messages.append(message)
        return message

    def until(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while True:
            message = self.recv(timeout=max(0.1, end - time.monotonic()))
            if predicate(message):
                return message

    def error(self) -> str:
        return self.until(lambda m: m["type"] == "error", timeout=10)["message"]

    def close(self) -> None:
        self.ws.close()


def _truth_by_step(records: list[dict[str, Any]]) -> dict[tuple[int, int], Any]:
    """(hand, step) -> the true engine state, rebuilt from the room's records
    (with the match scores the room carried into each hand)."""
    truth = {}
    carried = [0] * len(records[0]["hand_scores"] or records[0]["result"]["side_rewards"])
    for record in records:
        for step in replay_steps(record):
            # a record replays one hand; the match scores around it come from its meta
            step.state.match_scores = list(record["meta"]["match_scores"] if step.state.hand_over else carried)
            truth[(record["meta"]["hand"], step.index)] = step.state
        carried = record["meta"]["match_scores"]
    return truth


@pytest.mark.parametrize(
    "players,seats,yaml_text",
    [(2, ["person", "greedy"], "target: 1500"), (4, ["person", "random", "greedy", "random"], "target: 800")],
)
def test_every_message_to_a_seat_over_whole_games_shows_only_what_it_may_see_E2(
    tmp_path: Path, players: int, seats: list[str], yaml_text: str
) -> None:
    """A person's client plays whole matches (random legal moves) against bots;
    every message it received is checked against the true game rebuilt from
    the room's records: each view, legal-move list and last-move text equals
    what a state with everything the seat cannot see resampled gives, its hand
    is its true hand, and no key outside the documented ones appears."""
    rng = np.random.default_rng(5)
    pick = np.random.default_rng(6)
    with serve(FAST, records_dir=tmp_path, seed=21) as server:
        status, room = post(server.url + "api/rooms", {"preset": "burako", "players": players, "seats": seats,
                                                       "rules_yaml": yaml_text})  # fmt: skip
        assert status == 200, room
        client = Client(server.port, room["room"])
        nexted: set[int] = set()
        while True:
            msg = client.until(
                lambda m: m["type"] == "state" and (m["legal"] or m["status"] in ("hand_over", "match_over"))
            )
            if msg["status"] == "match_over":
                break
            if msg["status"] == "hand_over":
                if msg["hand_number"] not in nexted:
                    nexted.add(msg["hand_number"])
                    client.send({"type": "next"})
                continue
            move = msg["legal"][int(pick.integers(len(msg["legal"])))]
            client.send({"type": "move", "action": move["action"], "step": msg["step"]})
        client.close()
    records = read_records(tmp_path / f"room-{room['room']}.jsonl", verify=True)
    assert len(records) >= 1
    truth = _truth_by_step(records)
    views = 0
    for msg in client.messages:
        assert msg["type"] in ("welcome", "state", "error"), msg
        if msg["type"] == "welcome":
            assert set(msg) == {"type", "room", "seat", "token"}
            continue
        if msg["type"] == "error":
            continue
        assert set(msg) == STATE_KEYS
        if msg["view"] is None:
            continue
        state = truth[(msg["hand_number"], msg["step"])]
        assert msg["view"] == GAME.seat_view(state.determinize(0, rng), 0)
        assert msg["view"]["hand"] == np.repeat(np.arange(53), state.hands[0]).tolist()
        assert msg["legal"] == GAME.legal_moves(state, 0)
        last = msg["last_move"]
        if last is not None:  # the text of the last move, as the seat could have written it
            before = truth[(msg["hand_number"], last["step"] - 1)].determinize(0, rng)
            record = records[msg["hand_number"]]
            assert last["text"] == before.describe(record["actions"][last["step"] - 1])
        views += 1
    assert views > 100 and len(records) >= 2
    print(f"E2 web check: {len(records)} hands, {views} views, {len(client.messages)} messages")


def test_malformed_out_of_turn_and_illegal_messages_get_errors_and_change_nothing(tmp_path: Path) -> None:
    limits = Limits(bot_delay=0.0, rate=1e6, burst=1e6, max_message=512)
    with serve(limits, records_dir=tmp_path, seed=4) as server:
        _, room = post(server.url + "api/rooms", {"preset": "burako", "players": 2, "seats": ["person", "person"]})
        a = Client(server.port, room["room"])
        b = Client(server.port, room["room"])
        assert {a.seat, b.seat} == {0, 1}
        first = a.until(lambda m: m["type"] == "state" and m["view"] is not None)
        match = server.tables.rooms[room["room"]].match
        mover, waiter = (a, b) if first["view"]["current"] == a.seat else (b, a)
        before = match.state.to_json()
        legal = [m["action"] for m in first["legal"]] or GAME.legal_moves(match.state, mover.seat)
        legal = [m["action"] for m in GAME.legal_moves(match.state, mover.seat)]
        illegal = next(x for x in range(3519) if x not in legal)
        bad: list[tuple[Client, Any, str]] = [
            (mover, "not json", "JSON object"),
            (mover, "[1, 2]", "JSON object"),
            (mover, b"\x00\x01", "text frames only"),
            (mover, {"type": "dance"}, "unknown message type"),
            (mover, {"type": "move", "action": legal[0]}, "a move is"),
            (mover, {"type": "move", "action": legal[0], "step": 0, "x": 1}, "a move is"),
            (mover, {"type": "move", "action": "1", "step": 0}, "integer"),
            (mover, {"type": "move", "action": 1.0, "step": 0}, "integer"),
            (mover, {"type": "move", "action": True, "step": 0}, "integer"),
            (mover, {"type": "move", "action": legal[0], "step": "0"}, "step must be"),
            (mover, {"type": "move", "action": legal[0], "step": 5}, "stale move"),
            (mover, {"type": "move", "action": illegal, "step": 0}, "not legal"),
            (mover, {"type": "move", "action": -3, "step": 0}, "not legal"),
            (mover, {"type": "move", "action": 2**70, "step": 0}, "not legal"),
            (mover, {"type": "next"}, "no next hand"),
            (mover, json.dumps({"type": "move", "action": legal[0], "step": 0, "pad": "x" * 600}), "larger than 512"),
            (waiter, {"type": "move", "action": legal[0], "step": 0}, "not your turn"),
        ]
        for client, payload, reason in bad:
            client.send(payload)
            assert reason in client.error(), (payload, reason)
            assert match.state.to_json() == before
            assert match.step == 0
        # the same socket still plays: a legal move goes through
        mover.send({"type": "move", "action": legal[0], "step": 0})
        mover.until(lambda m: m["type"] == "state" and m["step"] == 1)
        assert match.step == 1
        # a third browser finds no free seat; a stolen-looking token gets none either
        with pytest.raises(AssertionError, match="every seat"):
            Client(server.port, room["room"], token="guess")
        a.close()
        b.close()


def test_limits_on_rooms_requests_and_message_rate(tmp_path: Path) -> None:
    limits = Limits(bot_delay=0.0, max_rooms=2, rate=1.0, burst=3.0, max_request=300, max_sockets_per_room=4)
    with serve(limits, records_dir=tmp_path) as server:
        url = server.url + "api/rooms"
        assert post(url, {"seats": ["person", "random"]})[0] == 200
        status, body = post(url, {"seats": ["person", "nobody"]})
        assert status == 400 and "unknown player" in body["error"]
        assert post(url, None, raw=b"{not json")[0] == 400
        assert post(url, None, raw=b"[" + b" " * 400 + b"]")[0] == 400
        assert "unknown field" in post(url, {"seats": ["person", "random"], "evil": 1})[1]["error"]
        assert "unknown rules preset" in post(url, {"preset": "/etc/passwd"})[1]["error"]
        assert "not allowed" in post(url, {"players": 10**9})[1]["error"]
        status, room = post(url, {"seats": ["person", "random"]})
        assert status == 200
        status, body = post(url, {"seats": ["person", "random"]})
        assert status == 400 and "maximum of 2 rooms" in body["error"]
        client = Client(server.port, room["room"])  # the hello spent one token of three
        idle = [open_socket(server.port, room["room"]) for _ in range(limits.max_sockets_per_room - 1)]
        # connections count before any hello; in a full room, the oldest silent one is closed to make
        # room: silent sockets used to lock out a seated player coming back with its token
        back = Client(server.port, room["room"], token=client.token)
        assert back.seat == client.seat
        assert "too many connections to this room: closed" in json.loads(idle[0].recv(timeout=10))["message"]
        newer = open_socket(server.port, room["room"])
        assert "too many connections to this room: closed" in json.loads(idle[1].recv(timeout=10))["message"]
        for ws in [*idle, newer]:
            ws.close()
        back.close()
        for _ in range(4):
            client.send({"type": "ping"})
        assert "too many messages" in client.error()
        client.close()
        ws = open_socket(server.port, "nosuchroom")
        assert "no such room" in json.loads(ws.recv(timeout=10))["message"]
        ws.close()


def test_a_reconnecting_person_gets_the_seat_back_and_an_empty_room_ends(tmp_path: Path) -> None:
    limits = Limits(bot_delay=0.0, rate=1e6, burst=1e6, room_timeout=1.0)
    with serve(limits, records_dir=tmp_path, seed=8) as server:
        _, room = post(server.url + "api/rooms", {"seats": ["random", "person"]})
        first = Client(server.port, room["room"])
        assert first.seat == 1
        hand = first.until(lambda m: m["type"] == "state" and m["view"] is not None)["view"]["hand"]
        first.close()
        again = Client(server.port, room["room"], token=first.token)
        assert again.seat == 1
        state = again.until(lambda m: m["type"] == "state" and m["view"] is not None)
        assert state["view"]["seat"] == 1 and state["step"] >= 0
        assert len(state["view"]["hand"]) > 0 and (state["step"] > 0 or state["view"]["hand"] == hand)
        again.close()
        deadline = time.monotonic() + 15
        while room["room"] in server.tables.rooms and time.monotonic() < deadline:
            time.sleep(0.2)
        assert room["room"] not in server.tables.rooms
        ws = open_socket(server.port, room["room"])
        assert "no such room" in json.loads(ws.recv(timeout=10))["message"]
        ws.close()


def test_replay_endpoint_returns_every_position_and_refuses_a_bad_record(tmp_path: Path) -> None:
    record = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=9).record
    text = json.dumps(record) + "\n"
    with serve(FAST, records_dir=None) as server:
        status, data = post(server.url + "api/replay", None, raw=text.encode())
        assert status == 200
        frames = data["hands"][0]["frames"]
        assert len(frames) == len(record["actions"]) + 1
        final = replay(record)
        assert frames[-1]["hands"] == [np.repeat(np.arange(53), final.hands[p]).tolist() for p in range(2)]
        assert [f["move"] for f in frames[1:]] == record["descriptions"]
        broken = dict(record, actions=record["actions"][:-1], descriptions=record["descriptions"][:-1])
        status, data = post(server.url + "api/replay", None, raw=(json.dumps(broken) + "\n").encode())
        assert status == 400 and "line 1" in data["error"]
        status, data = post(server.url + "api/replay", None, raw=b"{oops\n")
        assert status == 400 and "not valid JSON" in data["error"]


def test_a_failing_bot_stops_its_table_with_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Match) -> int:
        raise RuntimeError("the bot fell over")

    monkeypatch.setattr(Match, "bot_move", broken)
    pick = np.random.default_rng(0)
    with serve(FAST, records_dir=tmp_path, seed=2) as server:
        _, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        client = Client(server.port, room["room"])
        while True:
            msg = client.until(lambda m: m["type"] == "state" and (m["legal"] or m["error"]))
            if msg["error"]:
                break
            move = msg["legal"][int(pick.integers(len(msg["legal"])))]
            client.send({"type": "move", "action": move["action"], "step": msg["step"]})
        assert "seat 1 failed: RuntimeError: the bot fell over" in msg["error"]
        assert msg["view"]["current"] == 1
        client.close()


def test_the_command_line_refuses_a_bad_port_records_path_and_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """burako-web: one-line errors before the server starts (a bad port was an OverflowError
    traceback; a records path that is a file served, then failed every new room with HTTP 500;
    --max-rooms 0 served a table that could never open a room)."""
    from burako_web import cli

    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    for args, message in (
        (["--port", "-1"], "--port must be between 1 and 65535, got -1"),
        (["--port", "99999"], "--port must be between 1 and 65535"),
        (["--records", str(a_file)], "is a file; name a folder for the records"),
        (["--max-rooms", "0"], "max-rooms must be >= 1, got 0"),
        (["--bot-delay", "-1"], "bot-delay must be >= 0"),
        (["--room-timeout", "0"], "room-timeout must be > 0"),
    ):
        with pytest.raises(SystemExit) as exited:
            cli.main(["--no-open", *args])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"bad web limits: rate must be > 0, got 0; burst must be > 0"):
        Limits(rate=0, burst=-1)


# ---------------------------------------------------------------------- faults found in review (2026-12-05)
def test_hostile_requests_get_clear_errors_and_wrong_bots_no_seat() -> None:
    """Nested JSON too deep for the parser (was a 500 and a dropped socket), a non-ASCII token (a
    TypeError that dropped the socket), a Rummy record sent to the Burako replay (a 500), a Rummy bot
    at a Burako table (it played, or stopped the table), a room of bots only (unwatchable, yet it played
    on): each is a clear refusal."""
    limits = Limits(bot_delay=0.0, rate=1e6, burst=1e6, max_message=8192, max_request=16384, hello_timeout=1.0)
    with serve(limits) as server:
        deep = b"[" * 3000 + b"]" * 3000
        for path in ("api/rooms", "api/replay"):
            status, body = post(server.url + path, None, raw=deep)
            assert status == 400 and "nested too deeply" in body["error"], (path, status, body)
        _, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        ws = open_socket(server.port, room["room"])
        ws.send("[" * 1000 + "]" * 1000)
        assert "nested too deeply" in json.loads(ws.recv(timeout=10))["message"]
        ws.send(json.dumps({"type": "hello", "token": "é"}))  # an unknown token: the free seat, a new token
        welcome = json.loads(ws.recv(timeout=10))
        assert welcome["type"] == "welcome" and welcome["token"] != "é"
        ws.close()
        # a connection that never says hello is closed after hello_timeout
        silent = open_socket(server.port, room["room"])
        assert "no hello within" in json.loads(silent.recv(timeout=10))["message"]
        silent.close()

        from agents.rummy_runner import play_rummy_hand

        rummy = play_rummy_hand([RandomAgent(seed=1), RandomAgent(seed=2)], "rummy", 2, deal_seed=4).record
        status, body = post(server.url + "api/replay", None, raw=(json.dumps(rummy) + "\n").encode())
        assert status == 400 and "a rummy record" in body["error"]

        status, body = post(server.url + "api/rooms", {"seats": ["person", "rummy-greedy"]})
        assert status == 400 and "unknown player 'rummy-greedy' at a burako table" in body["error"]
        with urllib.request.urlopen(server.url + "api/options", timeout=30) as response:
            options = json.loads(response.read())
        assert "planner" in options["seat_kinds"] and not any(k.startswith("rummy") for k in options["seat_kinds"])
        status, body = post(server.url + "api/rooms", {"seats": ["random", "planner"]})
        assert status == 400 and "at least one seat must be a person" in body["error"]


def test_a_full_room_of_seated_connections_refuses_more() -> None:
    limits = Limits(bot_delay=0.0, rate=1e6, burst=1e6, max_sockets_per_room=2)
    with serve(limits) as server:
        _, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        first = Client(server.port, room["room"])
        second = Client(server.port, room["room"], token=first.token)
        refused = open_socket(server.port, room["room"])
        assert "too many connections to this room" in json.loads(refused.recv(timeout=10))["message"]
        for c in (first, second):
            c.close()
        refused.close()
        # every closed connection leaves the count (counted from the room's own sockets): the seat comes back
        table = server.app.state.tables.rooms[room["room"]]
        deadline = time.monotonic() + 10
        while table.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert table.connections == 0
        back = Client(server.port, room["room"], token=first.token)
        assert back.seat == first.seat and table.connections == 1
        back.close()


def test_a_matchs_deal_seeds_are_128_bits() -> None:
    """A seat's own hand and the mano pinned a 32-bit deal seed (searchable: every hidden tile then
    follows); the room's match seed and each hand's deal seed are 128 bits."""
    rules = GAME.rules_from_request("burako", None)
    match = Match(GAME, rules, 2, ["person", "random"], seed=2**127 + 5)
    bases = [match.seed_base(hand) for hand in range(1, 9)]
    assert max(b.bit_length() for b in bases) > 120 and len(set(bases)) == 8
    match.start_hand()
    assert match.deal_seed.bit_length() > 64
    record_state = GAME.deal(rules, 2, match.deal_seed)
    assert (record_state.hands[0] == match.state.hands[0]).all()
    with serve(FAST) as server:
        _, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        assert server.app.state.tables.rooms[room["room"]].match.seed.bit_length() > 64


def test_building_a_room_does_not_stall_the_other_rooms(monkeypatch: pytest.MonkeyPatch) -> None:
    """A room's match (its bots' networks read from disk) is built in a worker thread: the event loop
    answered nothing else for the seconds the first network bot took to load."""
    import threading

    original = Match.__init__

    def slow(self: Match, *args: Any, **kwargs: Any) -> None:
        time.sleep(2.0)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Match, "__init__", slow)
    with serve(FAST) as server:
        creating = threading.Thread(target=post, args=(server.url + "api/rooms", {"seats": ["person", "random"]}))
        creating.start()
        time.sleep(0.3)
        start = time.monotonic()
        with urllib.request.urlopen(server.url, timeout=30) as response:
            assert response.status == 200
        assert time.monotonic() - start < 1.0
        creating.join(30)
        assert len(server.app.state.tables.rooms) == 1


def test_a_replay_upload_is_bounded_by_its_moves() -> None:
    """Each move becomes a ~1.7 KB frame: a 4 MiB upload of long hands made answers of ~200 MB."""
    record = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=3).record
    moves = len(record["actions"])
    line = (json.dumps(record) + "\n").encode()
    with serve(Limits(bot_delay=0.0, rate=1e6, burst=1e6, max_replay_moves=2 * moves)) as server:
        assert post(server.url + "api/replay", None, raw=line * 2)[0] == 200
        status, body = post(server.url + "api/replay", None, raw=line * 3)
        assert status == 400 and f"line 3: at most {2 * moves} moves per replay" in body["error"]


def test_a_web_install_without_torch_seats_the_planner_and_refuses_network_bots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The web extra does not install torch: the default bot and the options answered 500
    (ModuleNotFoundError from the shipped network's loader); now the planner sits by default, and a
    network bot is refused with what to install."""
    import sys

    import burako_web.match as match_module

    match_module._shipped_policy_net.cache_clear()
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.") or m == "agents.checkpoint"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    try:
        rules = GAME.rules_from_request("burako", None)
        assert match_module.default_bot(rules, 2) == "planner"
        with serve(FAST) as server:
            with urllib.request.urlopen(server.url + "api/options", timeout=30) as response:
                assert json.loads(response.read())["presets"]["burako"]["default_bot"]["2"] == "planner"
            status, body = post(server.url + "api/rooms", {"seats": ["person", "policy"]})
            assert status == 400 and "network bots need torch" in body["error"]
    finally:
        match_module._shipped_policy_net.cache_clear()


# ---------------------------------------------------------------------- faults found in review (2026-12-06)
def test_a_record_that_cannot_be_written_leaves_the_move_played_and_is_said(tmp_path: Path) -> None:
    """The record was written inside the move that ended the hand: a full disk or a removed folder
    dropped the person's socket with a traceback (nobody was told the hand was over), or, after a bot's
    move, stopped the table blaming the bot."""
    (tmp_path / "recs").write_text("a file where the records folder was")
    rules = GAME.rules_from_request("burako", "target: 1500")
    match = Match(GAME, rules, 2, ["greedy", "greedy"], seed=11, record_path=tmp_path / "recs" / "room.jsonl")
    match.start_hand()
    while not match.hand_over:
        match.play(match.state.current, match.bot_move())
    assert len(match.records) == 1 and match.record_error is not None
    assert match.record_error.startswith("hand 0's record could not be written: [Errno 20] Not a directory")


def test_binary_messages_count_toward_the_rate_and_a_hello_after_the_room_ended_is_refused(tmp_path: Path) -> None:
    """Binary frames were answered before the rate limiter was asked (any socket, hello or not, got a
    reply per frame at full speed). A socket that had not said hello did not keep its room alive, and its
    hello after the room was ended took a seat in the closed room (no deal ever, outside max_rooms)."""
    limits = Limits(bot_delay=0.0, rate=1.0, burst=3.0)
    with serve(limits, records_dir=tmp_path) as server:
        _status, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        ws = open_socket(server.port, room["room"])
        for _ in range(6):
            ws.send(b"\x00binary")
        replies = [json.loads(ws.recv(timeout=10))["message"] for _ in range(6)]
        assert replies.count("text frames only (JSON)") == 3 and replies[3:] == ["too many messages: slow down"] * 3
        ws.close()
    limits = Limits(bot_delay=0.0, rate=1e6, burst=1e6, room_timeout=1.0, hello_timeout=10.0)
    with serve(limits, records_dir=tmp_path) as server:
        _status, room = post(server.url + "api/rooms", {"seats": ["person", "random"]})
        silent = open_socket(server.port, room["room"])
        time.sleep(6.0)  # past room_timeout and a reaper's round: the silent socket keeps the room
        client = Client(server.port, room["room"])
        assert client.seat == 0
        # the room lives on: the hand is dealt (in the closed room the seat was given, and nothing came)
        dealt = client.until(lambda m: m["type"] == "state" and m["view"] is not None, timeout=20)
        assert dealt["view"] is not None
        client.close()
        silent.close()
