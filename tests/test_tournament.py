"""Tournaments (training/tournament.py): determinism across back ends, duplicate
seating, forfeits, resuming, participant load errors, and the rating fits."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from agents.policy import DEFAULT_CHECKPOINT
from agents.random_agent import RandomAgent
from agents.registry import agent_files
from burako_env.records import read_records
from training.evaluate import agent_seed, deal_seed
from training.tournament import (
    GameRow,
    TournamentConfig,
    TournamentError,
    apply_override,
    bradley_terry_ratings,
    load_config,
    main,
    make_pairings,
    openskill_ratings,
    pairing_seed,
    run_tournament,
)

REPORT_FILES = ("results.csv", "records.jsonl", "forfeits.jsonl", "leaderboard.md", "leaderboard.csv", "crosstable.csv")


class FaultyAgent:
    """A random agent that breaks the protocol at its ``after``-th decision:
    ``mode="raise"`` raises, ``mode="illegal"`` answers an illegal action."""

    name = "faulty"

    def __init__(self, seed: int | None = None, mode: str = "raise", after: int = 3) -> None:
        self.inner = RandomAgent(seed=seed)
        self.mode = mode
        self.after = after
        self.calls = 0

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self.calls = 0
        self.inner.reset(seat, rules, num_players)

    def act(self, observation: Any, view: Any) -> int:
        self.calls += 1
        if self.calls > self.after:
            if self.mode == "raise":
                raise RuntimeError("deliberate test fault")
            mask = observation["action_mask"]
            return int(np.flatnonzero(~mask.astype(bool))[0])
        return self.inner.act(observation, view)


def small_config(out: Path, **overrides: Any) -> TournamentConfig:
    data: dict[str, Any] = {
        "name": "test",
        "rules": "burako",
        "players": 2,
        "participants": [
            {"name": "rand", "agent": "random"},
            {"name": "greedy", "agent": "greedy"},
            {"name": "rand2", "agent": "random"},
        ],
        "games_per_pairing": 6,
        "seed": 5,
        "workers": 2,
        "backend": "inprocess",
        "chunk_size": 2,
        "out": str(out),
        "ratings": {"bootstrap": 50, "anchor": "rand"},
    }
    data.update(overrides)
    if "rand" not in [p["name"] for p in data["participants"]]:
        data["ratings"] = {**data["ratings"], "anchor": None}
    return TournamentConfig.from_dict(data)


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def assert_same_files(a: Path, b: Path) -> None:
    for name in REPORT_FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small tournament played in process, uninterrupted."""
    out = tmp_path_factory.mktemp("reference")
    result = run_tournament(small_config(out))
    assert result.complete and result.played == 18
    return out


# ---------------------------------------------------------------------- determinism
def test_outputs_and_same_result_twice(reference: Path, tmp_path: Path) -> None:
    for name in (*REPORT_FILES, "ratings.png", "config.yaml", "timings.csv"):
        assert (reference / name).exists(), name
    rows = read_rows(reference)
    assert len(rows) == 3 * 6
    records = read_records(reference / "records.jsonl", verify=True)
    assert len(records) == 18
    assert {tuple(sorted(r["agents"])) for r in records} == {("greedy", "rand"), ("rand", "rand2"), ("greedy", "rand2")}
    assert all(r["meta"]["tournament"]["seed"] == 5 for r in records)
    run_tournament(small_config(tmp_path))
    assert_same_files(reference, tmp_path)


def test_pool_backend_gives_the_same_results(reference: Path, tmp_path: Path) -> None:
    run_tournament(small_config(tmp_path, backend="pool", chunk_size=3))
    assert_same_files(reference, tmp_path)


def test_deal_seeds_come_from_the_tournament_seed_and_the_pairing(reference: Path) -> None:
    config = small_config(reference)
    pairings = make_pairings(config)
    assert [(p.a.name, p.b.name) for p in pairings] == [("rand", "greedy"), ("rand", "rand2"), ("greedy", "rand2")]
    assert len({p.seed for p in pairings}) == 3
    seeds = {(p.a.name, p.b.name): p.seed for p in pairings}
    assert seeds[("rand", "greedy")] == pairing_seed(5, "rand", "greedy")
    assert pairing_seed(6, "rand", "greedy") != pairing_seed(5, "rand", "greedy")
    for row in read_rows(reference):
        assert int(row["deal_seed"]) == deal_seed(seeds[(row["a"], row["b"])], int(row["deal"]))
    # a pairing's seed does not depend on who else plays
    reordered = small_config(
        reference,
        participants=[
            {"name": "rand2", "agent": "random"},
            {"name": "rand", "agent": "random"},
            {"name": "greedy", "agent": "greedy"},
        ],
    )
    assert {(p.a.name, p.b.name): p.seed for p in make_pairings(reordered)}[("rand", "greedy")] == seeds[
        ("rand", "greedy")
    ]


