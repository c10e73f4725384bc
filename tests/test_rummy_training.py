"""burako-train on Rummy (issue 17, item 5): the smoke config end to end through
the command line, checkpoints that record the game, the rummy-policy agent,
masked sampling over Rummy's exact mask, per-seat credit (R10: the lower hand
total wins), resume, and checkpoints of the other game refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import kill_after_first_checkpoint

from agents import checkpoint as ckpt
from agents.network import NetworkShape, PolicyNet
from agents.policy import DEFAULT_CHECKPOINT, PolicyAgent
from agents.random_agent import RandomAgent
from agents.registry import make_agent
from agents.rummy_policy import RummyPolicyAgent
from agents.rummy_runner import play_rummy_hand
from burako_env.rummy.actions import NUM_ACTIONS
from burako_env.rummy.engine import RummyState
from burako_env.rummy.observation import OBSERVATION_SIZE, OFFSETS, encode, layout_id
from burako_env.rummy.rules import load_rummy_rules
from training import evaluate as evaluate_cli
from training.league import SELF
from training.network import evaluate_actions, sample_actions
from training.ppo import PPOConfig, Trainer, load_config, main
from training.rummy_rollout import rummy_hand_reward, rummy_results

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "ppo_rummy_smoke.yaml"


def smoke_config(tmp_path: Path, **overrides: object) -> PPOConfig:
    values = {**load_config(SMOKE).to_dict(), "run_root": str(tmp_path), "bc_teacher": None, "eval_games": 4}
    values.update(overrides)
    return PPOConfig(**values)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """One short run of the smoke config through the command line: (run folder, exported policy, stdout)."""
    root = tmp_path_factory.mktemp("rummy_runs")
    export = root / "rummy_bot.pt"
    args = ["--config", str(SMOKE), "--seed", "2", "--set", f"run_root={root}", "--set", "total_steps=600"]
    args += ["--set", "bc_games=4"]
    args += ["--set", "eval_games=4", "--export", str(export), "--no-progress"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    (run_dir,) = root.glob("rummy2p__ppo_rummy_smoke__2__*")  # --seed 2
    return run_dir, export, out.getvalue()


# ---------------------------------------------------------------------- end to end
def test_the_rummy_smoke_config_trains_through_the_command_line(trained: tuple[Path, Path, str]) -> None:
    """A few PPO updates on Rummy (cloning warm start, league, evaluation), then checkpoints and a policy."""
    run_dir, export, out = trained
    assert f"policy: {export}" in out and "rummy-heuristic" in out and "random" in out
    saved = ckpt.load(run_dir / "checkpoints" / "latest.pt")
    assert (saved["config"]["game"], saved["config"]["rules"], saved["config"]["seed"]) == ("rummy", "rummy", 2)
    assert saved["rules"] == load_rummy_rules("rummy").to_dict()
    shape = NetworkShape(**saved["policy"]["shape"])
    assert (shape.game, shape.layout, shape.obs_size, shape.num_actions) == (
        "rummy",
        layout_id(),
        OBSERVATION_SIZE,
        NUM_ACTIONS,
    )
    trainer = saved["trainer"]
    assert trainer["update"] >= 2 and trainer["global_step"] >= 600 and trainer["bc_done"]
    assert (run_dir / "policy.pt").is_file() and (run_dir / "learning_curve.png").is_file()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("charts/SPS", "charts/episodic_return", "losses/policy_loss", "losses/approx_kl", "bc/loss",
                "eval/winrate_vs_rummy-heuristic", "eval/winrate_vs_random", "league/size",
                "rollout/baselines_share", "rollout/env_share"):  # fmt: skip
        assert tag in tags, tag


def test_the_exported_policy_plays_as_rummy_policy_and_in_burako_eval(
    trained: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, export, _ = trained
    agent = make_agent("rummy-policy", seed=0, checkpoint=str(export))
    assert isinstance(agent, RummyPolicyAgent) and agent.net.shape.game == "rummy"
    for players in (2, 3):  # one layout for 2 to 4 players
        agents = [agent] + [RandomAgent(seed=s) for s in range(1, players)]
        result = play_rummy_hand(agents, "rummy", players, deal_seed=5, record=False)
        assert result.num_actions > 0 and len(result.hand_scores) == players
    args = ["--game", "rummy", "--a", "rummy-policy", "--a-opt", f"checkpoint={export}", "--b", "random"]
    assert evaluate_cli.main([*args, "--games", "2", "--seed", "3"]) == 0
    assert "rummy-policy" in capsys.readouterr().out


def test_a_rummy_run_resumes_from_its_checkpoint(trained: tuple[Path, Path, str], tmp_path: Path) -> None:
    """--resume continues from the saved update and step, in the same folder, with the same weights."""
    run_dir, _, _ = trained
    saved = ckpt.load(run_dir / "checkpoints" / "latest.pt")
    step, update = saved["trainer"]["global_step"], saved["trainer"]["update"]
    config = load_config(None, [f"total_steps={step + 100}", "eval_every=0"], base=saved["config"])
    resumed = Trainer(config, resume=run_dir, progress=False)
    assert (resumed.run_dir, resumed.global_step, resumed.update) == (run_dir, step, update)
    for name, tensor in resumed.net.state_dict().items():
        assert torch.equal(tensor.cpu(), saved["policy"]["state_dict"][name])
    resumed.train()
    assert resumed.update == update + 1
    assert ckpt.load(run_dir / "checkpoints" / "latest.pt")["trainer"]["update"] == update + 1


# ---------------------------------------------------------------------- the other game's checkpoints
def test_a_checkpoint_of_the_other_game_is_refused_clearly(trained: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, export, _ = trained
    with pytest.raises(ckpt.CheckpointError, match=r"is a rummy policy.*'policy' agent plays burako.*'rummy-policy'"):
        PolicyAgent(checkpoint=str(export))
    with pytest.raises(ckpt.CheckpointError, match=r"is a burako policy.*'rummy-policy' agent plays rummy.*'policy'"):
        RummyPolicyAgent(checkpoint=str(DEFAULT_CHECKPOINT))
    with pytest.raises(ValueError, match="rummy-policy needs checkpoint=PATH"):
        RummyPolicyAgent()
    # a Burako run cannot resume from a Rummy run's checkpoint (and the reverse)
    run_dir = trained[0]
    burako = PPOConfig(game="burako", run_root=str(tmp_path), league_baselines=["random"], eval_opponents=["random"])
    with pytest.raises(ckpt.CheckpointError, match="is a rummy run; this config trains burako"):
        Trainer(burako, resume=run_dir, progress=False)


def test_the_burako_checkpoint_from_before_rummy_still_loads_and_plays() -> None:
    """Shapes stored before Rummy have no game: they are Burako's (the bot shipped until 2026-12-05)."""
    before_rummy = DEFAULT_CHECKPOINT.with_name("burako_ppo_2026-12-01.pt")
    assert "game" not in torch.load(before_rummy, weights_only=True)["policy"]["shape"]
    agent = make_agent("policy", seed=0, checkpoint=str(before_rummy))
    assert agent.net.shape.game == "burako" and agent.net.policy_head.out_features == 3519
    assert agent.net.input_scale is None  # Burako's inputs are read as they are
    agent.reset(0, "burako", 2)


