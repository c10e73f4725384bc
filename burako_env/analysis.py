"""Game records, tournaments and training runs as pandas DataFrames.

    from burako_env import analysis
    games = analysis.games_frame("games.jsonl")          # one row per game
    moves = analysis.decisions_frame("games.jsonl")      # one row per decision
    board = analysis.tournament_frames("runs/tournament_main")["leaderboard"]
    curves = analysis.tensorboard_scalars("runs/burako2p__ppo_selfplay__1__...")

Records are replayed (``records.replay_steps``, checked exactly), so the
frames hold facts the record does not store (canastas, when each side took
its muerto, hand and stock sizes before each move).

``games_frame`` columns:

| column                         | meaning                                                      |
|--------------------------------|--------------------------------------------------------------|
| game                           | index of the record in the input                             |
| rules, num_players, deal_seed  | the table                                                    |
| mano, mano_side                | the seat that moved first (the mano, B5) and its side        |
| agent_<seat>, side_<seat>      | who played each seat, and its side                           |
| end_reason                     | closed, stock_exhausted, void, truncated                     |
| void, truncated, closed        | booleans of end_reason                                       |
| closer_side                    | side that closed (-1 if nobody)                              |
| turns, actions                 | turns completed (the closing turn is not counted) and moves  |
| winner                         | winning side, -1 for none (tie, void, truncated)             |
| winner_agent                   | the winning side's agent name(s) joined by "+", "" for none  |
| s<side>_<melded, canasta_bonus,| the score breakdown per side (NaN when the hand has no score)|
|  closing_bonus, hand_penalty,  |                                                              |
|  muerto_penalty, total>        |                                                              |
| s<side>_canastas,              | canastas (and clean ones) the side held at the end           |
|  s<side>_clean_canastas        |                                                              |
| s<side>_muerto_turn            | turn at which the side took its muerto (NaN: never)          |
| meta_<key>[_<key>…]            | the record's ``meta`` fields (nested mappings flattened)     |

Rummy records (``"game": "rummy"``, ``burako_env.rummy``) have their own
columns in ``games_frame`` (a frame of both games has the union, NaN where a
column is the other game's): game, game_type ("rummy"), rules, num_players,
deal_seed, starter, agent_<seat>, end_reason (closed, blocked), closed,
blocked, closer (the seat that closed, -1 if the hand was blocked), turns,
actions, winner (the seat with the lowest hand total, R10; -1 for a tie,
R11f: a player who also emptied his hand ties the closer at 0), winner_agent
("" for a tie), total_<seat> (the hand total,
R10: 0 for the closer, lower is better), first_play_turn_<seat> (turn of the
seat's first play, R5; NaN: never), table_tiles (tiles on the table at the
end), meta_<key>. Burako rows have game_type "burako"; their winner is a side.

``decisions_frame`` columns: game, index (move number in the hand), seat,
side, agent, turn, phase, action, kind (draw, take_pile, keep, reject,
choose, discard, meld, add), tile (the tile discarded or added, else ""),
meld (the meld made or added to, else ""), description, hand_size,
stock_size, pile_size (all before the move), legal_actions (how many
choices the seat had; 1 means forced). Rummy decisions: side is the seat,
kind is add_tile, add_closing, commit or end_turn (``burako_env.rummy.actions``),
tile the tile put into the play, table_size instead of pile_size.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from burako_env import actions as A
from burako_env.melds import PATTERNS, describe_meld
from burako_env.records import SCORE_KEYS, RecordError, ReplayStep, game_of, read_records, replay_steps
from burako_env.scenario import tile_text
from burako_env.stats import rate_ci
from burako_env.tiles import tile_name

Records = str | Path | Iterable[Mapping[str, Any]]


def _records(source: Records) -> list[Mapping[str, Any]]:
    if isinstance(source, (str, Path)):
        return list(read_records(source))
    if isinstance(source, Mapping):  # one record (a play_game result's .record): its keys were taken as records
        return [source]
    return list(source)


def _replayed(record: Mapping[str, Any], game: int) -> list[ReplayStep]:
    """The record's states, move by move; a record that does not replay is named by its place
    (``game`` + 1: its line in a file), which the replay alone does not know."""
    try:
        return list(replay_steps(record))
    except RecordError as exc:
        raise exc.at_line(game + 1) from None


def games_frame(source: Records) -> pd.DataFrame:
    """One row per game (columns in the module docstring)."""
    rows = []
    for game, record in enumerate(_records(source)):
        if game_of(record) == "rummy":
            rows.append(_rummy_game_row(game, record))
            continue
        steps = _replayed(record, game)
        final = steps[-1].state
        n = record["num_players"]
        sides = final.num_sides
        row: dict[str, Any] = {
            "game": game,
            "game_type": "burako",
            "rules": record["rules"]["name"],
            "num_players": n,
            "deal_seed": record["deal_seed"],
            "mano": record["mano"],
            "mano_side": record["sides"][record["mano"]],
        }
        for seat in range(n):
            row[f"agent_{seat}"] = record["agents"][seat]
            row[f"side_{seat}"] = record["sides"][seat]
        reason = record["end_reason"]
        winner = record["result"]["winner"]
        row.update(
            end_reason=reason,
            void=reason == "void",
            truncated=reason == "truncated",
            closed=reason == "closed",
            closer_side=final.side_of[final.closer] if final.closer >= 0 else -1,
            turns=record["turns"],
            actions=len(record["actions"]),
            winner=-1 if winner is None else winner,
            winner_agent=""
            if winner is None
            else "+".join(sorted({record["agents"][s] for s in range(n) if record["sides"][s] == winner})),
        )
        scores = record["hand_scores"]
        muerto_turn = [math.nan] * sides
        for before, after in itertools.pairwise(steps):
            for s in range(sides):
                if math.isnan(muerto_turn[s]) and after.state.muerto_taken[s] and not before.state.muerto_taken[s]:
                    muerto_turn[s] = before.state.turn
        for s in range(sides):
            for key in SCORE_KEYS:
                row[f"s{s}_{key}"] = math.nan if scores is None else scores[s][key]
            canastas = [m for m in final.melds[s] if m.is_canasta]
            row[f"s{s}_canastas"] = len(canastas)
            row[f"s{s}_clean_canastas"] = sum(m.clean for m in canastas)
            row[f"s{s}_muerto_turn"] = muerto_turn[s]
        row.update(_flat("meta", record.get("meta") or {}))
        rows.append(row)
    return pd.DataFrame(rows)


def _rummy_game_row(game: int, record: Mapping[str, Any]) -> dict[str, Any]:
    """One Rummy record's row of :func:`games_frame` (columns in the module docstring)."""
    steps = _replayed(record, game)
    final = steps[-1].state
    n = record["num_players"]
    row: dict[str, Any] = {
        "game": game,
        "game_type": "rummy",
        "rules": record["rules"]["name"],
        "num_players": n,
        "deal_seed": record["deal_seed"],
        "starter": record["starter"],
    }
    for seat in range(n):
        row[f"agent_{seat}"] = record["agents"][seat]
    reason = record["end_reason"]
    closer = record["result"]["closer"]
    # R10, R11f: the lowest hand total wins and a tie is a draw, as the duplicate tools score it; the
    # record's result names the closer alone even when another player also ended with 0
    totals = record["hand_scores"]
    winners = [s for s, t in enumerate(totals) if t == min(totals)]
    row.update(
        end_reason=reason,
        closed=reason == "closed",
        blocked=reason == "blocked",
        closer=-1 if closer is None else closer,
        turns=record["turns"],
        actions=len(record["actions"]),
        winner=winners[0] if len(winners) == 1 else -1,
        winner_agent=record["agents"][winners[0]] if len(winners) == 1 else "",
    )
    first_play_turn = [math.nan] * n
    for before, after in itertools.pairwise(steps):
        for seat in range(n):
            if math.isnan(first_play_turn[seat]) and after.state.first_play_done[seat]:
                first_play_turn[seat] = before.state.turns
    for seat in range(n):
        row[f"total_{seat}"] = record["hand_scores"][seat]
        row[f"first_play_turn_{seat}"] = first_play_turn[seat]
    row["table_tiles"] = int(final.table.sum())
    row.update(_flat("meta", record.get("meta") or {}))
    return row