# ---------------------------------------------------------------------- seating
def test_seats_swap_within_each_deal(reference: Path) -> None:
    records = read_records(reference / "records.jsonl")
    pairs: dict[tuple[str, str, int], dict[int, dict[str, Any]]] = {}
    for r in records:
        t = r["meta"]["tournament"]
        pairs.setdefault((t["a"], t["b"], t["deal"]), {})[t["seating"]] = r
    assert len(pairs) == 9
    for (a, b, _), games in pairs.items():
        first, second = games[0], games[1]
        assert first["deal_seed"] == second["deal_seed"]
        assert first["agents"] == [a, b] and second["agents"] == [b, a]
        assert first["meta"]["tournament"]["a_seats"] == [0]
        assert second["meta"]["tournament"]["a_seats"] == [1]
        if (a, b) == ("rand", "rand2"):
            # the same agent on both sides, the same seed per seat: the same game twice, so the pair cancels
            assert first["actions"] == second["actions"]
    rows = [r for r in read_rows(reference) if (r["a"], r["b"]) == ("rand", "rand2")]
    by_deal: dict[str, float] = {}
    for r in rows:
        by_deal[r["deal"]] = by_deal.get(r["deal"], 0.0) + float(r["a_points"])
    assert set(by_deal.values()) == {1.0}


def test_four_players_swap_partnerships(tmp_path: Path) -> None:
    config = small_config(
        tmp_path,
        players=4,
        participants=[{"name": "r1", "agent": "random"}, {"name": "r2", "agent": "random"}],
        games_per_pairing=2,
    )
    run_tournament(config)
    records = read_records(tmp_path / "records.jsonl", verify=True)
    assert [r["agents"] for r in records] == [["r1", "r2", "r1", "r2"], ["r2", "r1", "r2", "r1"]]
    assert [r["meta"]["tournament"]["a_seats"] for r in records] == [[0, 2], [1, 3]]
    assert records[0]["actions"] == records[1]["actions"]  # same agents, same seeds per seat


# ---------------------------------------------------------------------- faults
def test_forfeits_are_recorded_and_the_tournament_goes_on(tmp_path: Path) -> None:
    config = small_config(
        tmp_path,
        participants=[
            {"name": "rand", "agent": "random"},
            {"name": "crash", "agent": f"{__name__}:FaultyAgent", "options": {"mode": "raise", "after": 2}},
            {"name": "cheat", "agent": f"{__name__}:FaultyAgent", "options": {"mode": "illegal", "after": 10}},
        ],
        games_per_pairing=4,
        ratings={"bootstrap": 20},
    )
    result = run_tournament(config)
    assert result.complete and len(result.rows) == 12
    rows = read_rows(tmp_path)
    crash_games = [r for r in rows if "crash" in (r["a"], r["b"])]
    assert crash_games and all(r["forfeit"] == "crash" and r["end_reason"] == "forfeit" for r in crash_games)
    assert all("deliberate test fault" in r["error"] for r in crash_games)
    for r in crash_games:  # the forfeiting side loses
        assert float(r["a_points"]) == (0.0 if r["a"] == "crash" else 1.0)
    cheat_vs_rand = [r for r in rows if {r["a"], r["b"]} == {"rand", "cheat"}]
    assert all(r["forfeit"] == "cheat" and "illegal" in r["error"] for r in cheat_vs_rand)
    entries = [json.loads(line) for line in (tmp_path / "forfeits.jsonl").read_text().splitlines()]
    assert len(entries) == sum(1 for r in rows if r["forfeit"])
    fault = entries[0]["meta"]["forfeit"]
    assert {"participant", "kind", "seat", "step", "turn", "phase", "message", "cause"} <= set(fault)
    assert {e["meta"]["forfeit"]["kind"] for e in entries} == {"exception", "illegal"}
    # no finished game, so no record: records.jsonl holds only real, replayable hands
    assert not (tmp_path / "records.jsonl").read_text().strip()
    board = (tmp_path / "leaderboard.md").read_text()
    assert "## Forfeits" in board and "deliberate test fault" in board
    by_name = {s.name: s for s in result.standings}
    assert by_name["crash"].forfeits == 4 + 4 and by_name["rand"].forfeits == 0


