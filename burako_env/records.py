"""Game records: one JSON object per line, enough to replay a hand exactly (E4).

A record holds the deal seed and every action, so the whole hand can be
rebuilt with :func:`replay`; the descriptions, score breakdown and result are
stored as well so a record can be read without the engine, and so that
:func:`replay` can prove the record and the engine still agree (a record
that no longer replays means the engine's behaviour changed, or the file was
edited). An episode is one hand, as in the env's default.

Format version 1 (every field is required except ``meta``; no other field
is allowed):

| field        | type                    | contents                                                   |
|--------------|-------------------------|------------------------------------------------------------|
| format       | int                     | format version, ``FORMAT_VERSION`` (= 1)                   |
| rules        | object                  | ``Rules.to_dict()`` of the table (JSON turns the hand_size |
|              |                         | keys into strings; they are read back as ints)             |
| num_players  | int                     | players at the table                                       |
| deal_seed    | int >= 0                | dealt by ``new_game(default_rng(deal_seed), ...)``         |
| mano         | int                     | first mano, drawn by the deal (checked on replay)          |
| agents       | list[str], one per seat | who played each seat (a free label)                        |
| sides        | list[int], one per seat | the side of each seat (checked on replay)                  |
| actions      | list[int]               | every action of the hand, in order                         |
| descriptions | list[str], same length  | ``state.describe(a)`` just before ``a`` was applied        |
| turns        | int                     | ``state.turn`` when the hand ended                         |
| end_reason   | str                     | closed, stock_exhausted, void or truncated                 |
| hand_scores  | list[object] or null    | per side ``SideScore.to_dict()``: melded, canasta_bonus,   |
|              |                         | closing_bonus, hand_penalty, muerto_penalty (penalties     |
|              |                         | negative), total; null for a void or truncated hand        |
| result       | object                  | ``{"winner": side or null, "side_rewards": [...]}``:       |
|              |                         | winner = the side with the unique highest total            |
|              |                         | (null: tie, void, truncated); side_rewards =               |
|              |                         | ``state.side_rewards()``, one float per side               |
| meta         | object (optional)       | free data of the writer (e.g. the evaluation pairing)      |

``game`` (optional, str): ``"burako"`` (the table above; a record without
the field is a Burako record, as every record written before the field was)
or ``"rummy"``. A Rummy record (one hand of ``burako_env.rummy``, dealt by
``RummyState.new_game(default_rng(deal_seed), rules, num_players)``) has
``format``, ``game``, ``num_players``, ``deal_seed``, ``agents``, ``actions``,
``descriptions`` (``rummy.actions.describe_action``), ``turns`` as above, and

| field        | type                    | contents                                                   |
|--------------|-------------------------|------------------------------------------------------------|
| rules        | object                  | ``RummyRules.to_dict()``                                   |
| starter      | int                     | the seat that started the hand, drawn by the deal (R11i)   |
| end_reason   | str                     | closed or blocked (R8, R9)                                 |
| hand_scores  | list[int], one per seat | each seat's hand total (R10; the closer's is 0)            |
| result       | object                  | ``{"closer": seat or null, "winners": [seats],             |
|              |                         | "rewards": [floats]}`` (``hand_winners()``,                |
|              |                         | ``hand_rewards("score")``)                                 |
| meta         | object (optional)       | as above                                                   |

Every problem is a :class:`RecordError` (a ``ValueError``) saying where it
is: the line of the file, the field, or the index of the action.

Compression: a file whose name ends in ``.gz`` is written gzip-compressed
(appending adds a gzip member), and a gzip file is read as such whatever
its name (told by its first bytes, so a plain file named ``.gz`` by an
older writer still reads; appending to a file keeps its format). A
compressed file cut short by a killed writer reads up to the cut, where it
is a :class:`RecordError` like a torn last line.
"""

from __future__ import annotations

import gzip
import json
import math
import signal
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from burako_env import actions as A
from burako_env.engine import CLOSED, STOCK_EXHAUSTED, TRUNCATED, VOID, GameState, IllegalActionError
from burako_env.outcomes import hand_winner
from burako_env.rules import Rules, RulesError, load_rules
from burako_env.safe_yaml import short_repr

if TYPE_CHECKING:
    from burako_env.rummy.engine import RummyState
    from burako_env.rummy.rules import RummyRules

