"""Records carry their game (Burako records without the field still read as Burako), and Rummy hands
record and replay exactly (E4); the Rummy duplicate evaluation's pairing cancels with itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.random_agent import RandomAgent
from agents.rummy_runner import play_rummy_hand
from agents.runner import AgentFault, play_game
from burako_env.records import RecordError, game_of, read_records, replay, replay_steps, write_records
from burako_env.rummy.engine import Phase, RummyState
from training.rummy_evaluate import evaluate_rummy


def rummy_record(seed: int = 3, players: int = 3) -> dict:
    agents = [RandomAgent(seed=seat) for seat in range(players)]
    return play_rummy_hand(agents, "rummy", players, deal_seed=seed).record


def test_e4_rummy_record_replays_exactly(tmp_path) -> None:
    """E4: the recorded actions on the recorded deal give the same hand: every description, the turns,
    the end, the totals (R10), the winners and rewards; byte-identical through a file."""
    record = rummy_record()
    assert record["game"] == "rummy" and game_of(record) == "rummy"
    path = tmp_path / "rummy.jsonl"
    write_records(path, [record])
    (again,) = read_records(path, verify=True)
    assert again == json.loads(json.dumps(record))
    final = replay(again)
    assert isinstance(final, RummyState) and final.phase != Phase.PLAY
    assert final.hand_scores == record["hand_scores"] and final.turns == record["turns"]
    # the same deal and actions on a fresh engine reach the same final state, byte for byte
    state = RummyState.new_game(np.random.default_rng(record["deal_seed"]), "rummy", record["num_players"])
    for action in record["actions"]:
        state.step(action)
    assert state.to_json() == final.to_json()
    steps = list(replay_steps(record))
    assert len(steps) == len(record["actions"]) + 1 and steps[-1].state.to_json() == final.to_json()


def test_e4_tampered_rummy_record_does_not_replay() -> None:
    record = rummy_record()
    wrong = dict(record, hand_scores=[s + 1 for s in record["hand_scores"]])
    with pytest.raises(RecordError, match="hand_scores"):
        replay(wrong)
    cut = dict(record, actions=record["actions"][:-1], descriptions=record["descriptions"][:-1])
    with pytest.raises(RecordError, match="not over"):
        replay(cut)
    with pytest.raises(RecordError, match="starter"):
        replay(dict(record, starter=(record["starter"] + 1) % record["num_players"]))
    with pytest.raises(RecordError, match="unknown game"):
        replay(dict(record, game="chess"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rewards": None}, "rewards must be a list of 3 finite numbers, got None"),
        ({"rewards": ["x", "y", "z"]}, "rewards must be a list of 3 finite numbers"),
        ({"rewards": ["-0.1", 0.0, 0.1]}, "rewards must be a list of 3 finite numbers"),
        ({"closer": True}, "closer must be null or a seat 0..2, got True"),
        ({"winners": [0, 0]}, "winners must be a list of distinct seats 0..2"),
    ],
)
def test_a_rummy_records_result_is_checked_field_by_field(change: dict, message: str) -> None:
    """result's contents were not checked: rewards=None was a bare TypeError (read_records lost the line
    number), string rewards and closer=True were accepted."""
    record = rummy_record()
    with pytest.raises(RecordError, match=message):
        replay(dict(record, result={**record["result"], **change}))


def test_burako_records_with_and_without_the_game_field() -> None:
    """New Burako records say game="burako"; a record written before the field (none) is Burako."""
    record = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], "burako", 2, deal_seed=5).record
    assert record["game"] == "burako"
    old = {k: v for k, v in record.items() if k != "game"}
    assert game_of(old) == "burako"
    assert replay(old).to_json() == replay(record).to_json()


def test_rummy_runner_rejects_an_illegal_answer() -> None:
    class Cheater(RandomAgent):
        def act(self, observation, view=None):
            return int(np.flatnonzero(observation["action_mask"] == 0)[0])

    with pytest.raises(AgentFault, match="illegal"):
        play_rummy_hand([Cheater(seed=0), RandomAgent(seed=1)], "rummy", 2, deal_seed=0)


def test_rummy_duplicate_evaluation_of_an_agent_against_itself_is_even() -> None:
    """Same agent on both sides, same seeds per seat: each deal's two games are the same game with the
    seats' names swapped, so every pair scores exactly 0.5 and the score difference is 0."""
    summary = evaluate_rummy("random", "random", deals=3, seed=1)
    assert summary.games == 6 and summary.win_rate == 0.5 and summary.mean_diff == 0.0