def test_a_participant_that_fails_to_load_stops_before_any_game(tmp_path: Path) -> None:
    config = small_config(
        tmp_path / "run",
        participants=[
            {"name": "rand", "agent": "random"},
            {"name": "bot", "agent": "policy", "options": {"checkpoint": "nowhere.pt"}},
        ],
    )
    with pytest.raises(TournamentError, match=r"participant 'bot' \(agent 'policy'.*failed to load"):
        run_tournament(config)
    assert not (tmp_path / "run").exists()
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"participants": ["random", {"name": "x", "agent": "nosuch"}]}))
    assert main(["--config", str(path), "--set", f"out={tmp_path / 'cli'}", "--no-progress"]) == 2
    assert not (tmp_path / "cli").exists()


# ---------------------------------------------------------------------- resume
def test_resume_after_interruption_plays_only_missing_games(reference: Path, tmp_path: Path) -> None:
    first = run_tournament(small_config(tmp_path, chunk_size=1), max_games=5)
    assert first.played == 5 and not first.complete
    assert "incomplete" in (tmp_path / "leaderboard.md").read_text()
    # a timing row cut short (a killed writer) is dropped, not run into the next run's first row
    timings = tmp_path / "timings.csv"
    timings.write_bytes(timings.read_bytes()[:-5])
    second = run_tournament(small_config(tmp_path, chunk_size=1, backend="pool"))
    assert second.played == 18 - 5 and second.complete
    assert_same_files(reference, tmp_path)
    rows = list(csv.reader(timings.open(encoding="utf-8")))
    assert rows[0] == ["a", "b", "deal", "seating", "forfeit", "actions", "seconds"]
    assert len(rows) == 1 + 4 + 13 and {len(row) for row in rows} == {7}  # the cut game keeps its record
    # a record cut in the middle (a killed writer): that one game is played again
    path = tmp_path / "records.jsonl"
    text = path.read_bytes()
    path.write_bytes(text[: len(text) - 200])
    third = run_tournament(small_config(tmp_path))
    assert third.played == 1
    assert_same_files(reference, tmp_path)
    assert run_tournament(small_config(tmp_path)).played == 0


def test_games_whose_rules_cannot_be_checked_or_differ_are_not_reused(tmp_path: Path) -> None:
    """A folder whose config.yaml is gone had its games reused under any rules (a burako folder's games
    published as burako_casual's); and a game's own record must have this run's rules and players."""
    run_tournament(small_config(tmp_path), max_games=3)
    (tmp_path / "config.yaml").unlink()
    with pytest.raises(TournamentError, match=r"holds games but no config\.yaml"):
        run_tournament(small_config(tmp_path, rules="burako_casual"))
    run_tournament(small_config(tmp_path), max_games=3, fresh=True)
    records = tmp_path / "records.jsonl"
    # a record from before a rules field existed does not spell it out: its default, the same rules
    records.write_text(records.read_text().replace('"muerto_penalty":100,', ""))
    assert run_tournament(small_config(tmp_path), max_games=1).played >= 1  # not refused
    records.write_text(records.read_text().replace('"closing_bonus":100', '"closing_bonus":5000', 1))
    with pytest.raises(TournamentError, match="was played with other rules than this run's"):
        run_tournament(small_config(tmp_path))


def test_a_refused_run_leaves_the_journals_as_they_were(tmp_path: Path) -> None:
    """A torn last line is cut only once the folder is accepted: a run refused for holding games
    its config does not schedule (or a journal damaged in the middle) changes no byte."""
    run_tournament(small_config(tmp_path, chunk_size=1), max_games=12)
    records = tmp_path / "records.jsonl"
    records.write_bytes(records.read_bytes() + b'{"partial')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(TournamentError, match="does not schedule"):
        run_tournament(small_config(tmp_path, games_per_pairing=2))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    # accepted: the torn line is cut, and its game played again
    assert run_tournament(small_config(tmp_path, chunk_size=1), max_games=1).played == 1
    assert b'{"partial' not in records.read_bytes()


