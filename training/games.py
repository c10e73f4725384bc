"""The two games of the duplicate tools (``burako-eval``, ``burako-tournament``): what differs between them.

One home for every game-specific fact those tools need, so neither repeats one:

- which built-in agents play which game (:func:`agent_games`, read off the registry);
- the game a ``game``/``rules`` pair names (:func:`game_and_rules`: a Rummy preset means Rummy; each
  game's default rules are its own preset) and its rules object (:func:`load_game_rules`);
- the player counts a game's duplicate pairing takes (:func:`check_duplicate_players`: Burako 2, or 4 in
  partnerships; Rummy 2, each for himself);
- playing one game into its record (:func:`play_recorded_game`: :func:`agents.runner.play_game` or
  :func:`agents.rummy_runner.play_rummy_hand`, with the same faults and move time limit);
- reading a record's result (:func:`record_outcome`): the side of each seat and each side's hand total,
  and whether the higher total wins (Burako) or the lower (Rummy, R10). A's *margin* over B,
  :func:`training.duplicate.scored_row`'s ``score_diff``, is positive when A did better in both games.

Rummy's modules are imported only when a Rummy game asks for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agents.registry import agent_games, check_agent_game
from burako_env.records import GAMES, game_of
from burako_env.rules import Rules, load_rules, preset_names
from training.duplicate import seatings

if TYPE_CHECKING:
    from burako_env.rummy.rules import RummyRules

__all__ = [
    "GAMES",
    "LOWER_TOTAL_WINS",
    "agent_games",
    "check_agent_game",
    "check_duplicate_players",
    "game_and_rules",
    "load_game_rules",
    "play_recorded_game",
    "record_outcome",
]

#: whether a game's lower hand total wins (Rummy, R10) rather than the higher (Burako)
LOWER_TOTAL_WINS: dict[str, bool] = {"burako": False, "rummy": True}


# ---------------------------------------------------------------------- game and rules
def game_and_rules(
    game: str | None, rules: Any, rules_flag: str = "--rules", game_flag: str = "--game"
) -> tuple[str, Any]:
    """The game and rules the options name: a Rummy preset in ``rules`` means Rummy;
    each game's default preset is its own name; a preset of the other game is refused
    (the flags name the options in the messages). A YAML path or a mapping is the
    named game's (Burako when none is named)."""
    from burako_env.rummy.rules import rummy_preset_names

    if game is not None and game not in GAMES:
        raise ValueError(f"unknown game {game!r}; games: {', '.join(GAMES)}")
    rummy_presets = rummy_preset_names()
    named = rules if isinstance(rules, str) else None
    if game is None:
        game = "rummy" if named in rummy_presets else "burako"
    if rules is None:
        rules = game
    if game == "rummy" and named in preset_names():
        raise ValueError(
            f"{rules_flag} {named} is a Burako preset, not Rummy's; Rummy presets: {', '.join(rummy_presets)}"
        )
    if game == "burako" and named in rummy_presets:
        raise ValueError(f"{rules_flag} {named} is a Rummy preset: use {game_flag} rummy (or leave {game_flag} out)")
    return game, rules


def load_game_rules(game: str, rules: Any) -> Rules | RummyRules:
    """The game's rules object (a ``RulesError`` for bad rules)."""
    if game == "rummy":
        from burako_env.rummy.rules import load_rummy_rules

        return load_rummy_rules(rules)
    return load_rules(rules)


#: rules fields that label a table and change no game (``burako_env.fast.RULES_NOT_IN_KERNELS``)
RULES_LABELS = ("name", "source")


def rules_differences(played: Rules | RummyRules, now: Rules | RummyRules) -> list[str]:
    """The fields in which two rules differ, their labels aside (a renamed rules file plays the same
    games); the rules of the other game differ in every field."""
    first, second = played.to_dict(), now.to_dict()
    return sorted(k for k in {*first, *second} if k not in RULES_LABELS and first.get(k) != second.get(k))


def check_duplicate_players(game: str, rules: Rules | RummyRules, num_players: int) -> None:
    """A ``ValueError`` when a duplicate match of ``game`` cannot seat ``num_players``:
    the two sides are A's and B's, so Burako takes 2 players or 4 in partnerships and
    Rummy (each for himself) 2; the rules must allow the count too."""
    if game == "rummy" and num_players != 2:
        raise ValueError(f"Rummy's duplicate pairing is for 2 players (each for himself), got {num_players} players")
    rules.check_players(num_players)
    seatings(num_players)


# ---------------------------------------------------------------------- one game
def play_recorded_game(
    game: str,
    agents: Sequence[Any],
    rules: Rules | RummyRules,
    num_players: int,
    deal_seed: int,
    *,
    agent_names: Sequence[str],
    meta: Mapping[str, Any],
    move_time_limit: float | None = None,
) -> dict[str, Any]:
    """Play one hand of ``game`` and return its record (burako_env.records). An agent's
    fault is an :class:`agents.runner.AgentFault`, whichever the game."""
    if game == "rummy":
        from agents.rummy_runner import play_rummy_hand

        result = play_rummy_hand(
            agents,
            rules,  # type: ignore[arg-type]
            num_players,
            deal_seed,
            agent_names=agent_names,
            meta=dict(meta),
            move_time_limit=move_time_limit,
        )
        assert result.record is not None
        return result.record
    from agents.runner import play_game

    record = play_game(
        agents, rules, num_players, deal_seed, agent_names=agent_names, meta=meta, move_time_limit=move_time_limit
    ).record
    assert record is not None
    return record


def record_outcome(record: Mapping[str, Any]) -> tuple[list[int], list[int] | None, bool]:
    """A finished game's record as ``(side of each seat, each side's hand total or None, lower total wins)``.
    Burako: the record's sides and score breakdowns (no totals for a void or truncated hand); Rummy:
    every seat is its own side, with its hand total (R10)."""
    game = game_of(record)
    if game == "rummy":
        totals = [int(t) for t in record["hand_scores"]]
        return list(range(len(totals))), totals, LOWER_TOTAL_WINS[game]
    scores = record["hand_scores"]
    totals = None if scores is None else [int(side["total"]) for side in scores]
    return [int(s) for s in record["sides"]], totals, LOWER_TOTAL_WINS[game]
