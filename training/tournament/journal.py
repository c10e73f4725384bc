"""A tournament's run folder as a journal: games are appended to
``records.jsonl`` and ``forfeits.jsonl`` as they finish, so an interrupted run
started again plays only the games that are missing. Every game found must be
one this run schedules, with its seeds and agents; a half-written last line
is dropped; at the end both files are rewritten in schedule order."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from burako_env.records import RecordError, dumps_record, rules_of, validate_record
from burako_env.safe_yaml import YamlInputError, load_yaml, short_repr
from training.duplicate import changed_agent_files, deal_seed
from training.files import write_text_atomic
from training.games import rules_differences
from training.tournament.config import TournamentConfig, TournamentError
from training.tournament.schedule import Pairing

RECORDS = "records.jsonl"
FORFEITS = "forfeits.jsonl"
#: the SHA-256 of each file a participant's agent reads (:meth:`TournamentConfig.agent_files`)
AGENT_FILES = "agent_files.json"
#: every file a run writes in its folder (``--fresh`` deletes them)
RUN_FILES = (
    RECORDS,
    FORFEITS,
    "results.csv",
    "leaderboard.md",
    "leaderboard.csv",
    "crosstable.csv",
    "ratings.png",
    "timings.csv",
    "config.yaml",
    AGENT_FILES,
)


def entry_key(entry: Mapping[str, Any]) -> tuple[str, str, int, int]:
    t = entry["meta"]["tournament"]
    return (t["a"], t["b"], int(t["deal"]), int(t["seating"]))


def drop_unfinished_line(path: Path) -> bytes:
    """Cut text after the last newline of an existing file (a line an interruption left half-written),
    so the next append starts a line of its own; returns the complete lines' bytes."""
    data = path.read_bytes()
    complete, _, tail = data.rpartition(b"\n")
    if tail:
        print(f"burako-tournament: {path}: dropping an unfinished last line ({len(tail)} bytes)", file=sys.stderr)
        with path.open("r+b") as f:
            f.truncate(len(data) - len(tail))
    return complete


def read_journal(path: Path, is_record: bool) -> list[dict[str, Any]]:
    """The entries of a JSON-lines journal. Text after the last newline is a
    line cut short by an interruption: it is not read, and its game is played
    again (the run cuts it from the file with :func:`drop_unfinished_line` once
    it has accepted the folder; a refused run changes nothing). Damage anywhere
    else is an error."""
    if not path.exists():
        return []
    complete, _, _ = path.read_bytes().rpartition(b"\n")
    entries: list[dict[str, Any]] = []
    for number, raw in enumerate(complete.split(b"\n") if complete else [], start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict):
                raise ValueError(f"not a game entry (a JSON object), got {short_repr(entry)}")
            if is_record:
                validate_record(entry)
            entry_key(entry)
        except (ValueError, KeyError, TypeError) as exc:
            raise TournamentError(f"{path}, line {number}: {exc}") from exc
        entries.append(entry)
    return entries


def has_games(out: Path) -> bool:
    """Whether the folder's journals hold any game (an empty journal, left by a
    run that failed before its first game, holds none and blocks nothing)."""
    return any((out / name).is_file() and (out / name).stat().st_size > 0 for name in (RECORDS, FORFEITS))


def prepare_folder(
    config: TournamentConfig, out: Path, fresh: bool, files: Mapping[str, Mapping[str, str | None]]
) -> None:
    """Refuse to mix games of a different tournament, or to write into a folder that is not a
    tournament's (a training run's, say: its config.yaml would be replaced, or deleted by
    ``--fresh``); ``files``: :meth:`TournamentConfig.agent_files`, read once by the caller. The
    caller holds the folder's lock; nothing is written before the checks."""
    stored_path = out / "config.yaml"
    if stored_path.exists():
        try:
            stored_raw = load_yaml(stored_path.read_text(encoding="utf-8"), str(stored_path))
        except (YamlInputError, UnicodeDecodeError) as exc:
            stored_raw = exc
        if not isinstance(stored_raw, Mapping) or "participants" not in stored_raw:
            why = stored_raw if isinstance(stored_raw, Exception) else "it has no participants"
            raise TournamentError(
                f"{out} is not a tournament's folder: its config.yaml is not a tournament config ({why}); "
                "choose another 'out' (a tournament never overwrites or deletes another tool's files)"
            )
    if fresh:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    if not stored_path.exists() and has_games(out):
        raise TournamentError(
            f"{out} holds games but no config.yaml, so which tournament played them (rules, players, agents) "
            "cannot be checked; choose another 'out' or pass --fresh to delete them"
        )
    if stored_path.exists() and has_games(out):
        try:
            stored = TournamentConfig.from_dict(load_yaml(stored_path.read_text(encoding="utf-8"), str(stored_path)))
            same = stored.game_fingerprint() == config.game_fingerprint()
        except (TournamentError, YamlInputError, UnicodeDecodeError, ImportError, AttributeError):
            same = False
        if not same:
            raise TournamentError(
                f"{out} holds games of a different tournament (game, rules, players, seed or participants differ "
                f"from {stored_path}); choose another 'out' or pass --fresh to delete them"
            )
        check_agent_files(files, out)


