"""Game records (write/read/replay, E4), the game runner and the duplicate evaluation."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import shutil
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import child_environment

from agents.base import SeatView
from agents.options import parse_options, parse_value
from agents.policy import DEFAULT_CHECKPOINT
from agents.random_agent import RandomAgent
from agents.runner import AgentFault, LazyObservation, play_game
from burako_env import actions as A
from burako_env.engine import GameState
from burako_env.observation import Observer
from burako_env.records import (
    FORMAT_VERSION,
    RecordError,
    is_gzip,
    read_records,
    replay,
    replay_steps,
    validate_record,
    write_records,
)
from burako_env.rules import load_rules, preset_names
from burako_env.stats import wilson_interval
from burako_env.views import LazySeatView
from training.evaluate import AgentSpec, deal_seed, evaluate, main

TABLES = [(name, n) for name in preset_names() for n in load_rules(name).players]


def random_game(rules: Any, n: int, seed: int, **kwargs: Any):
    return play_game([RandomAgent(seed=seed * 10 + i) for i in range(n)], rules, n, seed, **kwargs)


@pytest.fixture(scope="module")
def sample_record() -> dict[str, Any]:
    """A closed hand with a score, so every field is exercised."""
    for seed in range(50):
        result = random_game("burako", 2, seed)
        if result.end_reason == "closed":
            return result.record  # type: ignore[return-value]
    raise AssertionError("no closed hand in 50 random games")


# ---------------------------------------------------------------------- records
@pytest.mark.parametrize(("preset", "n"), TABLES)
def test_records_round_trip_and_replay_exactly(preset: str, n: int, tmp_path: Path) -> None:
    results = [random_game(preset, n, seed) for seed in range(3)]
    records = [r.record for r in results]
    path = tmp_path / "games.jsonl"
    assert write_records(path, records) == 3
    assert path.read_text().count("\n") == 3
    back = read_records(path, verify=True)
    assert back == json.loads(json.dumps(records))
    for result, record in zip(results, back, strict=True):
        assert record["format"] == FORMAT_VERSION
        assert len(record["actions"]) == len(record["descriptions"]) == result.num_actions
        final = replay(record)
        assert final.to_json() == result.state.to_json()  # E4: same seed, same actions, same game
        steps = list(replay_steps(record))
        assert len(steps) == result.num_actions + 1
        assert steps[0].action is None and steps[0].state.turn == 0
        assert [s.action for s in steps[1:]] == record["actions"]
        assert [s.description for s in steps[1:]] == record["descriptions"]
        assert steps[-1].state.to_json() == final.to_json()
        assert steps[1].state is not steps[2].state  # independent copies for UIs
    # the same games played again are the same bytes
    again = tmp_path / "again.jsonl"
    write_records(again, [random_game(preset, n, seed).record for seed in range(3)])
    assert again.read_bytes() == path.read_bytes()


def test_record_of_truncated_and_closed_hands(sample_record: dict[str, Any]) -> None:
    assert sample_record["end_reason"] == "closed"
    assert sample_record["hand_scores"] is not None
    totals = [s["total"] for s in sample_record["hand_scores"]]
    assert sample_record["result"]["side_rewards"] == [totals[0] - totals[1], totals[1] - totals[0]]
    truncated = random_game(load_rules("burako", {"max_turns": 3}), 2, 0).record
    assert truncated["end_reason"] == "truncated" and truncated["hand_scores"] is None
    assert truncated["result"] == {"winner": None, "side_rewards": [0.0, 0.0]}
    replay(json.loads(json.dumps(truncated)))


def _mutate(record: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    target = out
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


MALFORMED = [
    (("deal_seed",), KeyError, "deal_seed", "missing field"),
    (("format",), KeyError, "format", "missing field"),
    (("format",), 99, "format", "unknown format version 99"),
    (("format",), "1", "format", "unknown format version"),
    (("num_players",), "2", "num_players", "expected an integer"),
    (("num_players",), True, "num_players", "expected an integer"),
    (("num_players",), 3, "num_players", "not allowed"),
    (("deal_seed",), -1, "deal_seed", ">= 0"),
    (("actions",), "0 1 2", "actions", "expected a list"),
    (("actions", 3), "7", "actions", "item 3"),
    (("actions", 2), A.NUM_ACTIONS, "actions", "out of range"),
    (("agents",), ["random"], "agents", "one entry per seat"),
    (("descriptions", 0), 5, "descriptions", "item 0"),
    (("end_reason",), "won", "end_reason", "expected one of"),
    (("hand_scores", 0, "total"), "big", "hand_scores", "side 0"),
    (("result", "winner"), 5, "result", "winner"),
    (("result", "side_rewards"), [1.0], "result", "side_rewards"),
    (("rules", "muerto_size"), -3, "rules", "muerto_size"),
    (("meta",), [1], "meta", "expected an object"),
    (("extra",), 1, "extra", "unknown field"),
]


@pytest.mark.parametrize(("path", "value", "field", "text"), MALFORMED)
def test_malformed_records_name_the_field(
    sample_record: dict[str, Any], path: tuple[Any, ...], value: Any, field: str, text: str
) -> None:
    bad = _mutate(sample_record, path, value)
    with pytest.raises(RecordError, match=text) as info:
        validate_record(bad)
    assert info.value.field == field
    assert f"field {field!r}" in str(info.value)
    with pytest.raises(RecordError):
        replay(bad)


def _tamper_index(record: dict[str, Any]) -> int:
    """An action index in the middle whose action we can swap for an illegal one."""
    return len(record["actions"]) // 2


def test_tampered_records_do_not_replay(sample_record: dict[str, Any]) -> None:
    k = _tamper_index(sample_record)
    state = GameState.new_game(np.random.default_rng(sample_record["deal_seed"]), "burako", 2)
    for a in sample_record["actions"][:k]:
        state.apply(a)
    illegal = next(a for a in range(A.NUM_ACTIONS) if not state.is_legal(a))
    cases = [
        (_mutate(sample_record, ("actions", k), illegal), {"index": k}, "does not replay"),
        (_mutate(sample_record, ("descriptions", k), "draw a joker from thin air"), {"index": k}, "record says"),
        (_mutate(sample_record, ("hand_scores", 1, "total"), 12345), {"field": "hand_scores"}, "side 1 total"),
        (_mutate(sample_record, ("hand_scores", 0, "melded"), -5), {"field": "hand_scores"}, "side 0 melded"),
        (_mutate(sample_record, ("end_reason",), "stock_exhausted"), {"field": "end_reason"}, "closed"),
        (_mutate(sample_record, ("turns",), 1), {"field": "turns"}, "turn"),
        (_mutate(sample_record, ("result", "side_rewards"), [1.0, -1.0]), {"field": "result"}, "side_rewards"),
        (_mutate(sample_record, ("mano",), 1 - sample_record["mano"]), {"field": "mano"}, "mano"),
    ]
    short = copy.deepcopy(sample_record)
    del short["actions"][-1], short["descriptions"][-1]
    cases.append((short, {"field": "actions"}, "not over"))
    longer = copy.deepcopy(sample_record)
    longer["actions"].append(0)
    longer["descriptions"].append("draw from the stock")
    cases.append((longer, {"index": len(sample_record["actions"])}, "hand ended"))
    for bad, where, text in cases:
        with pytest.raises(RecordError, match=text) as info:
            replay(bad)
        for attr, value in where.items():
            assert getattr(info.value, attr) == value, (attr, str(info.value))
        if "index" in where:
            assert f"action {where['index']}:" in str(info.value)


def test_read_records_reports_the_line(sample_record: dict[str, Any], tmp_path: Path) -> None:
    good = json.dumps(sample_record)
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n\n" + good[:-5] + "\n")  # line 3 is cut short
    with pytest.raises(RecordError, match="line 3: not valid JSON") as info:
        read_records(path)
    assert info.value.line == 3
    path.write_text(good + "\n[1, 2]\n")
    with pytest.raises(RecordError, match="line 2: a record must be a JSON object"):
        read_records(path)
    tampered = _mutate(sample_record, ("descriptions", 4), "nonsense")
    path.write_text(good + "\n" + good + "\n" + json.dumps(tampered) + "\n")
    assert len(read_records(path)) == 3  # well-formed: only a replay finds it
    with pytest.raises(RecordError, match="line 3, action 4: ") as info:
        read_records(path, verify=True)
    assert (info.value.line, info.value.index) == (3, 4)
    err = pickle.loads(pickle.dumps(info.value))
    assert isinstance(err, ValueError) and str(err) == str(info.value) and err.index == 4
    with pytest.raises(RecordError, match="refusing to write"):
        write_records(tmp_path / "x.jsonl", [_mutate(sample_record, ("format",), 2)])


def test_gz_record_files_are_compressed_and_read_back(sample_record: dict[str, Any], tmp_path: Path) -> None:
    """A ``.gz`` name writes gzip, appending adds a member, and reading tells
    gzip by its first bytes: a plain file named ``.gz`` still reads and
    stays plain when appended to. A compressed file cut short reads up to the
    cut and then names the line; corrupt gzip data is a RecordError. Every
    record is on disk as soon as it is written (a kill loses none)."""
    import gzip

    from burako_env.records import RecordWriter, is_gzip, iter_records, record_bytes

    write_records(tmp_path / "ref.jsonl", [sample_record])
    (record,) = read_records(tmp_path / "ref.jsonl")  # as JSON gives it back
    path = tmp_path / "games.jsonl.gz"
    assert write_records(path, [sample_record] * 3) == 3
    assert is_gzip(path) and read_records(path) == [record] * 3
    with RecordWriter(path, mode="a") as writer:
        writer.write(sample_record)
    assert writer.compressed and len(read_records(path, verify=True)) == 4
    assert gzip.decompress(path.read_bytes()) == record_bytes(path)
    plain = tmp_path / "plain.jsonl.gz"  # what the writer made of a .gz name before it compressed
    plain.write_text(json.dumps(sample_record) + "\n")
    with RecordWriter(plain, mode="a") as writer:
        writer.write(sample_record)
    assert not is_gzip(plain) and read_records(plain) == [record] * 2

    for name in ("open.jsonl", "open.jsonl.gz"):  # each record is on disk before the writer closes (a kill loses none)
        writer = RecordWriter(tmp_path / name)
        writer.write(sample_record)
        writer.write(sample_record)
        assert record_bytes(tmp_path / name).count(b"\n") == 2
        writer.close()

    whole = path.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) - 200])  # the last member loses its end
    records = iter_records(cut)
    assert [next(records) for _ in range(3)] == [record] * 3
    with pytest.raises(RecordError, match=r"line 4: .*cut short") as info:
        next(records)
    assert info.value.line == 4
    assert record_bytes(cut).count(b"\n") == 3  # what was written before the cut
    corrupt = tmp_path / "corrupt.jsonl.gz"
    corrupt.write_bytes(whole[:40] + bytes(b ^ 0xFF for b in whole[40:80]) + whole[80:])
    with pytest.raises(RecordError, match="corrupt"):
        read_records(corrupt)
    with pytest.raises(RecordError, match="corrupt gzip"):
        record_bytes(corrupt)
    with pytest.raises(FileNotFoundError):
        read_records(tmp_path / "missing.jsonl.gz")


def test_the_shipped_compressed_evaluation_record_reads_and_replays() -> None:
    """``docs/evaluation``'s ``.jsonl.gz`` records read with the project's own reader."""
    from burako_env.records import iter_records

    path = Path(__file__).parents[1] / "docs" / "evaluation" / "neural_ismcts_0.2s_vs_policy_400games_seed16.jsonl.gz"
    first = next(iter_records(path, verify=True))
    assert first["meta"]["evaluation"]["deal"] == 0 and first["agents"][0].startswith("A:neural_ismcts")


# ---------------------------------------------------------------------- runner
class IllegalAgent(RandomAgent):
    """Plays randomly, then answers an illegal action at its ``at``-th decision."""

    name = "cheater"

    def __init__(self, seed: int | None = None, at: int = 5, answer: Any = None) -> None:
        super().__init__(seed)
        self.calls, self.at, self.answer = 0, at, answer

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> Any:
        self.calls += 1
        if self.calls == self.at:
            if self.answer is not None:
                return self.answer
            return int(np.flatnonzero(observation["action_mask"] == 0)[0])
        return super().act(observation, view)


class CrashingAgent(RandomAgent):
    name = "crasher"

    def act(self, observation: dict[str, np.ndarray], view: Any = None) -> int:
        raise ZeroDivisionError("boom")


@pytest.mark.parametrize("answer", [None, -1, A.NUM_ACTIONS, "draw", 1.0, True])
def test_illegal_action_raises_agent_fault(answer: Any) -> None:
    agents = [RandomAgent(seed=1), IllegalAgent(seed=2, at=3, answer=answer)]
    with pytest.raises(AgentFault) as info:
        play_game(agents, "burako", 2, 11)
    fault = info.value
    assert (fault.kind, fault.agent, fault.seat, fault.side, fault.deal_seed) == ("illegal", "cheater", 1, 1, 11)
    assert "agent 'cheater' in seat 1 played an illegal action" in str(fault)
    assert fault.step >= 2 and fault.phase
    if isinstance(answer, int) and not isinstance(answer, bool):
        assert fault.action == answer and str(answer) in str(fault)
    elif answer is not None:
        assert fault.action == repr(answer)
    back = pickle.loads(pickle.dumps(fault))  # crosses worker processes intact
    assert str(back) == str(fault) and back.__dict__ == fault.__dict__


def test_agent_exception_raises_agent_fault() -> None:
    with pytest.raises(AgentFault, match=r"agent 'crasher' in seat 0 raised in act\(\) at action \d+ \(turn") as info:
        play_game([CrashingAgent(seed=0), RandomAgent(seed=1)], "burako", 2, 3)
    assert info.value.kind == "exception" and info.value.cause == "ZeroDivisionError: boom"
    assert "ZeroDivisionError" in (info.value.cause_traceback or "")
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_runner_rejects_shared_agent_objects_and_wrong_counts() -> None:
    agent = RandomAgent(seed=0)
    with pytest.raises(ValueError, match="same agent object"):
        play_game([agent, agent], "burako", 2, 0)
    with pytest.raises(ValueError, match="3 agents for 2 seats"):
        play_game([RandomAgent(seed=i) for i in range(3)], "burako", 2, 0)


class Inspector(RandomAgent):
    """Checks, at each of its decisions, that the lazy observation and view
    equal the eager ones the env and SeatView would give."""

    def __init__(self, seed: int | None, observer: Observer, game: list[GameState]) -> None:
        super().__init__(seed)
        self.observer, self.game, self.checked = observer, game, 0

    def act(self, observation: Any, view: Any = None) -> int:
        state = self.game[0]
        assert isinstance(observation, LazyObservation) and isinstance(view, LazySeatView)
        assert list(observation) == ["observation", "action_mask"]
        np.testing.assert_array_equal(observation["observation"], self.observer.encode(state, self.seat))
        np.testing.assert_array_equal(observation["action_mask"], state.legal_mask())
        eager = SeatView(state, self.seat, np.random.default_rng(self.checked))
        lazy = LazySeatView(state, self.seat, np.random.default_rng(self.checked))
        assert lazy.sample_state().to_json() == eager.sample_state().to_json()
        assert view.legal_actions() == state.legal_actions() and view.phase == state.phase
        np.testing.assert_array_equal(view.hand, state.hands[self.seat])
        self.checked += 1
        return super().act(observation, view)


def test_lazy_observation_and_view_match_the_eager_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    live: list[GameState] = []
    original = GameState.new_game.__func__  # type: ignore[attr-defined]

    def spy(cls: type, *args: Any, **kwargs: Any) -> GameState:
        state = original(cls, *args, **kwargs)
        live[:] = [state]
        return state

    monkeypatch.setattr(GameState, "new_game", classmethod(spy))
    observer = Observer(2, load_rules("burako"))
    agents = [Inspector(1, observer, live), Inspector(2, observer, live)]
    result = play_game(agents, "burako", 2, 5, record=False)
    assert result.record is None
    assert agents[0].checked + agents[1].checked == result.num_actions


# ---------------------------------------------------------------------- evaluation
RANDOM = AgentSpec.of("random")


def test_evaluation_reproducible_and_independent_of_workers(tmp_path: Path) -> None:
    runs = []
    for run, workers in enumerate((1, 2, 1)):
        path = tmp_path / f"run{run}.jsonl"
        ev = evaluate(RANDOM, RANDOM, games=12, seed=4, workers=workers, record_path=path, chunk_size=2)
        summary = ev.summary.to_dict()
        summary.pop("seconds")
        runs.append((summary, [(o.deal, o.seating, o.a_score, o.b_score) for o in ev.outcomes], path.read_bytes()))
    assert runs[0] == runs[1] == runs[2]
    records = read_records(tmp_path / "run1.jsonl", verify=True)
    assert [r["meta"]["evaluation"]["deal"] for r in records] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert [r["agents"] for r in records[:2]] == [["A:random", "B:random"], ["B:random", "A:random"]]
    assert records[0]["deal_seed"] == records[1]["deal_seed"] == deal_seed(4, 0)
    other = evaluate(RANDOM, RANDOM, games=12, seed=5)
    assert [o.deal_seed for o in other.outcomes] != [o.deal_seed for o in ev.outcomes]


def test_a_killed_evaluation_resumes_from_its_record_file(tmp_path: Path) -> None:
    """--resume: the whole deals in the record file are counted, a half deal and a torn
    line are played again, and the result and the file equal an uninterrupted run's;
    a finished run resumed with a larger --games is extended the same way."""
    planner = AgentSpec.of("planner")
    full_path = tmp_path / "full.jsonl"
    full = evaluate(planner, RANDOM, games=8, seed=3, record_path=full_path)
    lines = full_path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 8

    def summary_of(ev: Any) -> dict[str, Any]:
        data = ev.summary.to_dict()
        data.pop("seconds")
        return data

    # killed after deal 1, in the first game of deal 2, while writing its second game
    path = tmp_path / "killed.jsonl"
    path.write_bytes(b"".join(lines[:5]) + lines[5][:40])
    resumed = evaluate(planner, RANDOM, games=8, seed=3, record_path=path, resume=True)
    assert resumed.resumed_games == 4
    assert summary_of(resumed) == summary_of(full)
    assert [(o.deal, o.seating, o.a_score, o.b_score, o.end_reason) for o in resumed.outcomes] == [
        (o.deal, o.seating, o.a_score, o.b_score, o.end_reason) for o in full.outcomes
    ]
    assert path.read_bytes() == full_path.read_bytes()
    # nothing left to play: the file is the result
    again = evaluate(planner, RANDOM, games=8, seed=3, record_path=path, resume=True)
    assert again.resumed_games == 8 and summary_of(again) == summary_of(full)

    # a finished shorter run extended to more games: its deals are kept, the next ones played
    short = tmp_path / "short.jsonl"
    evaluate(planner, RANDOM, games=4, seed=3, record_path=short)
    extended = evaluate(planner, RANDOM, games=8, seed=3, record_path=short, resume=True)
    assert extended.resumed_games == 4 and summary_of(extended) == summary_of(full)
    assert short.read_bytes() == full_path.read_bytes()

    # the same with a compressed record file: killed inside its gzip stream, resumed, equal records
    gz_full = tmp_path / "full.jsonl.gz"
    evaluate(planner, RANDOM, games=8, seed=3, record_path=gz_full)
    data = gz_full.read_bytes()
    gz_killed = tmp_path / "killed.jsonl.gz"
    gz_killed.write_bytes(data[: len(data) * 3 // 5])
    resumed = evaluate(planner, RANDOM, games=8, seed=3, record_path=gz_killed, resume=True)
    assert 0 < resumed.resumed_games < 8 and summary_of(resumed) == summary_of(full)
    assert is_gzip(gz_killed) and read_records(gz_killed) == read_records(full_path)
    # killed between two records (the writer flushes after each): whole lines, no gzip end; it was refused.
    # Between two deals too: nothing to drop, yet the file is rewritten (appending after it was unreadable)
    for kept_lines in (5, 4):
        stream = zlib.compressobj(wbits=31)
        cut = stream.compress(b"".join(lines[:kept_lines])) + stream.flush(zlib.Z_SYNC_FLUSH)
        gz_between = tmp_path / f"between{kept_lines}.jsonl.gz"
        gz_between.write_bytes(cut)
        resumed = evaluate(planner, RANDOM, games=8, seed=3, record_path=gz_between, resume=True)
        assert resumed.resumed_games == 4 and summary_of(resumed) == summary_of(full)
        assert read_records(gz_between) == read_records(full_path)

    # another evaluation's file, a corrupt line before the end, too many games: clear errors, file unchanged
    before = full_path.read_bytes()
    with pytest.raises(ValueError, match="another evaluation"):
        evaluate(RANDOM, RANDOM, games=8, seed=3, record_path=full_path, resume=True)
    with pytest.raises(ValueError, match="another evaluation"):
        evaluate(planner, RANDOM, games=8, seed=4, record_path=full_path, resume=True)
    with pytest.raises(ValueError, match="more than --games 4"):
        evaluate(planner, RANDOM, games=4, seed=3, record_path=full_path, resume=True)
    assert full_path.read_bytes() == before
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_bytes(b"".join(lines[:2]) + b"{oops\n" + b"".join(lines[3:]))
    with pytest.raises(ValueError, match="line 3"):
        evaluate(planner, RANDOM, games=8, seed=3, record_path=corrupt, resume=True)
    # a whole last line (it ends in a newline) that is no record was not cut by a kill: the file is
    # someone's data, refused and kept, not "repaired" by dropping the line
    for text in (b'{"important": "user data"}\n', b"[1, 2]\n", b"".join(lines[:2]) + b"{}\n"):
        other = tmp_path / "other.jsonl"
        other.write_bytes(text)
        with pytest.raises(ValueError, match="not a game record this run can resume from"):
            evaluate(planner, RANDOM, games=8, seed=3, record_path=other, resume=True)
        assert other.read_bytes() == text
    with pytest.raises(ValueError, match="--record"):
        evaluate(planner, RANDOM, games=8, seed=3, resume=True)


def test_a_resumed_evaluation_refuses_records_of_a_checkpoint_replaced_under_the_same_path(tmp_path: Path) -> None:
    """The records name each side's files with their SHA-256 (meta.evaluation.files): a policy file
    replaced by another bot under the same path made other games, so --resume refuses them; agents
    that read no file write no such key."""
    bot = tmp_path / "bot.pt"
    shutil.copyfile(DEFAULT_CHECKPOINT, bot)
    policy = AgentSpec.of("policy", {"checkpoint": str(bot)})
    path = tmp_path / "games.jsonl"
    evaluate(policy, RANDOM, games=2, seed=3, record_path=path)
    digest = hashlib.sha256(bot.read_bytes()).hexdigest()
    metas = [r["meta"]["evaluation"] for r in read_records(path)]
    assert [m["files"] for m in metas] == [{"a": {str(bot): digest}, "b": {}}] * 2
    assert evaluate(policy, RANDOM, games=4, seed=3, record_path=path, resume=True).resumed_games == 2
    before = path.read_bytes()
    shutil.copyfile(DEFAULT_CHECKPOINT.with_name("burako_ppo_2026-12-01.pt"), bot)
    with pytest.raises(ValueError, match=r"record 1: played with other agent files than this run's: .* side\(s\) a "):
        evaluate(policy, RANDOM, games=6, seed=3, record_path=path, resume=True)
    assert path.read_bytes() == before
    # only the bytes count: the same file under another path (another copy of the project) resumes
    shutil.copyfile(DEFAULT_CHECKPOINT, bot)
    path.write_bytes(before.replace(json.dumps(str(bot)).encode(), b'"/elsewhere/bot.pt"'))
    assert b"/elsewhere/bot.pt" in path.read_bytes()
    assert evaluate(policy, RANDOM, games=6, seed=3, record_path=path, resume=True).resumed_games == 4
    # records written before they named their files: which checkpoint played cannot be checked
    old = tmp_path / "old.jsonl"
    records = read_records(path)
    for record in records:
        del record["meta"]["evaluation"]["files"]
    old.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(ValueError, match="record 1: written before records named the SHA-256 of the files"):
        evaluate(policy, RANDOM, games=8, seed=3, record_path=old, resume=True)
    plain = tmp_path / "plain.jsonl"
    evaluate(RANDOM, RANDOM, games=2, seed=3, record_path=plain)
    assert all("files" not in r["meta"]["evaluation"] for r in read_records(plain))


class SideZeroStrong:
    """A deliberately seat-biased agent: in side 0 it melds whenever it can
    (a big edge over random play), elsewhere it plays at random."""

    name = "side0"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.side = -1

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self.side = seat % rules.num_sides(num_players)

    def act(self, observation: Any, view: Any = None) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if self.side == 0:
            melds = legal[legal >= A.MELD_BASE]
            if melds.size:
                legal = melds
        return int(legal[self.rng.integers(legal.size)])


@pytest.mark.parametrize("n", [2, 4])
def test_duplicate_pairing_cancels_seat_bias(n: int) -> None:
    deals = 30
    # non-duplicate: the same agent for A and B, A always on side 0
    naive = 0.0
    for d in range(deals):
        result = play_game(
            [SideZeroStrong(seed=10 * d + s) for s in range(n)], "burako", n, deal_seed(0, d), record=False
        )
        naive += 1.0 if result.winner == 0 else 0.5 if result.winner is None else 0.0
    assert naive / deals > 0.75  # the seat decides, not the agent

    spec = AgentSpec.of("side0", factory=SideZeroStrong)
    ev = evaluate(spec, spec, games=2 * deals, seed=0, num_players=n, keep_records=True)
    s = ev.summary
    assert s.win_rate == 0.5 and s.mean_diff == 0.0  # exactly: each pair cancels
    assert s.win_rate_ci == pytest.approx(wilson_interval(0.5, 2 * deals))  # as wide as its games say
    first, second = s.win_rate_by_seating
    assert first > 0.75 and second < 0.25  # the bias is there in each seating alone
    a_seats = (0, 2) if n == 4 else (0,)
    b_seats = (1, 3) if n == 4 else (1,)
    for o in ev.outcomes:
        assert o.a_seats == (a_seats if o.seating == 0 else b_seats)
        assert [name[0] for name in o.record["agents"]][o.a_seats[0]] == "A"
    by_deal: dict[int, list[int]] = {}
    for o in ev.outcomes:
        by_deal.setdefault(o.deal, []).append(o.diff)
    assert all(sum(diffs) == 0 for diffs in by_deal.values())


def test_evaluation_surfaces_agent_faults() -> None:
    spec = AgentSpec.of("cheater", factory=IllegalAgent)
    with pytest.raises(AgentFault, match=r"evaluation deal 0, seating 0") as info:
        evaluate(spec, RANDOM, games=2, seed=0)
    assert info.value.kind == "illegal" and info.value.agent == "A:cheater"


def test_evaluation_arguments() -> None:
    with pytest.raises(ValueError, match="even"):
        evaluate(RANDOM, RANDOM, games=3)
    with pytest.raises(ValueError, match="two sides"):
        evaluate(RANDOM, RANDOM, games=2, rules="burako_casual", num_players=3)
    assert parse_value("3") == 3 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("none") is None and parse_value("uct") == "uct"
    assert parse_options(["simulations=200", "c=1.4", "mode=fast"], "--a-opt") == {
        "simulations": 200,
        "c": 1.4,
        "mode": "fast",
    }
    with pytest.raises(ValueError, match="key=value"):
        parse_options(["oops"], "--b-opt")
    assert AgentSpec.of("x", {"b": 1, "a": "s"}).label == "x(a='s', b=1)"
    # a text value is stripped as the key and numbers were ("rollout = greedy": "unknown rollout ' greedy'")
    assert parse_options(["rollout = greedy", " simulations = 4"], "--a-opt") == {"rollout": "greedy", "simulations": 4}
    # seed went to the constructor beside each game's seed: "make_agent() got multiple values for 'seed'"
    with pytest.raises(ValueError, match="--a-opt: seed is not an agent option; --seed seeds"):
        parse_options(["seed=5"], "--a-opt")
    with pytest.raises(ValueError, match="ismcts: 'seed' is not an agent option"):
        AgentSpec.of("ismcts", {"seed": 5})
    from training.tournament.config import TournamentConfig, TournamentError

    with pytest.raises(TournamentError, match=r"participants\.0\.options: random: 'seed' is not an agent option"):
        TournamentConfig.from_dict({"participants": [{"agent": "random", "options": {"seed": 3}}, "greedy"]})


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record, summary = tmp_path / "g.jsonl", tmp_path / "s.json"
    argv = ["--a", "random", "--b", "random", "--games", "6", "--seed", "1", "--no-progress"]
    assert main([*argv, "--record", str(record), "--json", str(summary), "--players", "4"]) == 0
    out = capsys.readouterr().out
    assert "A win rate" in out and "mean score A - B" in out and "6" in out
    assert len(read_records(record, verify=True)) == 6
    assert json.loads(summary.read_text())["games"] == 6
    # one deal: the score's interval is no number; the file says null, as strict JSON parsers need (not NaN)
    assert main([*argv[:4], "--games", "2", "--seed", "1", "--no-progress", "--json", str(summary)]) == 0

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    one_deal = json.loads(summary.read_text(), parse_constant=no_constants)
    assert one_deal["games"] == 2 and [None, None] in one_deal.values()
    for bad in (["--games", "5"], ["--a-opt", "nokey"], ["--b", "nobody"], ["--resume"]):
        with pytest.raises(SystemExit) as info:
            main([*argv, *bad])
        assert info.value.code == 2


def test_sigterm_raises_keyboard_interrupt_inside_the_block_only() -> None:
    """training.signals: SIGTERM unwinds like Ctrl-C within the block; the previous handler comes back after it."""
    import os
    import signal
    import time

    from training.signals import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="signal 15"), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at once; never slept through
    assert signal.getsignal(signal.SIGTERM) is before


def _stop_a_running_eval(path: Path, args: list[str], stop: Any) -> tuple[int, str]:
    """Start burako-eval in its own process group (as a terminal's foreground job) recording to
    ``path``, call ``stop(proc)`` once its first game is on disk; its exit status and stderr.

    A foreground job starts with SIGINT at its default action, whatever pytest inherited: run
    from a background job (``cmd &`` in a script, as CI may be) SIGINT is ignored and that would
    pass to the child, which then never hears Ctrl-C (the flaky failure of 2026-12-03)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.evaluate", *args, "--record", str(path), "--no-progress"],
        cwd=root,
        env=child_environment(root),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if path.is_file() and path.stat().st_size > 0:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        assert proc.poll() is None, "the evaluation ended before it could be stopped"
        stop(proc)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def test_a_killed_burako_eval_closes_its_compressed_record_file(tmp_path: Path) -> None:
    """``kill`` (SIGTERM) of a running burako-eval: exit status 130, a message naming --resume,
    and a gzip record file closed whole (it reads without the cut-short error), ready to resume."""
    import signal

    path = tmp_path / "games.jsonl.gz"
    args = ["--a", "random", "--b", "random", "--games", "4000", "--seed", "1", "--workers", "1"]
    code, err = _stop_a_running_eval(path, args, lambda proc: proc.send_signal(signal.SIGTERM))
    assert code == 130, err
    assert "interrupted" in err and "--resume" in err
    records = read_records(path)  # a file cut by the kill would raise RecordError at its end
    assert 0 < len(records) < 4000 and is_gzip(path)


def test_a_killed_rummy_eval_stops_its_workers_and_closes_its_record_file(tmp_path: Path) -> None:
    """``kill`` of burako-eval --game rummy --workers 2: it ended with status 143 (the handler was set
    after the Rummy hand-over), an empty unreadable gzip file, its workers still running, and advice
    to --resume, which Rummy refuses. Now: 130, the file closed whole, no process left."""
    import os
    import signal
    import time

    path = tmp_path / "games.jsonl.gz"
    args = ["--game", "rummy", "--a", "random", "--b", "random", "--games", "4000", "--seed", "1"]
    args += ["--workers", "2", "--chunk-size", "1"]
    group: list[int] = []

    def stop(proc: Any) -> None:
        group.append(proc.pid)
        proc.send_signal(signal.SIGTERM)

    code, err = _stop_a_running_eval(path, args, stop)
    assert code == 130, err
    assert "a Rummy evaluation starts again" in err and "--resume continues" not in err
    assert 0 < len(read_records(path)) < 4000 and is_gzip(path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the workers leave with the parent (its process group)
        try:
            os.killpg(group[0], 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("processes of the stopped evaluation are still running")


def test_ctrl_c_at_a_terminal_stops_a_pool_evaluation_without_worker_tracebacks(tmp_path: Path) -> None:
    """Ctrl-C reaches the terminal's whole process group, pool workers included: the parent's one-line
    message (exit 130) must not come with a KeyboardInterrupt traceback from each worker."""
    import os
    import signal

    args = ["--a", "greedy", "--b", "random", "--games", "2000", "--seed", "1", "--workers", "2", "--chunk-size", "1"]
    code, err = _stop_a_running_eval(tmp_path / "games.jsonl", args, lambda proc: os.killpg(proc.pid, signal.SIGINT))
    assert code == 130, err
    assert "burako-eval: interrupted" in err and "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.mark.parametrize("workers", [1, 2])
def test_the_progress_bar_counts_games_as_they_finish_and_results_stay_in_deal_order(workers: int) -> None:
    """burako-eval's bar hears of every finished deal (``played``) no later than its games
    are handed on in deal order, and of every game exactly once."""
    from training.evaluate import _Task, deal_ordered_results

    rules = load_rules("burako")
    tasks = [_Task(RANDOM, RANDOM, rules, 2, 7, deals, False) for deals in [(0, 1), (2,), (3, 4, 5)]]
    heard: list[int] = []
    handed = 0
    deals: list[int] = []
    for games in deal_ordered_results(tasks, workers, heard.append):
        handed += len(games)
        assert sum(heard) >= handed
        deals.extend(g.deal for g in games[::2])
    assert deals == [0, 1, 2, 3, 4, 5] and sum(heard) == handed == 12
    assert all(n >= 2 and n % 2 == 0 for n in heard)


def test_an_interrupt_in_the_middle_of_a_gzip_write_waits_for_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample_record: dict[str, Any]
) -> None:
    """SIGTERM (as KeyboardInterrupt, burako-eval's ``kill``) arriving inside gzip's write, between
    its compressed bytes and its checksum, must not leave a file that fails its CRC: the writer
    finishes the record and the interrupt comes after it (the CI failure of 2026-12-03)."""
    import signal
    import zlib

    from burako_env.records import RecordWriter
    from training.signals import sigterm_as_interrupt

    path = tmp_path / "games.jsonl.gz"
    real_crc32 = zlib.crc32
    raised: list[int] = []

    def crc32_then_signal(data: Any, value: int = 0) -> int:
        if not raised:  # once: the checksum step of GzipFile.write
            raised.append(1)
            signal.raise_signal(signal.SIGTERM)
        return real_crc32(data, value)

    with sigterm_as_interrupt():
        writer = RecordWriter(path)
        writer.write(sample_record)
        monkeypatch.setattr(zlib, "crc32", crc32_then_signal)
        with pytest.raises(KeyboardInterrupt):
            writer.write(sample_record)
        monkeypatch.setattr(zlib, "crc32", real_crc32)
        writer.close()
    assert raised
    assert read_records(path) == [json.loads(json.dumps(sample_record))] * 2


def test_record_errors_keep_cut_short_and_meta_must_be_json(tmp_path: Path) -> None:
    """A resume reads ``cut_short`` (a compressed file killed between two records): it was lost when the
    error was pickled from a worker or given its line. ``meta`` with NaN or a numpy number passed
    validation and then failed in the writer with a bare error; a line holding NaN was read back."""
    from burako_env.records import RecordWriter, validate_record

    error = RecordError("cut", line=3, cut_short=True)
    assert pickle.loads(pickle.dumps(error)).cut_short and error.at_line(4).cut_short
    assert not pickle.loads(pickle.dumps(RecordError("damaged"))).cut_short
    record = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=3, record=True).record
    assert record is not None
    for meta in ({"x": float("nan")}, {"x": np.int64(3)}, {"x": {"y": [float("inf")]}}):
        bad = {**record, "meta": meta}
        with pytest.raises(RecordError, match="field 'meta': not writable as JSON"):
            validate_record(bad)
        path = tmp_path / "bad.jsonl"
        with pytest.raises(RecordError, match="meta"), RecordWriter(path) as writer:
            writer.write(bad)
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps({**record, "meta": {"x": float("nan")}}) + "\n", encoding="utf-8")
    with pytest.raises(RecordError, match="line 1: not valid JSON: NaN"):
        read_records(path)
