"""The web table: a Starlette app with rooms over WebSockets, and replays.

HTTP:

| route                 | what                                                                 |
|-----------------------|----------------------------------------------------------------------|
| ``GET /``             | the page (``static/index.html``); ``/?room=ID`` opens a room's table |
| ``GET /static/...``   | its script and style, served from the package                        |
| ``GET /api/options``  | games, rules presets, player counts, what may sit at a seat          |
| ``POST /api/rooms``   | ``{game, preset, rules_yaml, players, seats}`` → ``{room, url}``      |
| ``POST /api/replay``  | a JSON-lines record file (body) → its hands as frames                |
| ``WS /ws/{room}``     | the live table (below)                                               |

WebSocket messages are JSON objects. From the browser: ``{"type": "hello",
"token": str|null}`` (first; a known token gets its seat back, otherwise the
first free person seat is given with a new token), ``{"type": "move",
"action": int, "step": int}`` (``step``: the number of moves of the hand the
move answers, so a stale click is refused), ``{"type": "next"}`` (ready for
the next hand). To the browser: ``welcome``, ``state`` (the seat's view from
:meth:`TableGame.seat_view`, its legal moves, the last move's text, the
room's seats and status) and ``error``. Nothing from the browser is trusted:
every message is size- and rate-limited and parsed strictly, every move is
checked by the engine (:meth:`Match.play`), and a refused message gets an
``error`` and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from burako_env.records import RecordError, game_of, validate_record
from burako_env.rules import preset_names
from burako_web.games import GAMES, game_named
from burako_web.match import PERSON, Match, MoveError, default_bot, seat_kinds

STATIC = Path(__file__).resolve().parent / "static"
log = logging.getLogger("burako_web")


@dataclass
class Limits:
    """What one server allows; every number bounds what a browser can cost it."""

    max_rooms: int = 20
    #: bytes of one WebSocket message from a browser
    max_message: int = 2048
    #: bytes of a room request, and of a replay upload
    max_request: int = 8192
    max_replay: int = 4 * 1024 * 1024
    max_replay_hands: int = 50
    #: moves in one replay upload: each becomes a frame of ~1.7 KB of JSON (~35 bytes of record), so the
    #: upload's size alone let an answer reach ~200 MB
    max_replay_moves: int = 20_000
    #: messages per second per connection (token bucket), and the burst allowed
    rate: float = 20.0
    burst: float = 40.0
    #: connections to one room at once
    max_sockets_per_room: int = 16
    #: seconds a room with nobody connected lives on
    room_timeout: float = 300.0
    #: seconds between two bot moves (a readable pace)
    bot_delay: float = 0.8
    #: seconds a connection may wait before its hello; a room full of connections that said none makes
    #: room for a new one by closing the oldest, so silent sockets cannot lock a seated player out
    hello_timeout: float = 10.0

    def __post_init__(self) -> None:
        """Limits that would make a server useless (no room can open) or nonsensical are refused."""
        checks = ((_WHOLE_LIMITS, ">= 1", lambda v: v >= 1), (_POSITIVE_LIMITS, "> 0", lambda v: v > 0))
        checks += ((_PACE_LIMITS, ">= 0", lambda v: v >= 0),)  # NaN fails every comparison: refused too
        problems = [
            f"{name} must be {bound}, got {getattr(self, name)}"
            for names, bound, holds in checks
            for name in names
            if not holds(getattr(self, name))
        ]
        if problems:
            raise ValueError("bad web limits: " + "; ".join(problems))


#: the :class:`Limits` that count things, bound a rate or a time, or set a pace (0: no wait)
_WHOLE_LIMITS = (
    "max_rooms",
    "max_message",
    "max_request",
    "max_replay",
    "max_replay_hands",
    "max_replay_moves",
    "max_sockets_per_room",
)
_POSITIVE_LIMITS = ("rate", "burst", "room_timeout", "hello_timeout")
_PACE_LIMITS = ("bot_delay",)


@dataclass
class SeatSlot:
    kind: str
    token: str | None = None
    sockets: set[WebSocket] = field(default_factory=set)


class TokenBucket:
    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class Room:
    """A table: its match, who sits where, and the task that plays the bots."""

    def __init__(self, room_id: str, match: Match, limits: Limits, game_name: str) -> None:
        self.id = room_id
        self.match = match
        self.limits = limits
        self.game_name = game_name
        self.slots = [SeatSlot(kind) for kind in match.seats]
        self.ready: set[int] = set()
        self.lock = asyncio.Lock()
        self.changed = asyncio.Event()
        self.empty_since = time.monotonic()
        #: the open WebSockets that have not said hello yet, oldest first
        self.waiting: dict[WebSocket, None] = {}
        self.closed = False
        self.task: asyncio.Task[None] | None = None
        self.error: str | None = None

    # ------------------------------------------------------------------ seats
    def claim(self, token: Any) -> tuple[int, str] | None:
        """The seat of a known token, else the first free person seat (a new token)."""
        if isinstance(token, str):
            given = token.encode("utf-8", "surrogatepass")  # compare_digest takes non-ASCII text as bytes only
            for seat, slot in enumerate(self.slots):
                if slot.token is not None and secrets.compare_digest(slot.token.encode(), given):
                    return seat, slot.token
        for seat, slot in enumerate(self.slots):
            if slot.kind == PERSON and slot.token is None:
                slot.token = secrets.token_urlsafe(16)
                return seat, slot.token
        return None

    def sockets(self) -> int:
        return sum(len(s.sockets) for s in self.slots)

    @property
    def connections(self) -> int:
        """Open WebSockets to this room, seated or not yet: each costs the server."""
        return len(self.waiting) + self.sockets()

    def people_seated(self) -> bool:
        return all(s.token is not None for s in self.slots if s.kind == PERSON)

    def status(self) -> str:
        m = self.match
        if self.closed:
            return "closed"
        if m.state is None:
            return "waiting"
        if m.match_over:
            return "match_over"
        if m.hand_over:
            return "hand_over"
        return "playing"

    # ------------------------------------------------------------------ messages
    def message_for(self, seat: int) -> dict[str, Any]:
        """The state message of one seat: only what that seat may see."""
        m = self.match
        game = m.game
        msg: dict[str, Any] = {
            "type": "state",
            "room": self.id,
            "game": self.game_name,
            "rules": game.rules_summary(m.rules),
            "status": self.status(),
            "seat": seat,
            "seats": [
                {"kind": s.kind, "taken": s.token is not None or s.kind != PERSON, "online": bool(s.sockets)}
                for s in self.slots
            ],
            "hand_number": m.hand_number,
            "step": m.step,
            "match_scores": list(m.match_scores),
            "target": game.target(m.rules),
            "ready": sorted(self.ready),
            "view": None,
            "legal": [],
            "last_move": None,
            "history": [],
            "error": self.error or m.record_error,
        }
        if m.state is not None:
            msg["view"] = game.seat_view(m.state, seat)
            msg["legal"] = game.legal_moves(m.state, seat)
            if m.last_move is not None and m.last_move.hand == m.hand_number:
                msg["last_move"] = {"seat": m.last_move.seat, "text": m.last_move.text, "step": m.last_move.step}
            msg["history"] = [
                {
                    "hand": r["meta"]["hand"],
                    "scores": r["hand_scores"],
                    "end_reason": r["end_reason"],
                    "match_scores": r["meta"]["match_scores"],
                }
                for r in m.records
            ]
        return msg

    async def send(self, ws: WebSocket, payload: dict[str, Any]) -> None:
        if ws.application_state != WebSocketState.CONNECTED:
            return
        with contextlib.suppress(RuntimeError, WebSocketDisconnect, OSError):  # gone while we wrote
            await ws.send_text(json.dumps(payload, separators=(",", ":")))

    async def broadcast(self) -> None:
        for seat, slot in enumerate(self.slots):
            if slot.sockets:
                payload = self.message_for(seat)
                for ws in list(slot.sockets):
                    await self.send(ws, payload)

    def poke(self) -> None:
        self.changed.set()

    # ------------------------------------------------------------------ the table's clock
    async def run(self) -> None:
        """Deal when everybody is seated, play the bots one move at a time at a
        readable pace, deal the next hand when every person is ready."""
        limits = self.limits
        while not self.closed:
            self.changed.clear()  # a poke from now on is kept for the wait below
            acted = False
            async with self.lock:
                m = self.match
                if m.state is None and self.people_seated():
                    m.start_hand()
                    acted = True
                elif m.hand_over and not m.match_over:
                    # every room has a person (a room of bots only is refused: nobody could watch it)
                    people = {s for s, slot in enumerate(self.slots) if slot.kind == PERSON}
                    if people <= self.ready:
                        self.ready.clear()
                        m.start_hand()
                        acted = True
                if acted:
                    await self.broadcast()
            if acted:
                continue
            if self.match.bot_to_act():
                await asyncio.sleep(limits.bot_delay)
                async with self.lock:
                    if self.match.bot_to_act():
                        try:
                            action = await asyncio.to_thread(self.match.bot_move)
                            self.match.play(self.match.state.current, action)
                        except Exception as exc:  # a bot raised or broke the protocol: stop the table, say why
                            self.error = f"bot in seat {self.match.state.current} failed: {type(exc).__name__}: {exc}"
                            log.error("room %s: %s", self.id, self.error)
                            await self.broadcast()
                            return
                        await self.broadcast()
                continue
            await self.changed.wait()

    # ------------------------------------------------------------------ one browser message
    async def handle(self, seat: int, data: Any) -> str | None:
        """Apply one parsed message of ``seat``; returns an error text, or None."""
        if not isinstance(data, dict):
            return "a message is a JSON object"
        kind = data.get("type")
        if kind == "move":
            if set(data) != {"type", "action", "step"}:
                return "a move is {type, action, step}"
            action, step = data["action"], data["step"]
            if not isinstance(step, int) or isinstance(step, bool):
                return "step must be an integer"
            async with self.lock:
                if self.match.state is None:
                    return "the hand has not started"
                if step != self.match.step:
                    return f"stale move: it answers move {step}, the hand is at move {self.match.step}"
                try:
                    self.match.play(seat, action)
                except MoveError as exc:
                    return str(exc)
                await self.broadcast()
            self.poke()
            return None
        if kind == "next":
            async with self.lock:
                if not self.match.hand_over or self.match.match_over:
                    return "there is no next hand to start now"
                self.ready.add(seat)
                await self.broadcast()
            self.poke()
            return None
        if kind == "ping":
            return None
        return f"unknown message type {kind!r}"

    def close(self) -> None:
        self.closed = True
        self.poke()
        if self.task is not None:
            self.task.cancel()


class Tables:
    """Every room of one server."""

    def __init__(self, limits: Limits, records_dir: Path | None, seed: int | None = None) -> None:
        self.limits = limits
        #: rooms' match seeds: random, or seed, seed + 1, ... (reproducible tests)
        self.seed = seed
        self.created = 0
        self.records_dir = records_dir
        self.rooms: dict[str, Room] = {}
        self.reaper: asyncio.Task[None] | None = None

    async def create(self, request: dict[str, Any]) -> Room:
        """A new room, its match built in a worker thread: building a network bot reads its checkpoint
        (seconds the first time), which on the event loop stalled every room."""
        if len(self.rooms) >= self.limits.max_rooms:
            raise ValueError(f"the server holds its maximum of {self.limits.max_rooms} rooms; try later")
        room_id = secrets.token_urlsafe(6)
        seed = secrets.randbits(128) if self.seed is None else self.seed + self.created
        match, game_name = await asyncio.to_thread(self._new_match, request, room_id, seed)
        if len(self.rooms) >= self.limits.max_rooms:  # others were created meanwhile
            raise ValueError(f"the server holds its maximum of {self.limits.max_rooms} rooms; try later")
        self.created += 1
        room = Room(room_id, match, self.limits, game_name)
        room.task = asyncio.get_running_loop().create_task(room.run())
        self.rooms[room_id] = room
        if self.reaper is None:
            self.reaper = asyncio.get_running_loop().create_task(self.reap())
        return room

    def _new_match(self, request: dict[str, Any], room_id: str, seed: int) -> tuple[Match, str]:
        """The room request checked, and its match (off the event loop: see :meth:`create`)."""
        allowed = {"game", "preset", "rules_yaml", "players", "seats"}
        unknown = sorted(set(request) - allowed)
        if unknown:
            raise ValueError(f"unknown field(s) {unknown}; a room request has {sorted(allowed)}")
        game = game_named(request.get("game", "burako"))
        yaml_text = request.get("rules_yaml")
        if yaml_text is not None and not isinstance(yaml_text, str):
            raise ValueError("rules_yaml must be text")
        rules = game.rules_from_request(request.get("preset", "burako"), yaml_text)
        players = request.get("players", 2)
        if not isinstance(players, int) or isinstance(players, bool):
            raise ValueError("players must be an integer")
        if players not in game.players_allowed(rules):
            raise ValueError(f"{players} players is not allowed by these rules ({list(game.players_allowed(rules))})")
        seats = request.get("seats")
        if seats is None:
            seats = [PERSON] + [default_bot(rules, players)] * (players - 1)
        if not isinstance(seats, list) or not all(isinstance(s, str) for s in seats):
            raise ValueError("seats must be a list of names")
        if PERSON not in seats:  # nobody could sit down to watch it: it would play on unseen, holding a room
            raise ValueError(f"at least one seat must be a person ({PERSON!r})")
        record_path = None
        if self.records_dir is not None:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            record_path = self.records_dir / f"room-{room_id}.jsonl"
        try:
            match = Match(game, rules, players, seats, seed=seed, record_path=record_path, meta={"room": room_id})
        except (KeyError, TypeError) as exc:  # an agent that cannot sit at this table
            raise ValueError(f"cannot seat these players: {exc}") from exc
        except ImportError as exc:  # a network bot in an install without torch (the web extra alone)
            raise ValueError(
                f"cannot seat these players: {exc} (network bots need torch: pip install 'burako-env[train]')"
            ) from exc
        return match, game.name

    async def reap(self) -> None:
        """End rooms nobody has been connected to for ``room_timeout`` seconds."""
        while True:
            await asyncio.sleep(min(5.0, self.limits.room_timeout / 2))
            now = time.monotonic()
            for room_id, room in list(self.rooms.items()):
                # connections, not seated sockets: one that has not said hello yet took a seat in the
                # closed room afterwards (no deal ever, and outside max_rooms)
                if room.connections == 0 and now - room.empty_since >= self.limits.room_timeout:
                    room.close()
                    del self.rooms[room_id]

    def close_all(self) -> None:
        for room in self.rooms.values():
            room.close()
        self.rooms.clear()
        if self.reaper is not None:
            self.reaper.cancel()


def _parse_json(text: str | bytes, what: str) -> Any:
    """JSON from a client, or a ValueError naming ``what``: nesting too deep for the parser
    (a RecursionError) is refused like any other bad JSON, not answered with a 500."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply") from None


