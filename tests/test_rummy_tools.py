"""Rummy in the tooling: ``burako-eval --game rummy`` and the analysis frames (issue 17, item 5)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pytest

from agents.registry import AGENT_GAMES, AGENTS
from burako_env import analysis
from burako_env.records import GAMES, read_records
from training.evaluate import agent_games, main
from training.rummy_evaluate import evaluate_rummy


def _run(argv: list[str], tmp_path: Path) -> tuple[dict, list[dict], str]:
    summary, records = tmp_path / "summary.json", tmp_path / "games.jsonl"
    rc = main([*argv, "--no-progress", "--json", str(summary), "--record", str(records)])
    assert rc == 0
    return json.loads(summary.read_text()), read_records(records, verify=True), str(records)


def test_eval_game_rummy_runs_the_rummy_duplicate_evaluation(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The same agent on both sides: each deal's two games are the same game with the seats swapped (the
    agents' seeds follow the seat), so A wins exactly one of each pair: win rate 0.5, score difference 0."""
    data, records, _ = _run(["--game", "rummy", "--a", "random", "--b", "random", "--games", "4"], tmp_path)
    table = capsys.readouterr().out
    assert "game rummy, rules rummy, 2 players, seed 0" in table
    assert "A wins / draws / losses" in table
    assert data["game"] == "rummy" and (data["a"], data["b"], data["rules"]) == ("random", "random", "rummy")
    assert (data["games"], data["deals"]) == (4, 2)
    assert data["win_rate"] == 0.5 and data["mean_diff"] == 0.0
    assert data["wins"] == data["losses"] and data["closed"] + data["blocked"] == 4
    assert [r["game"] for r in records] == ["rummy"] * 4
    assert [r["meta"]["evaluation"]["a_seat"] for r in records] == [0, 1, 0, 1]
    # the pair's two games are one game: the agents' seeds follow the seat, and A changed seat
    assert records[0]["actions"] == records[1]["actions"]
    assert records[0]["hand_scores"] == records[1]["hand_scores"]


def test_eval_rummy_preset_means_game_rummy_and_matches_evaluate_rummy(tmp_path: Path) -> None:
    """``--rules rummy`` alone picks the game; the CLI's figures are :func:`evaluate_rummy`'s."""
    data, records, _ = _run(["--rules", "rummy", "--a", "rummy-greedy", "--b", "random", "--games", "2"], tmp_path)
    direct = asdict(evaluate_rummy("rummy-greedy", "random", 1, seed=0))
    for key in ("wins", "draws", "losses", "closed", "blocked", "mean_diff", "mean_turns", "win_rate_by_seat"):
        assert data[key] == (list(direct[key]) if isinstance(direct[key], tuple) else direct[key]), key
    assert [r["agents"] for r in records] == [["A:rummy-greedy", "B:random"], ["B:random", "A:rummy-greedy"]]


