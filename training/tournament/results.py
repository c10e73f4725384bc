"""A tournament's results: one :class:`~training.duplicate.GameRow` per game
(the row type burako-eval's outcomes share), read back from the journals
(either game's records: :func:`training.games.record_outcome`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.duplicate import GameRow, scored_row
from training.games import record_outcome

__all__ = ["GameRow", "row_from_entry"]


def row_from_entry(entry: Mapping[str, Any], pairing_index: int) -> GameRow:
    """The results row of a record or forfeit entry (fresh and resumed games
    go through this one function, so they cannot differ)."""
    t = entry["meta"]["tournament"]
    a_seats = tuple(int(s) for s in t["a_seats"])
    common = {
        "pairing": pairing_index,
        "a": t["a"],
        "b": t["b"],
        "deal": int(t["deal"]),
        "seating": int(t["seating"]),
        "deal_seed": int(entry["deal_seed"]),
        "a_seats": a_seats,
    }
    forfeit = entry["meta"].get("forfeit")
    if forfeit is not None:
        a_lost = forfeit["participant"] == t["a"]
        return GameRow(
            **common,
            a_score=None,
            b_score=None,
            score_diff=0,
            a_points=0.0 if a_lost else 1.0,
            end_reason="forfeit",
            turns=int(forfeit["turn"]),
            actions=int(forfeit["step"]),
            forfeit=forfeit["participant"],
            error=forfeit["message"],
        )
    sides, totals, lower_wins = record_outcome(entry)
    return scored_row(
        **common,
        sides=sides,
        side_totals=totals,
        end_reason=entry["end_reason"],
        turns=int(entry["turns"]),
        actions=len(entry["actions"]),
        lower_wins=lower_wins,
    )
