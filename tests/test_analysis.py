"""Analysis frames (records, tournaments, TensorBoard) and pictures of the table (issue 8)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import burako_env
from agents.registry import make_agent
from agents.runner import play_game
from burako_env import actions as A
from burako_env import analysis
from burako_env.graphics import Replay, table_image, table_scene, table_svg
from burako_env.melds import make_run
from burako_env.records import RecordError, replay
from burako_env.scenario import build_state

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def records() -> list[dict]:
    out = []
    for deal in range(4):
        result = play_game(
            [make_agent("planner", seed=deal), make_agent("greedy", seed=9)], "burako", 2, deal_seed=deal
        )
        out.append(result.record)
    return out


def test_games_frame_matches_the_records(records: list[dict]) -> None:
    games = analysis.games_frame(records)
    assert len(games) == 4
    for i, record in enumerate(records):
        row = games.iloc[i]
        final = replay(record)
        assert row["turns"] == record["turns"] and row["actions"] == len(record["actions"])
        assert row["end_reason"] == record["end_reason"]
        assert row["winner"] == (-1 if record["result"]["winner"] is None else record["result"]["winner"])
        for s in range(2):
            if record["hand_scores"] is None:
                assert math.isnan(row[f"s{s}_total"])
            else:
                assert row[f"s{s}_total"] == record["hand_scores"][s]["total"]
                assert row[f"s{s}_canasta_bonus"] == record["hand_scores"][s]["canasta_bonus"]
        for s in range(2):
            assert row[f"s{s}_canastas"] == sum(m.is_canasta for m in final.melds[s])
            assert math.isnan(row[f"s{s}_muerto_turn"]) != bool(final.muerto_taken[s])
    assert set(games["agent_0"]) <= {"planner", "greedy"}


def test_decisions_frame_has_one_row_per_move(records: list[dict]) -> None:
    moves = analysis.decisions_frame(records[:2])
    assert len(moves) == sum(len(r["actions"]) for r in records[:2])
    first = moves[moves["game"] == 0]
    assert first["description"].tolist() == records[0]["descriptions"]
    assert first["action"].tolist() == records[0]["actions"]
    assert first["kind"].tolist() == [A.decode(a)[0] for a in records[0]["actions"]]
    discards = first[first["kind"] == "discard"]
    assert (discards["tile"] != "").all() and (discards["description"].str.startswith("discard ")).all()
    assert (first["legal_actions"] >= 1).all() and (first["hand_size"] >= 0).all()
    assert first["index"].tolist() == list(range(len(first)))


def test_a_tampered_record_is_refused(records: list[dict]) -> None:
    bad = dict(records[0])
    bad["actions"] = [*bad["actions"][:5], 0, *bad["actions"][6:]]
    with pytest.raises(RecordError):
        analysis.games_frame([bad])


def test_tournament_frames_and_crosstable_matrix() -> None:
    """docs/tournament is a complete run of configs/tournament.yaml's games: every
    agent the config lists (so every agent the project ships) is on the leaderboard."""
    from training.tournament import load_config

    folder = ROOT / "docs" / "tournament"
    shipped = load_config(ROOT / "configs" / "tournament.yaml")
    published = load_config(folder / "config.yaml")
    assert published.game_fingerprint() == shipped.game_fingerprint()
    frames = analysis.tournament_frames(folder)
    board, cross = frames["leaderboard"], frames["crosstable"]
    names = [p.name for p in shipped.participants]
    assert sorted(board["name"]) == sorted(names) and len(names) == 7
    matrix = analysis.crosstable_matrix(cross)
    assert matrix.shape == (7, 7) and np.isnan(np.diag(matrix.to_numpy(dtype=float))).all()
    assert math.isclose(matrix.loc["planner", "greedy"] + matrix.loc["greedy", "planner"], 1.0)
    pairings = len(names) * (len(names) - 1) // 2
    assert len(frames["results"]) == pairings * published.games_per_pairing
    games = f"games played: {pairings * published.games_per_pairing} of {pairings * published.games_per_pairing}"
    assert games in (folder / "leaderboard.md").read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="burako-tournament folder"):
        analysis.tournament_frames(ROOT / "docs")


def test_the_shipped_bots_gauntlet_is_a_complete_run_against_the_main_tournaments_field() -> None:
    """docs/tournament/shipped_bot is configs/tournament_shipped_bot.yaml's complete run; its field is
    configs/tournament.yaml's participants under the same names and settings, and its challenger is the
    bot shipped now, so the published games are never read as another bot's (replay them when
    ``burako_ppo.pt`` changes)."""
    import hashlib
    import json

    from training.tournament import load_config

    folder = ROOT / "docs" / "tournament" / "shipped_bot"
    shipped = load_config(ROOT / "configs" / "tournament_shipped_bot.yaml")
    assert load_config(folder / "config.yaml").game_fingerprint() == shipped.game_fingerprint()
    main_field = {p.name: p for p in load_config(ROOT / "configs" / "tournament.yaml").participants}
    field = {p.name: p for p in shipped.participants if p.name not in shipped.challengers}
    assert field == main_field and shipped.challengers == ("shipped_bot",)
    frames = analysis.tournament_frames(folder)
    assert len(frames["results"]) == len(field) * shipped.games_per_pairing
    assert set(frames["results"]["a"]) == {"shipped_bot"} and set(frames["results"]["b"]) == set(field)
    path = "agents/checkpoints/burako_ppo.pt"
    digests = json.loads((folder / "agent_files.json").read_text(encoding="utf-8"))
    assert digests["shipped_bot"] == {path: hashlib.sha256((ROOT / path).read_bytes()).hexdigest()}


def test_tensorboard_scalars_reads_back_what_was_written(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(5):
        writer.add_scalar("charts/x", step * 0.5, step)
    writer.add_scalar("eval/y", 0.75, 3)
    writer.close()
    frame = analysis.tensorboard_scalars(tmp_path)
    x = frame[frame["tag"] == "charts/x"]
    assert x["step"].tolist() == [0, 1, 2, 3, 4] and x["value"].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert frame[frame["tag"] == "eval/y"]["value"].tolist() == [0.75]
    with pytest.raises(FileNotFoundError, match="no TensorBoard event file"):
        analysis.tensorboard_scalars(tmp_path / "nothing")
    # one tag as a string was read letter by letter ("Key c was not found in Reservoir")
    assert analysis.tensorboard_scalars(tmp_path, tags="eval/y")["value"].tolist() == [0.75]
    with pytest.raises(KeyError, match=r"has no scalar \['eval/z'\]; its scalars: \['charts/x', 'eval/y'\]"):
        analysis.tensorboard_scalars(tmp_path, tags=["eval/z"])


def test_games_frame_names_the_mano_takes_one_record_and_names_a_record_that_does_not_replay(
    records: list[dict],
) -> None:
    """Notebook 02 split win rates by seat as if seat 0 moved first: the mano is drawn for each deal and
    the frame did not carry it. One record (a play_game result's .record) was read key by key (an
    AttributeError), and a record that does not replay raised an error naming no record."""
    games = analysis.games_frame(records)
    moves = analysis.decisions_frame(records)
    first = moves[moves["index"] == 0].set_index("game")["seat"]
    assert (games["mano"] == first.reindex(games["game"]).to_numpy()).all()
    assert (games["mano_side"] == [r["sides"][r["mano"]] for r in records]).all()
    single = analysis.games_frame(records[1])
    assert len(single) == 1 and single.iloc[0]["deal_seed"] == records[1]["deal_seed"]
    assert single.iloc[0]["winner"] == games.iloc[1]["winner"] and single.iloc[0]["mano"] == games.iloc[1]["mano"]
    broken = [records[0], {**records[1], "actions": records[1]["actions"][::-1]}]
    with pytest.raises(RecordError, match=r"line 2"):
        analysis.games_frame(broken)


def test_rummy_games_frame_scores_a_tie_at_zero_as_a_draw(tmp_path: Path) -> None:
    """R10, R11f: the lowest hand total wins and a tie is a draw (burako-eval and the tournament count it
    0.5). games_frame named the closer alone, also when the other player had emptied his hand too; deal
    0 of seed 1 between two random players is such a hand (both seatings)."""
    from training.rummy_evaluate import evaluate_rummy

    path = tmp_path / "rummy.jsonl"
    evaluate_rummy("random", "random", 1, seed=1, record_path=str(path))
    games = analysis.games_frame(path)
    low = games[["total_0", "total_1"]].min(axis=1)
    by_totals = np.where(
        games["total_0"].eq(low) & games["total_1"].eq(low), -1, np.where(games["total_0"].eq(low), 0, 1)
    )
    assert (games["winner"].to_numpy() == by_totals).all()
    tied = games[games["winner"] == -1]
    assert len(tied) >= 1 and (tied["closer"] >= 0).all() and (tied["winner_agent"] == "").all()


def test_rate_with_ci() -> None:
    import pandas as pd

    mean, low, high = analysis.rate_with_ci(pd.Series([1, 0, 1, 1]))
    assert mean == 0.75 and low < 0.75 < high


# ---------------------------------------------------------------------- pictures
def test_rgb_array_render_is_an_image_of_the_table() -> None:
    env = burako_env.env(num_players=2, render_mode="rgb_array")
    env.reset(seed=1)
    image = env.render()
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    obs, *_ = env.last()
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert not np.array_equal(env.render()[: image.shape[0]], image)  # the picture follows the game


def test_the_scene_shows_melds_canastas_pile_and_hands() -> None:
    state = build_state(
        hands={0: "R5 R6 K9", 1: "B1"},
        melds={0: [make_run(1, 1, 7)], 1: [make_run(3, 3, 5)]},  # red 1-7 (a clean canasta), yellow 3-5
        pile="K2 B7",
    )
    svg = table_svg(state)
    # tiles drawn: 3 + 1 in hands, 7 + 3 in melds, 2 in the pile
    assert svg.count('fill="#fffbea"') == 3 + 1 + 7 + 3 + 2
    assert "canasta" in svg and "#f2c230" in svg  # clean canasta, gold frame
    assert "discard pile (2" in svg
    hidden = table_scene(state, viewer=0, reveal=False)
    assert sum(1 for item in hidden.items if getattr(item, "fill", None) == "#3f5f8f") == 1  # player_1's tile face down
    cards = build_state(hands={0: "R5", 1: "K13"}, rules="buraco_cards")  # 5 of hearts, king of spades
    assert re.search(r">5♥<", table_svg(cards)) and table_image(cards).shape[2] == 3


def test_replay_steps_through_every_position(records: list[dict]) -> None:
    replay = Replay(records[0])
    assert len(replay) == len(records[0]["actions"]) + 1
    assert replay.captions[1].startswith("move 1: player_")
    html = replay.html(range(5))
    assert html.count('class="frame"') == 5 and html.count("<svg") == 5
    assert replay.frame(len(replay) - 1).shape[2] == 3


def test_a_learning_curve_is_drawn_in_step_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows given out of order (a caller's own list) drew a line that went back and forth."""
    from matplotlib.figure import Figure

    from training.curves import plot_learning_curve

    drawn: list[Figure] = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: drawn.append(fig) or real(fig, *a, **k))
    point = {"win_rate": 0.5, "low": 0.4, "high": 0.6}
    history = [{"step": s, "update": s, "planner": point} for s in (300, 100, 200)]
    plot_learning_curve(history, tmp_path / "curve.png")
    (line,) = [line for line in drawn[0].axes[0].get_lines() if len(line.get_xdata()) == 3]
    assert list(line.get_xdata()) == [100, 200, 300]