FORMAT_VERSION = 1
END_REASONS = (CLOSED, STOCK_EXHAUSTED, VOID, TRUNCATED)
SCORE_KEYS = ("melded", "canasta_bonus", "closing_bonus", "hand_penalty", "muerto_penalty", "total")
#: the fields every record has, whichever the game
COMMON_FIELDS = (
    "format",
    "rules",
    "num_players",
    "deal_seed",
    "agents",
    "actions",
    "descriptions",
    "turns",
    "end_reason",
    "hand_scores",
    "result",
)
REQUIRED_FIELDS = (*COMMON_FIELDS, "mano", "sides")
OPTIONAL_FIELDS = ("meta", "game")
GAMES = ("burako", "rummy")
RUMMY_END_REASONS = ("closed", "blocked")
RUMMY_REQUIRED_FIELDS = (*COMMON_FIELDS, "game", "starter")


class RecordError(ValueError):
    """A record is malformed or does not replay. ``line`` (1-based line of
    the file), ``field`` and ``index`` (action index) say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        index: int | None = None,
        cut_short: bool = False,
    ) -> None:
        self.reason = message
        self.line = line
        self.field = field
        self.index = index
        #: a compressed file that ends without gzip's end (a writer killed between two records, or in one)
        self.cut_short = cut_short
        super().__init__(self._text())

    def _text(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        if self.index is not None:
            where.append(f"action {self.index}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason

    def at_line(self, line: int) -> RecordError:
        """The same error with the file line added (readers know it, replay does not)."""
        return RecordError(self.reason, line=line, field=self.field, index=self.index, cut_short=self.cut_short)

    def __reduce__(self) -> tuple[Any, ...]:
        # keyword-only details survive pickling (worker processes); a resume reads cut_short
        return (_rebuild_record_error, (self.reason, self.line, self.field, self.index, self.cut_short))


def _rebuild_record_error(
    reason: str, line: int | None, field: str | None, index: int | None, cut_short: bool = False
) -> RecordError:
    return RecordError(reason, line=line, field=field, index=index, cut_short=cut_short)


# ---------------------------------------------------------------------- building
def build_record(
    state: GameState,
    deal_seed: int,
    mano: int,
    agents: list[str],
    actions: list[int],
    descriptions: list[str],
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of a finished hand (``state`` is its final state)."""
    if not state.hand_over:
        raise ValueError("build_record: the hand is not over")
    record: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "game": "burako",
        "rules": state.rules.to_dict(),
        "num_players": state.num_players,
        "deal_seed": int(deal_seed),
        "mano": int(mano),
        "agents": [str(a) for a in agents],
        "sides": list(state.side_of),
        "actions": [int(a) for a in actions],
        "descriptions": list(descriptions),
        "turns": state.turn,
        "end_reason": state.end_reason,
        "hand_scores": None if state.hand_scores is None else [s.to_dict() for s in state.hand_scores],
        "result": {"winner": hand_winner(state), "side_rewards": state.side_rewards()},
    }
    if meta is not None:
        record["meta"] = dict(meta)
    return record


