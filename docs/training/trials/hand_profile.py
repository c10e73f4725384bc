"""How each side of recorded 2-player Burako games played its hands: who closed and how often the
closer won, canastas, when the muerto was taken, the score's parts, pile takes.

Run from the repository root on records of ``burako-eval --record``:
``.venv/bin/python docs/training/trials/hand_profile.py RECORDS.jsonl [MORE.jsonl ...]``.
Means per agent over every hand (a side's hand counts once per game); ``muerto_turn`` over the hands
where the side took its muerto.
"""

import sys

import pandas as pd

from burako_env import analysis

SCORE_PARTS = ["total", "melded", "canasta_bonus", "hand_penalty", "muerto_penalty"]


def side_rows(games: pd.DataFrame) -> pd.DataFrame:
    """One row per (game, side): the side's agent, result and end-of-hand facts (2 players: seat = side)."""
    rows = []
    for _, game in games.iterrows():
        for side in (0, 1):
            rows.append(
                {
                    "agent": game[f"agent_{side}"],
                    "win": float(game["winner"] == side),
                    "closed": float(game["closer_side"] == side),
                    "other_closed": float(game["closer_side"] == 1 - side),
                    **{part: game[f"s{side}_{part}"] for part in SCORE_PARTS},
                    "canastas": game[f"s{side}_canastas"],
                    "clean_canastas": game[f"s{side}_clean_canastas"],
                    "muerto_turn": game[f"s{side}_muerto_turn"],
                    "no_muerto": float(pd.isna(game[f"s{side}_muerto_turn"])),
                    "turns": game["turns"],
                }
            )
    return pd.DataFrame(rows)


def decision_rows(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per agent: the share of its draws that took the pile, and its pile takes, melds and adds per hand."""
    out = {}
    for agent, moves in decisions.groupby("agent"):
        hands = moves["game"].nunique()
        draws = moves[moves["kind"].isin(["draw", "take_pile"])]
        out[agent] = {
            "pile_share_of_draws": (draws["kind"] == "take_pile").mean(),
            **{f"{kind}s_per_hand": (moves["kind"] == kind).sum() / hands for kind in ("take_pile", "meld", "add")},
            "decisions_per_hand": len(moves) / hands,
        }
    return pd.DataFrame(out).T


for path in sys.argv[1:]:
    games = analysis.games_frame(path)
    sides = side_rows(games)
    print(f"== {path}: {len(games)} games, end reasons {games['end_reason'].value_counts().to_dict()}")
    print(sides.groupby("agent").mean().round(3).T.to_string())
    for agent, rows in sides.groupby("agent"):
        closed, other = rows[rows["closed"] == 1], rows[rows["other_closed"] == 1]
        print(
            f"  {agent}: closes {len(closed) / len(rows):.3f} of hands and wins {closed['win'].mean():.3f} of those; "
            f"wins {other['win'].mean():.3f} of the hands the other side closes"
        )
    print(decision_rows(analysis.decisions_frame(path)).round(3).to_string())