def test_eval_rummy_is_independent_of_the_worker_count(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Same table and records with 1 and 2 worker processes (``module:Class`` agents work too)."""
    outputs = []
    for workers in (1, 2):
        folder = tmp_path / f"w{workers}"
        folder.mkdir()
        argv = ["--game", "rummy", "--a", "agents.random_agent:RandomAgent", "--b", "rummy-greedy", "--games", "4"]
        _run([*argv, "--workers", str(workers), "--chunk-size", "1"], folder)
        outputs.append(((folder / "games.jsonl").read_text(), capsys.readouterr().out.replace(str(folder), "")))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--game", "rummy", "--a", "planner", "--b", "random"], "agent 'planner' plays burako only, not rummy"),
        (["--rules", "rummy", "--a", "random", "--b", "ismcts"], "agent 'ismcts' plays burako only, not rummy"),
        (["--a", "rummy-heuristic", "--b", "random"], "agent 'rummy-heuristic' plays rummy only, not burako"),
        (["--game", "rummy", "--rules", "burako_royal", "--a", "random", "--b", "random"], "is a Burako preset"),
        (["--game", "burako", "--rules", "rummy", "--a", "random", "--b", "random"], "is a Rummy preset"),
        (["--game", "rummy", "--players", "4", "--a", "random", "--b", "random"], "for 2 players"),
        (["--game", "rummy", "--games", "3", "--a", "random", "--b", "random"], "positive even number"),
        (["--game", "rummy", "--rules", "no_such_preset", "--a", "random", "--b", "random"], "unknown rummy rules"),
    ],
)
def test_eval_refuses_combinations_that_make_no_sense(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    record = tmp_path / "games.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--no-progress", "--record", str(record)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not record.exists()  # nothing was played nor written


def test_agent_games_read_off_the_registry() -> None:
    assert agent_games("random") == ("burako", "rummy")
    assert agent_games("rummy-heuristic") == agent_games("rummy-greedy") == ("rummy",)
    assert agent_games("planner") == agent_games("policy") == ("burako",)
    assert agent_games("my_bots:Cautious") is None  # not in the registry: tried as given
    assert set(AGENT_GAMES) == set(AGENTS)  # every built-in agent says which games it plays
    assert all(games and set(games) <= set(GAMES) for games in AGENT_GAMES.values())


def test_games_frame_reads_rummy_records(tmp_path: Path) -> None:
    """Rummy records in ``analysis.games_frame``: per-seat totals, the closer, the end reason (R8, R9, R10)."""
    _, records, path = _run(["--game", "rummy", "--a", "rummy-greedy", "--b", "random", "--games", "2"], tmp_path)
    frame = analysis.games_frame(path)
    assert list(frame["game_type"]) == ["rummy", "rummy"]
    for row, record in zip(frame.to_dict("records"), records, strict=True):
        assert [row["total_0"], row["total_1"]] == record["hand_scores"]
        assert row["end_reason"] == record["end_reason"]
        assert row["closed"] == (record["end_reason"] == "closed")
        assert row["blocked"] == (record["end_reason"] == "blocked")
        closer = record["result"]["closer"]
        assert row["closer"] == (-1 if closer is None else closer)
        if closer is not None:
            assert row[f"total_{closer}"] == 0  # R10: the closer's total is 0
        winners = record["result"]["winners"]
        assert row["winner"] == (winners[0] if len(winners) == 1 else -1)
        assert row["winner_agent"] == "+".join(sorted({record["agents"][s] for s in winners}))
        assert (row["turns"], row["actions"], row["starter"]) == (
            record["turns"],
            len(record["actions"]),
            record["starter"],
        )
        assert row["meta_evaluation_a"] == "rummy-greedy"
    moves = analysis.decisions_frame(path)
    assert len(moves) == sum(len(r["actions"]) for r in records)
    assert set(moves["kind"]) <= {"add_tile", "add_closing", "commit", "end_turn"}
    first = records[0]
    assert list(moves[moves["game"] == 0]["description"]) == first["descriptions"]


def test_eval_rummy_refuses_a_record_file_another_run_writes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from training.locks import file_lock

    record = tmp_path / "games.jsonl"
    held = file_lock(record, "the record file")  # what a running burako-eval holds
    try:
        with pytest.raises(SystemExit):
            main(["--game", "rummy", "--a", "random", "--b", "random", "--games", "2", "--record", str(record)])
    finally:
        held.release()
    assert "another process is using the record file" in capsys.readouterr().err
    assert not record.exists()


def test_games_frame_mixes_burako_and_rummy_records(tmp_path: Path) -> None:
    """One frame of both games: ``game_type`` tells them apart, each row has its game's columns, NaN elsewhere."""
    from agents.random_agent import RandomAgent
    from agents.runner import play_game

    burako = play_game([RandomAgent(seed=0), RandomAgent(seed=1)], "burako", 2, 3, record=True).record
    _, rummy, _ = _run(["--game", "rummy", "--a", "random", "--b", "random", "--games", "2"], tmp_path)
    frame = analysis.games_frame([burako, rummy[0]])
    assert list(frame["game_type"]) == ["burako", "rummy"]
    assert list(frame["rules"]) == ["burako", "rummy"]
    scores = burako["hand_scores"]
    expected = [math.nan, math.nan] if scores is None else [scores[0]["total"], scores[1]["total"]]
    assert [frame.loc[0, "s0_total"], frame.loc[0, "s1_total"]] == pytest.approx(expected, nan_ok=True)
    assert math.isnan(frame.loc[0, "total_0"]) and math.isnan(frame.loc[1, "s0_total"])
    assert frame.loc[1, "total_0"] == rummy[0]["hand_scores"][0]