@pytest.mark.parametrize("fresh", [False, True])
def test_a_tournament_refuses_a_folder_that_is_not_a_tournaments(tmp_path: Path, fresh: bool) -> None:
    """out= a training run's folder: its config.yaml is neither replaced nor (--fresh) deleted."""
    run = tmp_path / "run"
    run.mkdir()
    config_text = "exp_name: ppo_reference\nseed: 1\n"
    (run / "config.yaml").write_text(config_text, encoding="utf-8")
    with pytest.raises(TournamentError, match=r"is not a tournament's folder: its config\.yaml is not a tournament"):
        run_tournament(small_config(run), fresh=fresh)
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == ["config.yaml"]
    assert (run / "config.yaml").read_text(encoding="utf-8") == config_text
    (run / "config.yaml").write_text("x: [", encoding="utf-8")
    with pytest.raises(TournamentError, match="is not a tournament's folder"):
        run_tournament(small_config(run), fresh=fresh)


@pytest.mark.parametrize("max_games", [0, -1])
def test_max_games_below_one_is_refused_before_any_game(tmp_path: Path, max_games: int) -> None:
    """--max-games 0 used to play one game (the check came after the first task)."""
    with pytest.raises(TournamentError, match=f"max_games must be a whole number >= 1 .*got {max_games}"):
        run_tournament(small_config(tmp_path / "t"), max_games=max_games)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("left", [b"", b"a,b,dea"])
def test_a_timings_file_killed_before_its_header_was_whole_gets_the_header(tmp_path: Path, left: bytes) -> None:
    """timings.csv left empty or with half its header (a kill during the first task): the next run
    writes the header, not header-less rows."""
    run_tournament(small_config(tmp_path, chunk_size=1), max_games=2)
    timings = tmp_path / "timings.csv"
    timings.write_bytes(left)
    run_tournament(small_config(tmp_path, chunk_size=1), max_games=4)
    rows = list(csv.reader(timings.open(encoding="utf-8")))
    assert rows[0] == ["a", "b", "deal", "seating", "forfeit", "actions", "seconds"]
    assert len(rows) == 1 + 4 and {len(row) for row in rows} == {7}  # max_games counts new games


def test_a_folder_of_another_tournament_is_refused(reference: Path, tmp_path: Path) -> None:
    run_tournament(small_config(tmp_path), max_games=2)
    with pytest.raises(TournamentError, match="different tournament"):
        run_tournament(small_config(tmp_path, seed=6))
    assert run_tournament(small_config(tmp_path, seed=6), fresh=True).complete


def test_the_files_agents_read_are_named_by_their_classes() -> None:
    """A policy's checkpoint, given or the shipped default, is what a tournament fingerprints;
    agents that read no file name none."""
    assert agent_files("policy", {}) == [str(DEFAULT_CHECKPOINT)]
    assert agent_files("policy", {"checkpoint": "x.pt", "greedy": False}) == ["x.pt"]
    assert agent_files("neural_ismcts", {"simulations": 8}) == [str(DEFAULT_CHECKPOINT)]
    assert agent_files("rummy-policy", {}) == []  # no default: building the agent says so
    assert agent_files("planner", {}) == agent_files("random", {}) == []


def test_a_checkpoint_replaced_under_the_same_path_is_not_resumed(tmp_path: Path) -> None:
    """The config names the same file, but its bytes are another bot's: the folder's games were
    played by the old one, so resuming is refused (and --fresh plays them again)."""
    bot = tmp_path / "bot.pt"
    shutil.copyfile(DEFAULT_CHECKPOINT, bot)
    participants = [
        {"name": "bot", "agent": "policy", "options": {"checkpoint": str(bot)}},
        {"name": "rand", "agent": "random"},
    ]
    out = tmp_path / "t"
    config = small_config(out, participants=participants, games_per_pairing=2, chunk_size=1)
    assert run_tournament(config, max_games=1).played == 1
    stored = json.loads((out / "agent_files.json").read_text(encoding="utf-8"))
    assert stored == {"bot": {str(bot): hashlib.sha256(bot.read_bytes()).hexdigest()}}
    shutil.copyfile(DEFAULT_CHECKPOINT.with_name("burako_ppo_2026-12-01.pt"), bot)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(TournamentError, match=r"other agent files than this run's: the SHA-256 of what bot read"):
        run_tournament(config)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    # only the bytes count: the same file under another path (another copy of the project) resumes
    shutil.copyfile(DEFAULT_CHECKPOINT, bot)
    (out / "agent_files.json").write_text(json.dumps({"bot": {"/elsewhere/bot.pt": stored["bot"][str(bot)]}}))
    assert run_tournament(config, max_games=1).played == 1
    # a folder from before the check (no agent_files.json) cannot say which bot played: refused too
    (out / "agent_files.json").unlink()
    with pytest.raises(TournamentError, match=r"games played before a tournament kept the SHA-256 .*\['bot'\]"):
        run_tournament(config)
    assert run_tournament(config, fresh=True).complete
    assert json.loads((out / "agent_files.json").read_text(encoding="utf-8"))["bot"][str(bot)] == (
        hashlib.sha256(bot.read_bytes()).hexdigest()
    )