# ---------------------------------------------------------------------- configuration
def test_the_game_comes_from_the_config_or_its_rules_preset() -> None:
    assert load_config(SMOKE).game == "rummy" and load_config(SMOKE).rollout == "engine"
    by_preset = PPOConfig(rules="rummy", league_baselines=["random"], eval_opponents=["random"])
    assert (by_preset.game, by_preset.rules, by_preset.rollout) == ("rummy", "rummy", "engine")
    default = PPOConfig()
    assert (default.game, default.rules, default.rollout) == ("burako", "burako", "vector")
    with pytest.raises(ValueError, match=r"league_baselines: agent 'planner' plays burako only, not rummy"):
        load_config(SMOKE, ["league_baselines=[planner]"])
    with pytest.raises(ValueError, match=r"bc_teacher: agent 'rummy-heuristic' plays rummy only, not burako"):
        PPOConfig(bc_teacher="rummy-heuristic")
    with pytest.raises(ValueError, match="rummy has no batched compiled core"):
        load_config(SMOKE, ["rollout=vector"])
    with pytest.raises(ValueError, match="is a Burako preset, not Rummy's"):
        load_config(SMOKE, ["rules=burako"])
    with pytest.raises(ValueError, match="game must be one of"):
        load_config(SMOKE, ["game=chess"])
    with pytest.raises(ValueError, match="num_players must be 2 to 4 for rummy"):
        load_config(SMOKE, ["num_players=5"])