def build_rummy_record(
    state: RummyState,
    deal_seed: int,
    starter: int,
    agents: list[str],
    actions: list[int],
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of a finished Rummy hand (``state`` is its final state; see the module docstring)."""
    from burako_env.rummy import actions as RA

    if state.phase == state.phase.PLAY:
        raise ValueError("build_rummy_record: the hand is not over")
    record: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "game": "rummy",
        "rules": state.rules.to_dict(),
        "num_players": state.num_players,
        "deal_seed": int(deal_seed),
        "starter": int(starter),
        "agents": [str(a) for a in agents],
        "actions": [int(a) for a in actions],
        "descriptions": [RA.describe_action(int(a)) for a in actions],
        "turns": state.turns,
        "end_reason": _rummy_end_reason(state),
        "hand_scores": [int(x) for x in state.hand_scores or []],
        "result": _rummy_result(state),
    }
    if meta is not None:
        record["meta"] = dict(meta)
    return record


def _rummy_end_reason(state: RummyState) -> str:
    return "blocked" if state.blocked else "closed"


def _rummy_result(state: RummyState) -> dict[str, Any]:
    return {"closer": state.closer, "winners": state.hand_winners(), "rewards": state.hand_rewards("score")}


def game_of(record: Mapping[str, Any]) -> str:
    """The record's game: its ``game`` field, ``"burako"`` when absent (records written before the field)."""
    game = record.get("game", "burako")
    if game not in GAMES:
        raise RecordError(f"unknown game {game!r}; known games: {list(GAMES)}", field="game")
    return str(game)


# ---------------------------------------------------------------------- validation
def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _want_int(record: Mapping[str, Any], name: str, low: int | None = None) -> int:
    value = record[name]
    if not _is_int(value):
        raise RecordError(f"expected an integer, got {_type_name(value)} {value!r}", field=name)
    if low is not None and value < low:
        raise RecordError(f"must be >= {low}, got {value}", field=name)
    return value


def _want_list(record: Mapping[str, Any], name: str) -> list[Any]:
    value = record[name]
    if not isinstance(value, list):
        raise RecordError(f"expected a list, got {_type_name(value)}", field=name)
    return value


def rules_of(record: Mapping[str, Any]) -> Rules | RummyRules:
    """The record's rules, of its game (``Rules``, or ``RummyRules`` for a Rummy record), with the
    hand_size keys JSON turned into strings read back as ints."""
    data = record.get("rules")
    if not isinstance(data, Mapping):
        raise RecordError(f"expected an object (Rules.to_dict()), got {_type_name(data)}", field="rules")
    data = dict(data)
    if "preset" in data:
        # a record's rules are whole (to_dict()); a preset would read a file named by whoever wrote the
        # record (the web table's replay takes uploads)
        raise RecordError("a record's rules are complete fields, not a 'preset' to read", field="rules")
    if game_of(record) == "rummy":
        from burako_env.rummy.rules import load_rummy_rules

        try:
            return load_rummy_rules(data)
        except RulesError as exc:
            raise RecordError(str(exc), field="rules") from exc
    sizes = data.get("hand_size")
    if isinstance(sizes, Mapping):
        fixed: dict[Any, Any] = {}
        for key, value in sizes.items():
            if isinstance(key, str):
                try:
                    key = int(key)
                except ValueError:
                    raise RecordError(f"hand_size key {key!r} is not a player count", field="rules") from None
            fixed[key] = value
        data["hand_size"] = fixed
    try:
        return load_rules(data)
    except RulesError as exc:
        raise RecordError(str(exc), field="rules") from exc


def _check_seats_and_actions(record: Mapping[str, Any], n: int, per_seat: tuple[str, type], num_actions: int) -> None:
    """The fields both games share: one agent (and one ``per_seat`` entry) per seat, actions in range with
    one description each, the turn count."""
    for name, kind in (("agents", str), per_seat, ("actions", int), ("descriptions", str)):
        for i, value in enumerate(_want_list(record, name)):
            if not (_is_int(value) if kind is int else isinstance(value, str)):
                raise RecordError(f"item {i}: expected {kind.__name__}, got {_type_name(value)} {value!r}", field=name)
    for name in ("agents", per_seat[0]):
        if len(record[name]) != n:
            raise RecordError(f"expected one entry per seat ({n}), got {len(record[name])}", field=name)
    for i, a in enumerate(record["actions"]):
        if not 0 <= a < num_actions:
            raise RecordError(f"action {a} is out of range 0..{num_actions - 1}", field="actions", index=i)
    if len(record["descriptions"]) != len(record["actions"]):
        raise RecordError(
            f"{len(record['descriptions'])} descriptions for {len(record['actions'])} actions", field="descriptions"
        )
    _want_int(record, "turns", 0)


def validate_record(record: Any) -> None:
    """Check a record's shape and types (not that it replays: see :func:`replay`).
    Raises :class:`RecordError` naming the field."""
    if not isinstance(record, Mapping):
        raise RecordError(f"a record must be a JSON object, got {_type_name(record)}")
    if "format" not in record:
        raise RecordError("missing field (the format version)", field="format")
    version = record["format"]
    if not _is_int(version) or version != FORMAT_VERSION:
        raise RecordError(f"unknown format version {version!r} (this reader knows {FORMAT_VERSION})", field="format")
    if game_of(record) == "rummy":
        _validate_rummy_record(record)
        return
    _check_fields(record, REQUIRED_FIELDS)
    rules = rules_of(record)
    n = _want_int(record, "num_players")
    if n not in rules.players:
        raise RecordError(
            f"{n} players is not allowed by rules {rules.name!r} ({list(rules.players)})", field="num_players"
        )
    sides = rules.num_sides(n)
    _want_int(record, "deal_seed", 0)
    mano = _want_int(record, "mano", 0)
    if mano >= n:
        raise RecordError(f"seat {mano} does not exist with {n} players", field="mano")
    _check_seats_and_actions(record, n, ("sides", int), A.NUM_ACTIONS)
    if record["end_reason"] not in END_REASONS:
        raise RecordError(f"expected one of {list(END_REASONS)}, got {record['end_reason']!r}", field="end_reason")
    scores = record["hand_scores"]
    if scores is not None:
        if not isinstance(scores, list) or len(scores) != sides:
            raise RecordError(f"expected null or a list of {sides} per-side breakdowns", field="hand_scores")
        for s, entry in enumerate(scores):
            if not isinstance(entry, Mapping) or sorted(entry) != sorted(SCORE_KEYS):
                raise RecordError(f"side {s}: expected an object with keys {list(SCORE_KEYS)}", field="hand_scores")
            for key in SCORE_KEYS:
                if not _is_int(entry[key]):
                    raise RecordError(f"side {s}: {key} must be an integer, got {entry[key]!r}", field="hand_scores")
    result = record["result"]
    if not isinstance(result, Mapping) or sorted(result) != ["side_rewards", "winner"]:
        raise RecordError("expected an object with keys 'winner' and 'side_rewards'", field="result")
    winner = result["winner"]
    if winner is not None and not (_is_int(winner) and 0 <= winner < sides):
        raise RecordError(f"winner must be null or a side 0..{sides - 1}, got {winner!r}", field="result")
    _check_rewards(result["side_rewards"], sides, "side_rewards")
    _check_meta(record)


def _check_meta(record: Mapping[str, Any]) -> None:
    """``meta`` (optional) is an object that a record line can hold: finite numbers and JSON's types only
    (NaN, or a numpy number, made the writer fail after the record had been accepted)."""
    if "meta" not in record:
        return
    meta = record["meta"]
    if not isinstance(meta, Mapping):
        raise RecordError(f"expected an object, got {_type_name(meta)}", field="meta")
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"not writable as JSON ({exc})", field="meta") from exc