async def _read_body(request: Request, limit: int) -> bytes:
    size = request.headers.get("content-length")
    if size is not None and (not size.isdigit() or int(size) > limit):
        raise ValueError(f"the request is larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ValueError(f"the request is larger than {limit} bytes")
    return bytes(body)


def create_app(
    limits: Limits | None = None, records_dir: str | Path | None = "web-records", seed: int | None = None
) -> Starlette:
    """The web table app. ``records_dir``: where each room's hands are written
    as JSON-lines records (None: not written). ``seed``: deal the rooms'
    matches from ``seed``, ``seed + 1``, ... instead of at random (tests)."""
    limits = limits or Limits()
    tables = Tables(limits, None if records_dir is None else Path(records_dir), seed)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def options_payload() -> dict[str, Any]:
        from burako_env.rules import load_rules

        presets = {}
        for name in preset_names():
            rules = load_rules(name)
            presets[name] = {
                "players": list(rules.players),
                "target": rules.target,
                "default_bot": {str(n): default_bot(rules, n) for n in rules.players},
            }
        return {"games": sorted(GAMES), "presets": presets, "seat_kinds": seat_kinds("burako")}

    async def options(request: Request) -> Response:
        # default_bot reads the shipped network the first time: in a thread, not on the event loop
        return JSONResponse(await asyncio.to_thread(options_payload))

    async def create_room(request: Request) -> Response:
        try:
            body = await _read_body(request, limits.max_request)
            data = _parse_json(body, "the request")
            if not isinstance(data, dict):
                raise ValueError("the request is a JSON object")
            room = await tables.create(data)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse({"room": room.id, "url": f"/?room={room.id}"})

    async def replay(request: Request) -> Response:
        try:
            body = await _read_body(request, limits.max_replay)
            hands = []
            moves = 0
            for number, line in enumerate(body.decode("utf-8").splitlines(), start=1):
                if not line.strip():
                    continue
                if len(hands) >= limits.max_replay_hands:
                    raise ValueError(f"at most {limits.max_replay_hands} records per replay")
                record = _parse_json(line, f"line {number}")
                try:
                    validate_record(record)
                    moves += len(record["actions"])
                    if moves > limits.max_replay_moves:
                        raise ValueError(f"line {number}: at most {limits.max_replay_moves} moves per replay")
                    game = game_of(record)
                    if game not in GAMES:
                        raise ValueError(f"line {number}: a {game} record; this table replays {', '.join(GAMES)}")
                    hands.append(await asyncio.to_thread(GAMES[game].replay_frames, record))
                except RecordError as exc:
                    raise ValueError(str(exc.at_line(number))) from exc
            if not hands:
                raise ValueError("the file holds no record")
        except (ValueError, UnicodeDecodeError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse({"hands": hands})

    async def table_socket(ws: WebSocket) -> None:
        room = tables.rooms.get(ws.path_params["room_id"])
        await ws.accept()
        if room is None or room.closed:
            await ws.send_text(json.dumps({"type": "error", "message": "no such room (it may have ended)"}))
            await ws.close(code=4404)
            return
        evicted: WebSocket | None = None
        if room.connections >= limits.max_sockets_per_room:
            if not room.waiting:  # every connection holds a seat
                await ws.send_text(json.dumps({"type": "error", "message": "too many connections to this room"}))
                await ws.close(code=4429)
                return
            # the oldest silent connection makes room: a player coming back is never locked out by them
            evicted = next(iter(room.waiting))
            del room.waiting[evicted]  # its own handler, woken by the close, sees it gone and returns
        room.waiting[ws] = None  # counted from here (Room.connections), before anything awaits
        bucket = TokenBucket(limits.rate, limits.burst)
        seat: int | None = None
        hello_by = time.monotonic() + limits.hello_timeout
        try:
            if evicted is not None:
                await room.send(evicted, {"type": "error", "message": "too many connections to this room: closed"})
                with contextlib.suppress(RuntimeError, WebSocketDisconnect, OSError):
                    await evicted.close(code=4429)
            while True:
                if seat is None:
                    try:
                        message = await asyncio.wait_for(ws.receive(), max(0.0, hello_by - time.monotonic()))
                    except (TimeoutError, asyncio.TimeoutError):  # two classes on Python 3.10, one since 3.11
                        await room.send(ws, {"type": "error", "message": f"no hello within {limits.hello_timeout} s"})
                        await ws.close(code=4408)
                        return
                    if ws not in room.waiting:  # closed to make room for a newer connection
                        return
                else:
                    message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                if not bucket.take():  # every message, binary ones too (they were answered at full speed)
                    await room.send(ws, {"type": "error", "message": "too many messages: slow down"})
                    continue
                text = message.get("text")
                if text is None:
                    await room.send(ws, {"type": "error", "message": "text frames only (JSON)"})
                    continue
                if len(text.encode()) > limits.max_message:
                    await room.send(ws, {"type": "error", "message": f"message larger than {limits.max_message} bytes"})
                    continue
                try:
                    data = _parse_json(text, "a message")
                except ValueError as exc:
                    await room.send(ws, {"type": "error", "message": f"{exc}; a message is a JSON object"})
                    continue
                if seat is None:
                    if not isinstance(data, dict) or data.get("type") != "hello":
                        await room.send(ws, {"type": "error", "message": "say hello first: {type: hello, token}"})
                        continue
                    async with room.lock:
                        if ws not in room.waiting:  # closed to make room while it waited for the lock
                            return
                        if room.closed:  # ended while this socket waited to say hello
                            await room.send(ws, {"type": "error", "message": "no such room (it may have ended)"})
                            await ws.close(code=4404)
                            return
                        claimed = room.claim(data.get("token"))
                        if claimed is None:
                            await room.send(ws, {"type": "error", "message": "every seat of this room is taken"})
                            await ws.close(code=4403)
                            return
                        seat, token = claimed
                        room.waiting.pop(ws, None)
                        room.slots[seat].sockets.add(ws)
                        await room.send(ws, {"type": "welcome", "room": room.id, "seat": seat, "token": token})
                        await room.broadcast()
                    room.poke()
                    continue
                error = await room.handle(seat, data)
                if error is not None:
                    await room.send(ws, {"type": "error", "message": error})
        except WebSocketDisconnect:
            pass
        finally:
            room.waiting.pop(ws, None)
            if seat is not None:
                room.slots[seat].sockets.discard(ws)
                if room.sockets() == 0:
                    room.empty_since = time.monotonic()
                if not room.closed:
                    async with room.lock:
                        await room.broadcast()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        tables.close_all()

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/options", options),
            Route("/api/rooms", create_room, methods=["POST"]),
            Route("/api/replay", replay, methods=["POST"]),
            WebSocketRoute("/ws/{room_id}", table_socket),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=lifespan,
    )
    app.state.tables = tables
    return app
