"""``burako-tournament`` on Rummy (issue 17, item 5): a tiny tournament end to end (leaderboard,
ratings, resume, records that replay exactly), agents and presets of the other game refused before
anything is written, forfeits and the move time limit in Rummy hands, the pool back end.
Scoring is R10's: each for himself, the lower hand total wins."""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.random_agent import RandomAgent
from agents.rummy_runner import play_rummy_hand
from agents.runner import AgentFault
from burako_env.records import read_records, replay
from training.duplicate import deal_seed
from training.evaluate import CI_NOTE, evaluate, format_table
from training.tournament import (
    Participant,
    TournamentConfig,
    TournamentError,
    check_participants,
    load_config,
    main,
    run_tournament,
)

ROOT = Path(__file__).resolve().parents[1]
REPORT_FILES = ("results.csv", "records.jsonl", "forfeits.jsonl", "leaderboard.md", "leaderboard.csv", "crosstable.csv")


def rummy_config(out: Path, **overrides: Any) -> TournamentConfig:
    """Three fast Rummy participants; ``rand`` and ``rand2`` are the same agent under two names."""
    data: dict[str, Any] = {
        "name": "rummy-test",
        "game": "rummy",
        "participants": [
            {"name": "rand", "agent": "random"},
            {"name": "greedy", "agent": "rummy-greedy"},
            {"name": "rand2", "agent": "random"},
        ],
        "games_per_pairing": 4,
        "seed": 3,
        "workers": 2,
        "backend": "inprocess",
        "chunk_size": 2,
        "out": str(out),
        "ratings": {"bootstrap": 50, "anchor": "rand"},
    }
    data.update(overrides)
    return TournamentConfig.from_dict(data)


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def rummy_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rummy_reference")
    result = run_tournament(rummy_config(out))
    assert result.complete and result.played == 12 and result.total_games == 12
    return out


def test_rummy_tournament_end_to_end(rummy_reference: Path) -> None:
    """Leaderboard, ratings and rows of a Rummy tournament: every row is read off its record with
    R10's scoring (A's margin = B's total − A's; the lower total wins), and the same agent under
    two names splits every deal pair exactly (duplicate deals: win rate 0.5, margin 0)."""
    config = rummy_config(rummy_reference)
    assert (config.game, config.rules) == ("rummy", "rummy")  # the game's own preset by default
    records = read_records(rummy_reference / "records.jsonl", verify=True)
    rows = read_rows(rummy_reference)
    assert len(records) == len(rows) == 12
    row_of = {(r["a"], r["b"], int(r["deal"]), int(r["seating"])): r for r in rows}
    for record in records:
        t = record["meta"]["tournament"]
        assert record["game"] == "rummy" and record["num_players"] == 2
        row = row_of.pop((t["a"], t["b"], t["deal"], t["seating"]))
        assert record["agents"][t["a_seats"][0]] == t["a"]
        a_total = record["hand_scores"][t["a_seats"][0]]
        b_total = record["hand_scores"][1 - t["a_seats"][0]]
        assert (int(row["a_score"]), int(row["b_score"])) == (a_total, b_total)
        assert int(row["score_diff"]) == b_total - a_total
        assert float(row["a_points"]) == (1.0 if a_total < b_total else 0.5 if a_total == b_total else 0.0)
        assert row["end_reason"] == record["end_reason"] in ("closed", "blocked")
        assert record["deal_seed"] == deal_seed(t["pairing_seed"], t["deal"])
    assert not row_of  # one row per record
    same = [r for r in rows if (r["a"], r["b"]) == ("rand", "rand2")]
    assert sum(float(r["a_points"]) for r in same) == len(same) / 2
    assert sum(int(r["score_diff"]) for r in same) == 0
    board = (rummy_reference / "leaderboard.md").read_text(encoding="utf-8")
    assert "- game **rummy**, rules **rummy**, 2 players; each for himself, the lower hand total wins (R10)" in board
    assert "| closed | blocked |" in board and "mean margin B − A" in board
    with (rummy_reference / "leaderboard.csv").open(encoding="utf-8") as f:
        standings = {s["name"]: s for s in csv.DictReader(f)}
    assert set(standings) == {"rand", "greedy", "rand2"}
    assert float(standings["rand"]["elo"]) == 0.0  # the anchor
    assert sum(int(s["games"]) for s in standings.values()) == 2 * 12
    assert (rummy_reference / "ratings.png").stat().st_size > 0