def _check_rewards(rewards: Any, count: int, name: str) -> None:
    """A result's rewards: a list of ``count`` finite numbers (not strings, not booleans)."""
    if (
        not isinstance(rewards, list)
        or len(rewards) != count
        or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) for r in rewards)
    ):
        raise RecordError(f"{name} must be a list of {count} finite numbers, got {short_repr(rewards)}", field="result")


def _check_fields(record: Mapping[str, Any], required: Sequence[str]) -> None:
    """Every required field present, nothing beyond them and the optional ones."""
    for name in required:
        if name not in record:
            raise RecordError("missing field", field=name)
    unknown = sorted(set(record) - set(required) - set(OPTIONAL_FIELDS))
    if unknown:
        raise RecordError(f"unknown field(s) {unknown}; extra data belongs in 'meta'", field=unknown[0])


def _validate_rummy_record(record: Mapping[str, Any]) -> None:
    from burako_env.rummy import actions as RA
    from burako_env.rummy.rules import load_rummy_rules

    _check_fields(record, RUMMY_REQUIRED_FIELDS)
    if not isinstance(record["rules"], Mapping):
        raise RecordError(
            f"expected an object (RummyRules.to_dict()), got {_type_name(record['rules'])}", field="rules"
        )
    try:
        rules = load_rummy_rules(dict(record["rules"]))
    except RulesError as exc:
        raise RecordError(str(exc), field="rules") from exc
    n = _want_int(record, "num_players")
    if n not in rules.players:
        raise RecordError(f"{n} players is not allowed by rules {rules.name!r}", field="num_players")
    _want_int(record, "deal_seed", 0)
    if _want_int(record, "starter", 0) >= n:
        raise RecordError(f"seat {record['starter']} does not exist with {n} players", field="starter")
    _check_seats_and_actions(record, n, ("hand_scores", int), RA.NUM_ACTIONS)
    if record["end_reason"] not in RUMMY_END_REASONS:
        raise RecordError(
            f"expected one of {list(RUMMY_END_REASONS)}, got {record['end_reason']!r}", field="end_reason"
        )
    result = record["result"]
    if not isinstance(result, Mapping) or sorted(result) != ["closer", "rewards", "winners"]:
        raise RecordError("expected an object with keys 'closer', 'winners' and 'rewards'", field="result")
    closer, winners = result["closer"], result["winners"]
    if closer is not None and not (_is_int(closer) and 0 <= closer < n):
        raise RecordError(f"closer must be null or a seat 0..{n - 1}, got {short_repr(closer)}", field="result")
    if (
        not isinstance(winners, list)
        or not all(_is_int(w) and 0 <= w < n for w in winners)
        or len(set(winners)) != len(winners)
    ):
        raise RecordError(
            f"winners must be a list of distinct seats 0..{n - 1}, got {short_repr(winners)}", field="result"
        )
    _check_rewards(result["rewards"], n, "rewards")
    _check_meta(record)