def _flat(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"meta_a_b": 1}``; lists become strings."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}_{key}"
        if isinstance(value, Mapping):
            out.update(_flat(name, value))
        else:
            out[name] = str(value) if isinstance(value, list) else value
    return out


def decisions_frame(source: Records) -> pd.DataFrame:
    """One row per decision of every game (columns in the module docstring)."""
    rows = []
    for game, record in enumerate(_records(source)):
        if game_of(record) == "rummy":
            rows.extend(_rummy_decision_rows(game, record))
            continue
        steps = _replayed(record, game)
        cards = steps[0].state.rules.cards
        for before, after in itertools.pairwise(steps):
            state = before.state
            seat = after.seat
            assert seat is not None and after.action is not None
            kind, a, b = A.decode(after.action)
            tile = meld = ""
            if kind == A.DISCARD:
                tile = tile_name(a, cards)
            elif kind == A.MELD:
                meld = describe_meld(PATTERNS[a], cards)
            elif kind == A.ADD:
                tile = tile_name(b, cards)
                meld = describe_meld(state.melds[state.side_of[seat]][a], cards)
            rows.append(
                {
                    "game": game,
                    "index": after.index - 1,
                    "seat": seat,
                    "side": state.side_of[seat],
                    "agent": record["agents"][seat],
                    "turn": state.turn,
                    "phase": state.phase.name,
                    "action": after.action,
                    "kind": kind,
                    "tile": tile,
                    "meld": meld,
                    "description": after.description,
                    "hand_size": int(state.hand_size[seat]),
                    "stock_size": len(state.stock),
                    "pile_size": len(state.pile),
                    "legal_actions": int(np.count_nonzero(state.legal_mask())),
                }
            )
    return pd.DataFrame(rows)