def test_rummy_records_replay_exactly(rummy_reference: Path) -> None:
    """Every tournament game replays from its seed and actions to the recorded totals and result (E4)."""
    for record in read_records(rummy_reference / "records.jsonl"):
        state = replay(record)
        assert list(state.hand_scores) == record["hand_scores"]
        assert state.closer == record["result"]["closer"]


def test_rummy_resume_after_interruption_and_the_pool(rummy_reference: Path, tmp_path: Path) -> None:
    """Stopped after 5 games and started again, the run plays only the rest and ends with the same files as
    the uninterrupted one; the pool back end (agents watched in worker processes) gives them too."""
    out = tmp_path / "resumed"
    first = run_tournament(rummy_config(out), max_games=5)
    assert not first.complete and first.played == 6  # stops at the end of a task (chunks of 2)
    second = run_tournament(rummy_config(out))
    assert second.complete and second.played == 6
    pool = tmp_path / "pool"
    run_tournament(rummy_config(pool, backend="pool", workers=2, chunk_size=3))
    for folder in (out, pool):
        for name in REPORT_FILES:
            assert (folder / name).read_bytes() == (rummy_reference / name).read_bytes(), (folder.name, name)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"game": "rummy", "agent": "planner"}, "participant 'p': agent 'planner' plays burako only, not rummy"),
        ({"rules": "rummy", "agent": "ismcts"}, "agent 'ismcts' plays burako only, not rummy; rummy agents: random"),
        ({"game": "burako", "agent": "rummy-heuristic"}, "agent 'rummy-heuristic' plays rummy only, not burako"),
        ({"game": "rummy", "rules": "burako_royal"}, "rules burako_royal is a Burako preset, not Rummy's"),
        ({"game": "burako", "rules": "rummy"}, "rules rummy is a Rummy preset: use game rummy"),
        ({"game": "rummy", "players": 4}, "Rummy's duplicate pairing is for 2 players"),
        ({"game": "chess"}, "unknown game 'chess'; games: burako, rummy"),
        ({"rules": str(ROOT / "configs" / "rules" / "rummy" / "rummy.yaml")}, "are rummy rules: set game: rummy"),
    ],
)
def test_the_other_games_agents_and_presets_are_refused_before_anything_is_written(
    overrides: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    agent = overrides.pop("agent", "random")
    data = {"participants": [{"name": "p", "agent": agent}, {"name": "r", "agent": "random"}], "out": str(out)}
    with pytest.raises(TournamentError) as error:
        TournamentConfig.from_dict({**data, **overrides})
    assert message in str(error.value)
    # the command line says the same and writes nothing
    config = tmp_path / "t.yaml"
    config.write_text("participants: [{name: p, agent: random}, {name: r, agent: random}]\n", encoding="utf-8")
    argv = ["--config", str(config), "--set", f"out={out}", "--set", f"participants.0.agent={agent}"]
    argv += [f"--set={key}={value}" for key, value in overrides.items()]
    assert main([*argv, "--no-progress"]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_game_flag_and_the_shipped_config(tmp_path: Path) -> None:
    """``--game rummy`` is ``--set game=rummy``; configs/tournament_rummy.yaml is a Rummy tournament."""
    shipped = load_config(ROOT / "configs" / "tournament_rummy.yaml")
    assert shipped.game == "rummy" and {p.agent for p in shipped.participants} == {
        "random",
        "rummy-greedy",
        "rummy-heuristic",
        "rummy-ismcts",
    }
    config = tmp_path / "t.yaml"
    config.write_text(
        "participants: [{name: a, agent: random}, {name: b, agent: rummy-greedy}]\ngames_per_pairing: 2\n"
        f"backend: inprocess\nout: {tmp_path / 'run'}\nratings: {{bootstrap: 10}}\n",
        encoding="utf-8",
    )
    assert main(["--config", str(config), "--no-progress"]) == 2  # Burako by default: rummy-greedy refused
    assert main(["--config", str(config), "--game", "rummy", "--no-progress"]) == 0
    assert [r["game"] for r in read_records(tmp_path / "run" / "records.jsonl", verify=True)] == ["rummy"] * 2


def test_participants_resolve_through_the_registry() -> None:
    """``module:Class`` goes through agents.registry as registry names do (one resolution path)."""
    spec = Participant.of("mine", "agents.random_agent:RandomAgent").spec()
    assert spec.factory is None and isinstance(spec.build(0), RandomAgent)
    with pytest.raises(TournamentError, match="no_such_module"):
        check_participants([Participant.of("ghost", "no_such_module:Bot")])


class FaultyRummyAgent:
    """Random, until its ``after``-th decision: then ``raise``, an ``illegal`` answer, or ``slow`` (sleeps)."""

    name = "faulty"

    def __init__(self, seed: int | None = None, mode: str = "raise", after: int = 2) -> None:
        self.inner = RandomAgent(seed=seed)
        self.mode, self.after, self.calls = mode, after, 0

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        self.calls = 0

    def act(self, observation: dict[str, np.ndarray]) -> int:
        self.calls += 1
        if self.calls > self.after:
            if self.mode == "raise":
                raise RuntimeError("deliberate test fault")
            if self.mode == "slow":
                time.sleep(5)
            return int(np.flatnonzero(~observation["action_mask"].astype(bool))[0])
        return self.inner.act(observation)


def test_rummy_forfeits_are_recorded_and_the_tournament_goes_on(tmp_path: Path) -> None:
    faulty = Participant.of("faulty", "faulty", {"mode": "illegal"}, factory=FaultyRummyAgent)
    participants = [{"name": "rand", "agent": "random"}, {"name": "greedy", "agent": "rummy-greedy"}, faulty]
    config = rummy_config(tmp_path, participants=participants, games_per_pairing=2, ratings={"bootstrap": 10})
    result = run_tournament(config)
    assert result.complete and len(result.rows) == 6
    forfeits = [r for r in result.rows if r.forfeit]
    assert len(forfeits) == 4 and {r.forfeit for r in forfeits} == {"faulty"}
    assert all(r.a_points == (0.0 if r.a == "faulty" else 1.0) for r in forfeits)
    entries = (tmp_path / "forfeits.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(entries) == 4 and all('"game":"rummy"' in e and '"kind":"illegal"' in e for e in entries)
    assert len(read_records(tmp_path / "records.jsonl", verify=True)) == 2


@pytest.mark.parametrize(("mode", "kind"), [("raise", "exception"), ("slow", "timeout")])
def test_rummy_hand_faults_and_move_time_limit(mode: str, kind: str) -> None:
    """An agent that raises, or overruns the move time limit (interrupted, not waited for), is an AgentFault."""
    start = time.perf_counter()
    with pytest.raises(AgentFault) as fault:
        play_rummy_hand([FaultyRummyAgent(1, mode), RandomAgent(2)], "rummy", 2, 7, move_time_limit=0.2)
    assert time.perf_counter() - start < 3
    assert (fault.value.kind, fault.value.seat, fault.value.agent) == (kind, 0, "faulty")
    assert fault.value.phase == "PLAY" and fault.value.step >= 2


def test_eval_header_names_each_interval() -> None:
    """burako-eval's table: the win rate's interval is Wilson's, only the score difference's is normal."""
    assert CI_NOTE == "95% CIs over deals: win rate Wilson score, score difference normal approximation"
    table = format_table(evaluate(*[Participant.of(n, "random").spec() for n in "ab"], games=2).summary)
    assert table.splitlines()[1].endswith(CI_NOTE)


def test_the_shipped_rummy_tournament_report() -> None:
    """docs/tournament/rummy is the shipped config's complete run, scored by R10, and reads as tournament frames."""
    from burako_env import analysis

    folder = ROOT / "docs" / "tournament" / "rummy"
    shipped = load_config(ROOT / "configs" / "tournament_rummy.yaml")
    assert load_config(folder / "config.yaml").game_fingerprint() == shipped.game_fingerprint()
    frames = analysis.tournament_frames(folder)
    results = frames["results"]
    assert len(results) == 6 * shipped.games_per_pairing
    assert (results["score_diff"] == results["b_score"] - results["a_score"]).all()
    assert sorted(frames["leaderboard"]["name"]) == sorted(p.name for p in shipped.participants)
    assert "games played: 60 of 60" in (folder / "leaderboard.md").read_text(encoding="utf-8")