# ---------------------------------------------------------------------- files
def dumps_record(record: Mapping[str, Any]) -> str:
    """One record as one compact JSON line (no newline). Same record, same bytes (E4)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


#: the signals a command line turns into KeyboardInterrupt (Ctrl-C; ``kill`` in burako-eval and burako-train)
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then deliver them as they would have been.

    A KeyboardInterrupt raised inside gzip's write, between its compressed bytes and its
    checksum, leaves a file whose end fails its CRC. Python runs signal handlers in the main
    thread only, so swapping the handlers there (not masking the signal, which another thread
    could still receive) covers a signal sent to any thread."""
    if threading.current_thread() is not threading.main_thread() or any(
        signal.getsignal(signum) is None
        for signum in _INTERRUPTS  # a handler set outside Python: left alone
    ):
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum)) for signum in _INTERRUPTS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)  # the restored handler: KeyboardInterrupt, or the default action


class RecordWriter:
    """Appends validated records to a JSON-lines file, one per line, as they
    come (an evaluation streams thousands of games without keeping them).
    ``compress``: gzip or not; None decides as the module docstring says
    (appending to a non-empty file keeps its format, else a ``.gz`` name)."""

    def __init__(self, path: str | Path, mode: str = "w", compress: bool | None = None) -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', got {mode!r}")
        self.path = Path(path)
        if compress is None:
            appending = mode == "a" and self.path.is_file() and self.path.stat().st_size > 0
            compress = is_gzip(self.path) if appending else self.path.name.endswith(".gz")
        self.compressed = compress
        self._file: IO[str] | None = (
            gzip.open(self.path, mode + "t", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close())
            if compress
            else self.path.open(mode, encoding="utf-8", newline="\n")
        )
        self.count = 0

    def write(self, record: Mapping[str, Any]) -> None:
        if self._file is None:
            raise ValueError("RecordWriter is closed")
        try:
            validate_record(record)
        except RecordError as exc:
            raise RecordError(f"refusing to write record {self.count}: {exc}") from exc
        line = dumps_record(record) + "\n"
        with _interrupts_deferred():  # an interrupted gzip write would corrupt the whole file's end
            self._file.write(line)
            # on disk at once (a gzip stream: a sync flush), so a killed writer loses at most the line it was writing
            self._file.flush()
            self.count += 1

    def close(self) -> None:
        if self._file is not None:
            with _interrupts_deferred():  # gzip's end (checksum and size) written whole
                self._file.close()
            self._file = None

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_records(path: str | Path, records: Iterable[Mapping[str, Any]], compress: bool | None = None) -> int:
    """Write records (any iterable, consumed lazily) as JSON lines; returns the
    count. ``compress``: as :class:`RecordWriter`'s."""
    with RecordWriter(path, compress=compress) as writer:
        for record in records:
            writer.write(record)
        return writer.count


#: the first two bytes of a gzip file
GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | Path) -> bool:
    """Whether the file is gzip-compressed (by its first bytes, not its name)."""
    with Path(path).open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def record_bytes(path: str | Path) -> bytes:
    """The file's contents, decompressed if it is gzip. A compressed file
    cut short (a killed writer) gives what was written before the cut; a
    corrupt one is a :class:`RecordError`."""
    data = Path(path).read_bytes()
    if not data.startswith(GZIP_MAGIC):
        return data
    parts = []
    while data:  # one gzip member after another (each append adds one)
        member = zlib.decompressobj(wbits=31)
        try:
            parts.append(member.decompress(data))
        except zlib.error as exc:
            raise RecordError(f"{path}: corrupt gzip data ({exc})") from exc
        if not member.eof:  # cut short
            break
        data = member.unused_data
    return b"".join(parts)