def check_agent_files(current: Mapping[str, Mapping[str, str | None]], out: Path) -> None:
    """The files the participants' agents read (``current``) must be those the folder's games were
    played with: a checkpoint replaced under the same path (a new shipped bot) makes other games."""
    path = out / AGENT_FILES
    if current and not path.exists():
        raise TournamentError(
            f"{out} holds games played before a tournament kept the SHA-256 of the files its agents read "
            f"({AGENT_FILES}), so which checkpoints {sorted(current)} played them cannot be checked; "
            "pass --fresh to play them again, or choose another 'out'"
        )
    try:
        stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        raise TournamentError(f"{path} is unreadable ({exc}); pass --fresh to play the games again") from exc
    if not isinstance(stored, dict) or not all(isinstance(files, dict) for files in stored.values()):
        raise TournamentError(
            f"{path} is not a map of participants to their files' SHA-256; pass --fresh to play the games again"
        )
    changed = changed_agent_files(current, stored)
    if changed:
        raise TournamentError(
            f"{out} holds games played with other agent files than this run's: the SHA-256 of what "
            f"{', '.join(changed)} read differs from {path}'s (a checkpoint replaced under the same path plays "
            "other games); choose another 'out' or pass --fresh to delete them"
        )


def write_agent_files(files: Mapping[str, Mapping[str, str | None]], out: Path) -> None:
    write_text_atomic(out / AGENT_FILES, json.dumps(files, indent=2, sort_keys=True) + "\n")


def _entry_rules(entry: Mapping[str, Any]) -> Any:
    """The rules a journal's game was played under, as an object (fields added since it was written read
    as their defaults), or None when unreadable."""
    try:
        return rules_of(entry)
    except RecordError:
        return None


def check_entry(
    entry: Mapping[str, Any], config: TournamentConfig, pairings: Mapping[Any, Pairing], where: str, rules: Any
) -> None:
    """A journal's game must be one this run schedules, with this run's seeds, agents, rules
    (``config.game_rules()``, read once by the caller) and players: games of another run (another
    seed, say) are never published as ours."""
    t = entry["meta"]["tournament"]
    game = entry.get("game", "burako")
    if game != config.game:
        raise TournamentError(
            f"{where}: game {entry_key(entry)} is a {game} game, but this run plays {config.game}: the folder "
            "holds games of another run; choose another 'out' or pass --fresh"
        )
    played_rules = _entry_rules(entry)
    differ = ["rules"] if played_rules is None or rules_differences(played_rules, rules) else []
    if entry.get("num_players") != config.players:
        differ.append("players")
    if differ:
        raise TournamentError(
            f"{where}: game {entry_key(entry)} was played with other {' and '.join(differ)} than this run's: the "
            "folder holds games of another run; choose another 'out' or pass --fresh"
        )
    pairing = pairings[(t["a"], t["b"])]
    expected = {
        "seed": config.seed,
        "pairing_seed": pairing.seed,
        "a_agent": pairing.a.label,
        "b_agent": pairing.b.label,
    }
    for key, value in expected.items():
        if t.get(key) != value:
            raise TournamentError(
                f"{where}: game {entry_key(entry)} has {key} {short_repr(t.get(key))}, but this run has "
                f"{short_repr(value)}: the folder holds games of another run; choose another 'out' or pass --fresh"
            )
    if entry.get("deal_seed") != deal_seed(pairing.seed, int(t["deal"])):
        raise TournamentError(f"{where}: game {entry_key(entry)} was not dealt from this run's seeds")


def rewrite_sorted(path: Path, entries: Sequence[Mapping[str, Any]], order: Mapping[Any, int]) -> None:
    """Rewrite a journal in schedule order (atomically), so its bytes do not
    depend on the order games finished in."""
    if not path.exists():
        return
    ordered = sorted(entries, key=lambda e: order[entry_key(e)])
    write_text_atomic(path, "".join(dumps_record(entry) + "\n" for entry in ordered))