def _rummy_decision_rows(game: int, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One Rummy record's rows of :func:`decisions_frame`."""
    from burako_env.rummy import actions as RA

    rows = []
    for before, after in itertools.pairwise(_replayed(record, game)):
        state = before.state
        seat = after.seat
        assert seat is not None and after.action is not None
        action = after.action
        if action < RA.ADD_CLOSING:
            kind, tile = "add_tile", tile_text(action)
        elif action == RA.ADD_CLOSING:
            kind, tile = "add_closing", tile_text(state.closing_tile)
        else:
            kind, tile = ("commit" if action == RA.COMMIT else "end_turn"), ""
        rows.append(
            {
                "game": game,
                "index": after.index - 1,
                "seat": seat,
                "side": seat,
                "agent": record["agents"][seat],
                "turn": state.turns,
                "phase": state.phase.name,
                "action": action,
                "kind": kind,
                "tile": tile,
                "meld": "",
                "description": after.description,
                "hand_size": int(state.hands[seat].sum()),
                "stock_size": len(state.stock),
                "table_size": int(state.table.sum()),
                "legal_actions": int(np.count_nonzero(state.legal_mask())),
            }
        )
    return rows


def tournament_frames(run_dir: str | Path) -> dict[str, pd.DataFrame]:
    """A tournament folder's ``results`` (one row per game), ``leaderboard``
    and ``crosstable`` CSV files (``burako-tournament``) as DataFrames."""
    run_dir = Path(run_dir)
    frames = {}
    for name in ("results", "leaderboard", "crosstable"):
        path = run_dir / f"{name}.csv"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: is {run_dir} a burako-tournament folder?")
        frames[name] = pd.read_csv(path)
    return frames


def crosstable_matrix(crosstable: pd.DataFrame, value: str = "win_rate") -> pd.DataFrame:
    """The crosstable as a square matrix (row agent's ``value`` against column agent)."""
    names = list(dict.fromkeys([*crosstable["row"], *crosstable["col"]]))
    return crosstable.pivot(index="row", columns="col", values=value).reindex(index=names, columns=names)


def tensorboard_scalars(run_dir: str | Path, tags: Iterable[str] | None = None) -> pd.DataFrame:
    """Every scalar of a TensorBoard run folder: columns tag, step, value, wall_time."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not any(run_dir.glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"{run_dir} holds no TensorBoard event file")
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    known = events.Tags()["scalars"]
    wanted = known if tags is None else [tags] if isinstance(tags, str) else list(tags)  # one tag, or its letters
    unknown = [tag for tag in wanted if tag not in known]
    if unknown:
        raise KeyError(f"{run_dir} has no scalar {unknown}; its scalars: {sorted(known)}")
    rows = [
        {"tag": tag, "step": e.step, "value": e.value, "wall_time": e.wall_time}
        for tag in wanted
        for e in events.Scalars(tag)
    ]
    return pd.DataFrame(rows, columns=["tag", "step", "value", "wall_time"])


def rate_with_ci(successes: pd.Series) -> tuple[float, float, float]:
    """Mean of 0/1 (or 0/0.5/1) outcomes with its 95% Wilson interval (``burako_env.stats.rate_ci``)."""
    mean, (low, high) = rate_ci(successes.astype(float).tolist())
    return mean, low, high
