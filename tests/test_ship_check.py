"""Issue 15's shipping rule (training/ship_check.py) on made-up evaluation tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from training import ship_check
from training.ship_check import EVALUATIONS, TABLES, Evaluation, checks, evaluation_command, main


def _table(seed: int, rate: float, low: float | None) -> dict[str, Any]:
    return {"seed": seed, "win_rate": rate, "win_rate_ci": [low, None if low is None else rate + 0.03]}


def _tables(p26: float = 0.71, p27: float = 0.69, search: float = 0.56, lows: tuple[Any, ...] = (0.68, 0.66, 0.51)):
    return {
        "planner_seed2026": _table(2026, p26, lows[0]),
        "planner_seed2027": _table(2027, p27, lows[1]),
        "ismcts30_seed2026": _table(2026, search, lows[2]),
    }


def test_the_rule_passes_at_its_bars_and_names_each_failure() -> None:
    """A mean of exactly 0.70 over the two planner seeds and 0.55 against the search pass; one seed
    below 0.70 is fine when the mean holds; each bar missed is its own failing line."""
    assert all(ok for _, ok in checks(_tables()))
    assert [ok for _, ok in checks(_tables(p26=0.70, p27=0.699))] == [False, True, True, True, True]
    assert [ok for _, ok in checks(_tables(search=0.549))] == [True, True, True, False, True]
    assert [ok for _, ok in checks(_tables(lows=(0.68, 0.5, 0.51)))] == [True, True, False, True, True]
    assert [ok for _, ok in checks(_tables(lows=(0.68, 0.66, None)))] == [True, True, True, True, False]


@pytest.mark.parametrize(("tables", "status"), [(_tables(), 0), (_tables(p27=0.60), 1)])
def test_the_command_reads_the_folder_and_exits_with_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tables: dict[str, Any], status: int
) -> None:
    for name, table in tables.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(table))
    assert main([str(tmp_path)]) == status
    assert capsys.readouterr().out.splitlines()[-1] == ("verdict: ships" if status == 0 else "verdict: does not ship")


def test_a_missing_table_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / f"{TABLES[0]}.json").write_text(json.dumps(_tables()[TABLES[0]]))
    assert main([str(tmp_path)]) == 2
    assert "planner_seed2027.json, ismcts30_seed2026.json" in capsys.readouterr().err


def test_each_evaluation_is_the_rules_burako_eval_command_and_resumes_from_its_record(tmp_path: Path) -> None:
    """The search is ismcts with 30 simulations on seed 2026; an evaluation resumes once its record
    file holds games, not before (an empty file is a run that never wrote a deal)."""
    search = next(e for e in EVALUATIONS if e.against_search)
    command = evaluation_command(search, Path("/p/policy.pt"), tmp_path, games=400, workers=2, python="py")
    assert command == [
        "py", "-m", "training.evaluate", "--a", "policy", "--a-opt", "checkpoint=/p/policy.pt",
        "--b", "ismcts", "--b-opt", "simulations=30", "--games", "400", "--seed", "2026", "--workers", "2",
        "--record", str(tmp_path / "ismcts30_seed2026.jsonl.gz"), "--json", str(tmp_path / "ismcts30_seed2026.json"),
        "--no-progress",
    ]  # fmt: skip
    record = tmp_path / "ismcts30_seed2026.jsonl.gz"
    record.write_bytes(b"")
    assert "--resume" not in evaluation_command(search, Path("p.pt"), tmp_path, 400, 2)
    record.write_bytes(b"x")
    assert evaluation_command(search, Path("p.pt"), tmp_path, 400, 2)[-1] == "--resume"
    assert [e.seed for e in EVALUATIONS] == [2026, 2027, 2026] and tuple(e.name for e in EVALUATIONS) == TABLES


def _fake_evaluation(rates: dict[str, float]) -> Callable[..., list[str]]:
    """Stand-in for burako-eval: prints a line and writes the --json table it was asked for."""

    def command(evaluation: Evaluation, policy: Path, out: Path, games: int, workers: int) -> list[str]:
        table = {"seed": evaluation.seed, "win_rate": rates[evaluation.name], "win_rate_ci": [0.6, 0.8], "games": games}
        path = out / f"{evaluation.name}.json"
        write = f"pathlib.Path({str(path)!r}).write_text({json.dumps(table)!r})"
        return [sys.executable, "-c", f"import pathlib; print('table of', {evaluation.name!r}); {write}"]

    return command


def test_a_policy_is_evaluated_into_its_folder_then_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ship_check <policy.pt>`` plays the three evaluations into ship_check/ beside the policy, keeps
    each printed output as <table>.txt, and ends with the rule's verdict."""
    policy = tmp_path / "policy.pt"
    policy.write_bytes(b"weights")
    rates = {"planner_seed2026": 0.72, "planner_seed2027": 0.70, "ismcts30_seed2026": 0.56}
    monkeypatch.setattr(ship_check, "evaluation_command", _fake_evaluation(rates))
    assert main([str(policy), "--games", "20", "--search-games", "8"]) == 0
    out = tmp_path / "ship_check"
    assert (out / "planner_seed2027.txt").read_text() == "table of planner_seed2027\n"
    assert json.loads((out / "ismcts30_seed2026.json").read_text())["games"] == 8
    assert json.loads((out / "planner_seed2026.json").read_text())["games"] == 20
    assert capsys.readouterr().out.splitlines()[-1] == "verdict: ships"
    rates["planner_seed2027"] = 0.65
    assert main([str(policy), "--out", str(tmp_path / "again")]) == 1


def test_a_failed_evaluation_stops_the_check_with_its_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.pt"
    policy.write_bytes(b"weights")
    monkeypatch.setattr(ship_check, "evaluation_command", lambda *a, **k: [sys.executable, "-c", "raise SystemExit(3)"])
    assert main([str(policy)]) == 3
    assert "planner_seed2026 stopped with status 3" in capsys.readouterr().err
    assert not (tmp_path / "ship_check" / "planner_seed2027.txt").exists()


def test_a_missing_policy_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "nope.pt")])
    assert stop.value.code == 2