# ---------------------------------------------------------------------- masking and credit
def test_masked_sampling_on_rummy_masks_is_always_legal() -> None:
    """E3 for the learner: actions sampled over Rummy's exact masks are legal, on real states."""
    torch.manual_seed(0)
    rules = load_rummy_rules("rummy")
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=32), rules)
    rng = np.random.default_rng(0)
    observations, masks = [], []
    state = RummyState.new_game(rng, rules, 2)
    while len(masks) < 300:
        if state.hand_over:
            state = RummyState.new_game(rng, rules, 2)
        mask = state.legal_mask().astype(bool)
        observations.append(encode(state, state.current))
        masks.append(mask)
        state.step(int(rng.choice(np.flatnonzero(mask))))
    obs = torch.from_numpy(np.stack(observations))
    mask = torch.from_numpy(np.stack(masks))
    # counts such as the stock size (up to 77) reach the torso scaled near 1; the scales are in the layout id
    assert net.input_scale[OFFSETS["stock_size"]].item() == pytest.approx(1 / 77) and "stock_size[1]/77" in layout_id()
    for _ in range(20):
        actions, logp, _ = sample_actions(net, obs, mask)
        assert bool(mask[torch.arange(len(masks)), actions].all()) and torch.isfinite(logp).all()
    logp2, entropy, _ = evaluate_actions(net, obs, mask, actions)
    assert torch.allclose(logp, logp2, atol=1e-5)
    assert bool((entropy <= torch.log(mask.sum(1).float()) + 1e-4).all())


def test_rummy_reward_is_each_seats_own_result_lower_total_wins() -> None:
    """R10: the closer has 0, the lower total wins; Burako's blend of win sign and score difference."""
    assert rummy_results([0, 37]) == [37.0, -37.0]
    assert rummy_hand_reward([0, 37], 0, 0.5, 1.0, 100.0) == pytest.approx(0.5 + 0.37)
    assert rummy_hand_reward([0, 37], 1, 0.5, 1.0, 100.0) == pytest.approx(-0.5 - 0.37)
    assert rummy_hand_reward([12, 12], 0, 0.5, 1.0, 100.0) == 0.0  # a blocked hand's tie
    # 3 players: each against the mean of the others (zero-sum)
    assert rummy_results([0, 20, 40]) == [30.0, 0.0, -30.0]
    assert rummy_hand_reward([0, 20, 40], 1, 0.5, 1.0, 100.0) == 0.0
    assert rummy_hand_reward([0, 20, 40], 2, 1.0, 0.0, 100.0) == -1.0


@pytest.mark.parametrize("players", [2, 3])
def test_rollout_credits_each_learner_seat_with_its_own_result(tmp_path: Path, players: int) -> None:
    """Self-play hands store every seat that decided, rewards summing to zero; hands against a
    baseline store only the learner's one seat. Every move of the rollout was legal."""
    cfg = smoke_config(tmp_path, num_players=players, win_weight=0.0, score_weight=1.0, num_envs=6, batch_size=150)
    trainer = Trainer(cfg, progress=False)
    trainer.league.self_play_fraction = 0.5
    rollout = trainer.rollout
    rollout.trace = []
    episodes = trainer.collect()
    for _, seat, action, mask, _ in rollout.trace:
        assert 0 <= seat < players and mask[action] == 1
    by_hand: dict[int, list] = {}
    for ep in episodes:
        by_hand.setdefault(ep.hand, []).append(ep)
        assert bool(ep.masks[np.arange(ep.actions.size), ep.actions].all())
    kinds = set()
    for hand in by_hand.values():
        kinds.add(hand[0].opponent == SELF)
        seats = [ep.seat for ep in hand]
        assert len(seats) == len(set(seats))
        if hand[0].opponent == SELF:
            if len(seats) == players:  # with score_weight only, the rewards are the zero-sum results
                assert sum(ep.reward for ep in hand) == pytest.approx(0.0, abs=1e-9)
        else:
            assert len(seats) == 1
    assert kinds == {True, False}


# ---------------------------------------------------------------------- resume after a kill
def test_a_killed_rummy_run_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    """SIGKILL mid-run, then --resume: the run continues from checkpoints/latest.pt, in the same folder.
    (About 17 s here: a subprocess's torch start-up, then updates of 150 decisions.)"""
    args = ["--config", str(SMOKE), "--set", f"run_root={tmp_path}", "--set", "bc_teacher=null"]
    args += ["--set", "total_steps=100000", "--set", "batch_size=150", "--set", "eval_every=0", "--no-progress"]
    latest = kill_after_first_checkpoint(args, tmp_path)
    data = ckpt.load(latest)
    saved = data["trainer"]
    run_dir = latest.parent.parent
    config = load_config(None, [f"total_steps={saved['global_step'] + 150}"], base=data["config"])
    resumed = Trainer(config, resume=run_dir, progress=False)
    assert (resumed.update, resumed.global_step, resumed.run_dir) == (saved["update"], saved["global_step"], run_dir)
    resumed.train()
    assert ckpt.load(run_dir / "checkpoints" / "latest.pt")["trainer"]["update"] == saved["update"] + 1