def test_a_folder_without_agent_files_resumes_when_no_agent_reads_one(tmp_path: Path) -> None:
    run_tournament(small_config(tmp_path), max_games=2)
    assert json.loads((tmp_path / "agent_files.json").read_text(encoding="utf-8")) == {}
    (tmp_path / "agent_files.json").unlink()
    assert run_tournament(small_config(tmp_path)).complete
    (tmp_path / "agent_files.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(TournamentError, match="is not a map of participants"):
        run_tournament(small_config(tmp_path))


# ---------------------------------------------------------------------- config
def test_config_file_overrides_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "participants": [
                    {"name": "a", "agent": "random"},
                    {"name": "b", "agent": "greedy"},
                    {"agent": "planner"},
                ],
                "ratings": {"anchor": "a"},
            }
        )
    )
    config = load_config(path, ["games_per_pairing=10", "participants.2.options.x=3", "ratings.bootstrap=7"])
    assert config.games_per_pairing == 10 and config.bootstrap == 7 and config.anchor == "a"
    assert config.participants[2].name == "planner" and dict(config.participants[2].options) == {"x": 3}
    assert load_config(path, ["participants.2=null"]).participants[-1].name == "b"
    for bad, message in [
        (["games_per_pairing=3"], "even"),
        (["format=swiss"], "format"),
        (["backend=mpi"], "backend"),
        (["colour=red"], "unknown config key"),
        (["participants.1.name=a"], "unique"),
        (["ratings.anchor=zz"], "anchor"),
        (["format=gauntlet"], "challengers"),
    ]:
        with pytest.raises(TournamentError, match=message):
            load_config(path, bad)
    data: dict[str, Any] = {"participants": [{"options": {}}]}
    apply_override(data, "participants.0.options.simulations=20")
    assert data["participants"][0]["options"]["simulations"] == 20


def test_gauntlet_pairs_challengers_with_the_field(tmp_path: Path) -> None:
    config = small_config(
        tmp_path,
        participants=[{"name": n, "agent": "random"} for n in ("c1", "c2", "f1", "f2", "f3")],
        format="gauntlet",
        challengers=["c2", "c1"],
    )
    assert [(p.a.name, p.b.name) for p in make_pairings(config)] == [
        (c, f) for c in ("c1", "c2") for f in ("f1", "f2", "f3")
    ]


# ---------------------------------------------------------------------- ratings
def synthetic_rows(elo: dict[str, float], deals: int, seed: int) -> list[GameRow]:
    """Deal pairs of a Bradley–Terry world with known Elo strengths (no draws)."""
    rng = np.random.default_rng(seed)
    names = list(elo)
    rows = []
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    for k, (a, b) in enumerate(pairs):
        p = 1.0 / (1.0 + 10 ** ((elo[b] - elo[a]) / 400.0))
        for deal in range(deals):
            for seating in range(2):
                pts = float(rng.random() < p)
                rows.append(GameRow(k, a, b, deal, seating, 0, str(seating), None, None, 0, pts, "closed", 0, 0))
    return rows


def test_bradley_terry_recovers_known_strengths() -> None:
    truth = {"weak": 0.0, "fair": 150.0, "good": 300.0, "best": 500.0}
    rows = synthetic_rows(truth, deals=1500, seed=1)
    names = list(truth)
    bt = bradley_terry_ratings(rows, names, bootstrap=200, seed=0, prior_draws=1.0, anchor="weak")
    assert list(np.argsort(bt.elo)) == [0, 1, 2, 3]
    for k, name in enumerate(names):
        assert abs(bt.elo[k] - truth[name]) < 30, (name, bt.elo[k])
        assert bt.low[k] - 1e-9 <= bt.elo[k] <= bt.high[k] + 1e-9
        if name != "weak":
            assert bt.low[k] - 5 < truth[name] < bt.high[k] + 5
            assert 5 < bt.high[k] - bt.low[k] < 80  # an interval, of a plausible width
    centred = bradley_terry_ratings(rows, names, bootstrap=0, prior_draws=1.0)
    assert math.isclose(float(centred.elo.mean()), 0.0, abs_tol=1e-6)
    assert np.allclose(centred.elo - centred.elo[0], bt.elo, atol=1e-4)
    skill = openskill_ratings(rows, names)
    assert sorted(names, key=lambda n: skill[n].mu) == names