def _raw_lines(path: str | Path) -> Iterator[bytes]:
    """The file's lines as bytes, decompressed if it is gzip."""
    if is_gzip(path):
        with gzip.open(path, "rb") as f:
            yield from f
    else:
        with Path(path).open("rb") as f:
            yield from f


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (the writer never writes them): a line holding one is refused."""
    raise ValueError(f"not valid JSON: {name} is no JSON number")


def iter_records(path: str | Path, *, verify: bool = False) -> Iterator[dict[str, Any]]:
    """Read records one by one (a gzip file too); blank lines are skipped. Each
    is validated, and replayed too with ``verify=True``; errors carry the line number."""
    lines = _raw_lines(path)
    number = 0
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # not OSError: a missing file stays FileNotFoundError
            raise RecordError(
                f"{path}: the compressed file is cut short or corrupt ({exc})",
                line=number + 1,
                cut_short=isinstance(exc, EOFError),  # the others are damage, not a cut
            ) from exc
        number += 1
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(
                f"{path}: not UTF-8 text (byte {exc.start} of the line is {raw[exc.start : exc.start + 1]!r})",
                line=number,
            ) from exc
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise RecordError(f"not valid JSON: {exc.msg} (column {exc.colno})", line=number) from exc
        except ValueError as exc:
            raise RecordError(str(exc), line=number) from exc
        try:
            validate_record(record)
            if verify:
                replay(record)
        except RecordError as exc:
            raise exc.at_line(number) from exc
        yield record


def read_records(path: str | Path, *, verify: bool = False) -> list[dict[str, Any]]:
    """All records of a JSON-lines file (see :func:`iter_records`)."""
    return list(iter_records(path, verify=verify))


# ---------------------------------------------------------------------- replay
@dataclass
class ReplayStep:
    """One position of a replayed hand. ``index`` 0 is the deal (no action);
    ``index`` k + 1 is the state after action k, played by ``seat``."""

    index: int
    seat: int | None
    action: int | None
    description: str | None
    state: Any  # GameState, or RummyState for a Rummy record


def _replay(record: Mapping[str, Any], copies: bool) -> Iterator[ReplayStep]:
    """The one replay loop: checks everything as it goes, yields each position
    (fresh clones when ``copies``, for UIs that keep them)."""
    validate_record(record)
    if game_of(record) == "rummy":
        yield from _replay_rummy(record, copies)
        return
    rules = rules_of(record)
    n = record["num_players"]
    state = GameState.new_game(np.random.default_rng(record["deal_seed"]), rules, n)
    if state.mano != record["mano"]:
        raise RecordError(f"the deal's mano is seat {state.mano}, the record says {record['mano']}", field="mano")
    if list(state.side_of) != record["sides"]:
        raise RecordError(f"sides are {list(state.side_of)}, the record says {record['sides']}", field="sides")
    if copies:
        yield ReplayStep(0, None, None, None, state.clone())
    for k, (action, text) in enumerate(zip(record["actions"], record["descriptions"], strict=True)):
        if state.hand_over:
            raise RecordError(
                f"the hand ended ({state.end_reason}) after {k} actions; {len(record['actions']) - k} more recorded",
                index=k,
            )
        seat = state.current
        if not state.is_legal(action):
            raise RecordError(
                f"does not replay: action {action} ({state.describe(action)}) is not legal for seat {seat} "
                f"in phase {state.phase.name} at turn {state.turn}",
                index=k,
            )
        described = state.describe(action)
        if described != text:
            raise RecordError(f"action {action} is {described!r} here, the record says {text!r}", index=k)
        try:
            state.apply(action)
        except IllegalActionError as exc:  # pragma: no cover - is_legal said yes
            raise RecordError(f"does not replay: {exc}", index=k) from exc
        if copies:
            yield ReplayStep(k + 1, seat, action, text, state.clone())
    if not state.hand_over:
        raise RecordError(
            f"the record ends after {len(record['actions'])} actions but the hand is not over "
            f"(seat {state.current} to act, phase {state.phase.name})",
            field="actions",
        )
    _check_outcome(record, state)
    if not copies:
        yield ReplayStep(len(record["actions"]), None, None, None, state)


def _replay_rummy(record: Mapping[str, Any], copies: bool) -> Iterator[ReplayStep]:
    """:func:`_replay` for a Rummy record: same checks, on the Rummy engine."""
    from burako_env.rummy import actions as RA
    from burako_env.rummy.engine import IllegalActionError as RummyIllegal
    from burako_env.rummy.engine import Phase, RummyState

    rules = rules_of(record)
    state = RummyState.new_game(np.random.default_rng(record["deal_seed"]), rules, record["num_players"])
    if state.starter != record["starter"]:
        raise RecordError(
            f"the deal's starter is seat {state.starter}, the record says {record['starter']}", field="starter"
        )
    if copies:
        yield ReplayStep(0, None, None, None, state.clone())
    for k, (action, text) in enumerate(zip(record["actions"], record["descriptions"], strict=True)):
        if state.phase != Phase.PLAY:
            raise RecordError(f"the hand ended after {k} actions; {len(record['actions']) - k} more recorded", index=k)
        seat = state.current
        described = RA.describe_action(action)
        if described != text:
            raise RecordError(f"action {action} is {described!r}, the record says {text!r}", index=k)
        try:
            state.step(action)
        except RummyIllegal as exc:
            raise RecordError(f"does not replay: {exc}", index=k) from exc
        if copies:
            yield ReplayStep(k + 1, seat, action, text, state.clone())
    if state.phase == Phase.PLAY:
        raise RecordError(
            f"the record ends after {len(record['actions'])} actions but the hand is not over "
            f"(seat {state.current} to act)",
            field="actions",
        )
    for name, replayed in (
        ("turns", state.turns),
        ("end_reason", _rummy_end_reason(state)),
        ("hand_scores", [int(x) for x in state.hand_scores or []]),
        ("result", _rummy_result(state)),
    ):
        recorded = record[name]
        if name == "result":
            recorded = {**recorded, "rewards": [float(r) for r in recorded["rewards"]]}
        if replayed != recorded:
            raise RecordError(f"the replay gives {replayed!r}, the record says {record[name]!r}", field=name)
    if not copies:
        yield ReplayStep(len(record["actions"]), None, None, None, state)


def _check_outcome(record: Mapping[str, Any], state: GameState) -> None:
    if state.end_reason != record["end_reason"]:
        raise RecordError(
            f"the hand ends {state.end_reason!r}, the record says {record['end_reason']!r}", field="end_reason"
        )
    if state.turn != record["turns"]:
        raise RecordError(f"the hand ends at turn {state.turn}, the record says {record['turns']}", field="turns")
    replayed = None if state.hand_scores is None else [s.to_dict() for s in state.hand_scores]
    recorded = record["hand_scores"]
    if (replayed is None) != (recorded is None):
        raise RecordError(f"the replay's breakdown is {replayed}, the record says {recorded}", field="hand_scores")
    if replayed is not None:
        for s, (mine, theirs) in enumerate(zip(replayed, recorded, strict=True)):
            for key in SCORE_KEYS:
                if mine[key] != theirs[key]:
                    raise RecordError(
                        f"side {s} {key}: the replay gives {mine[key]}, the record says {theirs[key]}",
                        field="hand_scores",
                    )
    result = record["result"]
    winner = hand_winner(state)
    if winner != result["winner"]:
        raise RecordError(f"winner: the replay gives {winner}, the record says {result['winner']}", field="result")
    rewards = state.side_rewards()
    if [float(r) for r in result["side_rewards"]] != rewards:
        raise RecordError(
            f"side_rewards: the replay gives {rewards}, the record says {result['side_rewards']}", field="result"
        )


def replay(record: Mapping[str, Any]) -> Any:
    """Rebuild the hand (a Burako ``GameState``, a ``RummyState`` for a Rummy
    record) from its seed and actions and check it reproduces the record
    exactly (E4): every description, the end reason, the turn count, the
    breakdown and the result. Returns the final state; any difference is a
    :class:`RecordError` naming the action index or the field."""
    final = None
    for step in _replay(record, copies=False):
        final = step.state
    assert final is not None
    return final


def replay_steps(record: Mapping[str, Any]) -> Iterator[ReplayStep]:
    """Every position of the hand for replay UIs: the deal, then the state
    after each action (independent copies). Checked like :func:`replay`; the
    outcome is checked once the last step has been taken."""
    return _replay(record, copies=True)