def test_sweeps_stay_finite_and_draws_count_half() -> None:
    rows = [GameRow(0, "a", "b", d, s, 0, "0", 1, 0, 1, 1.0, "closed", 0, 0) for d in range(50) for s in range(2)]
    bt = bradley_terry_ratings(rows, ["a", "b"], bootstrap=10, prior_draws=1.0, anchor="b")
    expected = 400 * math.log10(100.5 / 0.5)  # 100 wins plus half a virtual draw each way
    assert math.isclose(float(bt.elo[0]), expected, rel_tol=1e-6)
    draws = [GameRow(0, "a", "b", d, s, 0, "0", 0, 0, 0, 0.5, "void", 0, 0) for d in range(10) for s in range(2)]
    assert abs(float(bradley_terry_ratings(draws, ["a", "b"], bootstrap=0).elo[0])) < 1e-6


def test_agent_seeds_match_the_evaluation(reference: Path) -> None:
    """A pairing replays as burako-eval --seed <pairing seed>: same deal and agent seeds."""
    pseed = pairing_seed(5, "rand", "rand2")
    records = [r for r in read_records(reference / "records.jsonl") if r["meta"]["tournament"]["b"] == "rand2"]
    from agents.runner import play_game

    first = records[0]
    deal = first["meta"]["tournament"]["deal"]
    agents = [RandomAgent(seed=agent_seed(pseed, deal, seat)) for seat in range(2)]
    again = play_game(agents, "burako", 2, deal_seed(pseed, deal))
    assert again.record is not None and again.record["actions"] == first["actions"]


# ---------------------------------------------------------------------- ray
def test_ray_backend_gives_the_same_results(reference: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run_tournament(small_config(tmp_path, backend="ray", chunk_size=4))
    finally:
        ray.shutdown()
    assert_same_files(reference, tmp_path)


def test_a_failed_ray_task_stops_with_a_clear_error_and_a_rerun_resumes(
    reference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray worker that dies (here a stand-in ``ray`` whose third task fails) stops the
    tournament with a TournamentError naming the task's games, not Ray's raw exception; the
    games finished before it are kept and a rerun plays only the rest, to the same files."""
    import sys
    import types

    from training.game_pool import play_task

    class RayError(Exception):
        pass

    class WorkerCrashedError(RayError):
        pass

    calls: list[str] = []

    class Remote:
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def remote(self, task: Any) -> tuple[int, Any]:
            return (len(calls), task)

    def remote(**_: Any) -> Any:
        return Remote

    def get(ref: tuple[int, Any]) -> Any:
        calls.append("get")
        if len(calls) == 3:
            raise WorkerCrashedError("The worker died unexpectedly while executing this task.")
        return play_task(ref[1])

    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: True  # type: ignore[attr-defined]
    fake.remote = remote  # type: ignore[attr-defined]
    fake.wait = lambda pending, num_returns: (pending[:num_returns], pending[num_returns:])  # type: ignore[attr-defined]
    fake.get = get  # type: ignore[attr-defined]
    fake.cancel = lambda ref, force: None  # type: ignore[attr-defined]
    exceptions = types.ModuleType("ray.exceptions")
    exceptions.RayError = RayError  # type: ignore[attr-defined]
    fake.exceptions = exceptions  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.exceptions", exceptions)
    with pytest.raises(TournamentError, match=r"a Ray task of 2 games \(\('.*WorkerCrashedError.*resume"):
        run_tournament(small_config(tmp_path, backend="ray"))
    rerun = run_tournament(small_config(tmp_path))
    assert rerun.played == 18 - 4 and rerun.complete
    assert_same_files(reference, tmp_path)


def test_the_leaderboard_names_the_anchor_only_once_it_is_rated(tmp_path: Path) -> None:
    """A partial run (--max-games) whose anchor had not played yet said "(rand2 = 0)" while the fit
    centred the mean (the anchor has no rating yet)."""
    config = small_config(tmp_path, ratings={"bootstrap": 10, "anchor": "rand2"})
    run_tournament(config, max_games=2)  # rand against greedy only
    board = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "(mean = 0: the anchor rand2 is not rated yet)" in board and "(rand2 = 0)" not in board
    run_tournament(config)
    assert "(rand2 = 0)" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
