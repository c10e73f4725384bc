"""Hostile but fair input gets a clear, bounded error (issue 14, items 4, 5 and 8):
YAML alias bombs, self-referencing presets, files that are not UTF-8, values
of the wrong type or out of range, and calls made in the wrong state."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

import burako_env
from burako_env.engine import GameState
from burako_env.records import RecordError, read_records
from burako_env.rules import RulesError, load_rules
from burako_env.safe_yaml import MAX_YAML_NODES, load_yaml
from burako_env.vector import BurakoVectorEnv, sample_legal_actions


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs" as one flow value: each level lists the previous one ``width`` times (9**9 strings)."""
    parts = ['&a0 ["lol"]']
    for k in range(1, levels + 1):
        parts.append(f"&a{k} [{', '.join([f'*a{k - 1}'] * width)}]")
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize("where", ["max_turns", "source", "tile_values", "hand_size"])
def test_yaml_alias_bomb_is_refused_within_a_second(tmp_path: Path, where: str) -> None:
    """The bomb as a typed field's value, or in ``source``: refused, fast, with a short message
    (before: minutes of expansion while the message's repr() or the hash walked it)."""
    path = tmp_path / "bomb.yaml"
    path.write_text(f"preset: burako\n{where}: {alias_bomb()}\n", encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(RulesError) as info:
        load_rules(path)
    seconds = time.perf_counter() - start
    assert seconds < 1.0, f"refusing the alias bomb took {seconds:.2f} s"
    assert "alias" in str(info.value) and str(path) in str(info.value)
    assert len(str(info.value)) < 500


def test_yaml_limits_recursive_aliases_depth_and_size() -> None:
    with pytest.raises(ValueError, match="recursive YAML alias"):
        load_yaml("a: &x [1, *x]\n", "t.yaml")
    with pytest.raises(ValueError, match="nested too deeply"):
        load_yaml("[" * 2_000, "t.yaml")
    with pytest.raises(ValueError, match="at most"):
        load_yaml("x: " + "a" * 300_000, "t.yaml")
    # a document just under the limit, shared through aliases, still loads
    assert len(load_yaml("a: &x [" + ", ".join(["1"] * 99) + "]\nb: [*x, *x]\n", "t.yaml")["b"]) == 2
    assert MAX_YAML_NODES >= 1000


def test_long_or_multiline_source_and_name_are_refused() -> None:
    with pytest.raises(RulesError, match="'source'"):
        load_rules("burako", {"source": "x" * 10_000})
    with pytest.raises(RulesError, match="'source'"):
        load_rules("burako", {"source": ["a", "b"]})
    with pytest.raises(RulesError, match="'name'"):
        load_rules("burako", {"name": "two\nlines"})


def test_preset_naming_its_own_file_is_a_clear_error(tmp_path: Path) -> None:
    own = tmp_path / "own.yaml"
    own.write_text(f"preset: {own}\nmax_turns: 50\n", encoding="utf-8")
    with pytest.raises(RulesError, match="leads back to a file being loaded"):
        load_rules(own)
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(f"preset: {b}\n", encoding="utf-8")
    b.write_text(f"preset: {a}\n", encoding="utf-8")
    with pytest.raises(RulesError, match=r"a\.yaml -> .*b\.yaml -> .*a\.yaml"):
        load_rules(a)
    # a chain without a cycle still works, and the loader is usable afterwards
    b.write_text("preset: burako\ntarget: 1500\n", encoding="utf-8")
    assert load_rules(a).target == 1500


def test_non_utf8_rules_and_record_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: se\xf1or\n".encode("latin-1"))
    with pytest.raises(RulesError, match=r"latin1\.yaml.*not UTF-8"):
        load_rules(path)
    records = tmp_path / "games.jsonl"
    records.write_bytes(b'{"a": 1}\n'.replace(b"1", b"\xff"))
    with pytest.raises(RecordError, match=r"line 1.*not UTF-8"):
        read_records(records)


def test_out_of_range_and_wrongly_typed_rule_values(tmp_path: Path) -> None:
    for overrides, field in (
        ({"max_turns": 10**30}, "max_turns"),
        ({"max_turns": 1e30}, "max_turns"),
        ({"max_turns": "1e30"}, "max_turns"),
    ):
        with pytest.raises(RulesError, match=f"'{field}'"):
            load_rules("burako", overrides)
    path = tmp_path / "big.yaml"
    path.write_text("preset: burako\nmax_turns: 1e30\n", encoding="utf-8")
    with pytest.raises(RulesError, match="'max_turns': expected an integer"):
        load_rules(path)
    with pytest.raises(RulesError, match="rule overrides must be a mapping"):
        load_rules("burako", "max_turns")  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [burako_env.raw_env, lambda **kw: BurakoVectorEnv(2, **kw)])
def test_env_arguments_are_refused_not_coerced(make) -> None:
    with pytest.raises(RulesError, match="rule_overrides must be a dict"):
        make(rule_overrides="max_turns")
    for scale in (math.nan, math.inf, "fast", 0, True):
        with pytest.raises(ValueError, match="reward_scale must be a positive finite number"):
            make(reward_scale=scale)
    for players in (2.7, "4", 2.0, True):
        with pytest.raises(RulesError, match="num_players must be an integer"):
            make(num_players=players)


def test_reset_seed_must_be_an_integer() -> None:
    env = burako_env.raw_env()
    for seed in (1.5, "3", -1, True):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            env.reset(seed=seed)
    venv = BurakoVectorEnv(2)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        venv.reset(seed=1.5)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        venv.reset(seed=[0, 2.5])
    env.reset(seed=np.int64(3))  # numpy integers are integers


def test_raw_env_step_before_reset_and_after_the_game_is_over() -> None:
    env = burako_env.raw_env()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        obs, _r, term, trunc, _info = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert agent
    with pytest.raises(RuntimeError, match=r"the game is over.*reset"):
        env.step(0)


@pytest.mark.parametrize("make", ["env", "raw_env", "rummy_env", "rummy_raw_env"])
def test_last_after_the_game_is_over_says_so(make: str) -> None:
    """``last()`` once every agent is done was PettingZoo's bare ``KeyError: 'player_0'`` (the agent's
    entries are gone); now the same RuntimeError as ``step()``, wrapped or raw, Burako or Rummy. Before
    the first reset it still fails, and ``last()`` during the game is untouched."""
    env = getattr(burako_env, make)()
    with pytest.raises(AttributeError, match="agent_selection"):
        env.last()
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    seen = 0
    for _agent in env.agent_iter():
        obs, _r, term, trunc, _info = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        seen += 1
    assert seen > 10 and not env.agents
    for observe in (True, False):
        with pytest.raises(RuntimeError, match=r"last\(\): the game is over.*reset"):
            env.last(observe)
    env.reset(seed=2)
    assert env.last()[2:4] == (False, False)


def test_match_infos_do_not_keep_the_last_hands_summary() -> None:
    """match=True: each agent sees the finished hand's summary once, at its next turn; not for the whole next hand."""
    env = burako_env.raw_env(match=True, rule_overrides={"target": 5000})
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    seen_after: dict[str, int] = {}
    hands_finished = 0
    for agent in env.agent_iter(max_iter=20_000):
        obs, _r, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        if info.get("hand_over"):
            seen_after[agent] = seen_after.get(agent, 0) + 1
            assert info["hand_number"] == env.game.hand_number - 1
        hand = env.game.hand_number
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if env.game.hand_number != hand:
            hands_finished += 1
        if hands_finished >= 2:
            break
    assert hands_finished >= 1
    # each agent saw each finished hand's summary exactly once
    assert all(count <= hands_finished for count in seen_after.values()), seen_after


def test_sample_legal_actions_refuses_a_row_without_legal_actions() -> None:
    masks = np.zeros((3, burako_env.NUM_ACTIONS), dtype=np.int8)
    masks[0, 5] = masks[2, 7] = 1
    with pytest.raises(ValueError, match=r"1 mask row\(s\) have no legal action \(rows \[1\]"):
        sample_legal_actions(masks, np.random.default_rng(0))
    masks[1, 9] = 1
    assert sample_legal_actions(masks, np.random.default_rng(0)).tolist() == [5, 9, 7]


# ---------------------------------------------------------------------- item 5: config values and checkpoints
SMOKE = Path(__file__).resolve().parent.parent / "configs" / "ppo_smoke.yaml"


def test_training_set_values_are_checked_against_the_field_types(capsys: pytest.CaptureFixture[str]) -> None:
    from training.ppo import load_config, main

    cfg = load_config(SMOKE, ["learning_rate=1e-3", "ent_coef=1e-2", "total_steps=1e4", "target_kl=2e-2"])
    assert (cfg.learning_rate, cfg.ent_coef, cfg.total_steps, cfg.target_kl) == (0.001, 0.01, 10_000, 0.02)
    assert isinstance(cfg.total_steps, int) and isinstance(cfg.learning_rate, float)
    for assignment, message in (
        ("total_steps=abc", "total_steps: expected an integer, got the text 'abc'"),
        ("learning_rate=fast", "learning_rate: expected a number, got the text 'fast'"),
        ("num_envs=2.5", "num_envs: expected an integer, got 2.5"),
        ("anneal_lr=1", "anneal_lr: expected true or false"),
        ("ent_coef=nan", "ent_coef: expected a finite number"),
        ("league_baselines=planner", "league_baselines: expected a list"),
        ("eval_opponents=[planner, nobody]", "unknown agent"),
        ("learning_rate=-1e-3", "learning_rate must be > 0"),
        ("gamma=1.5", r"gamma must be in \[0, 1\]"),
        ("max_updates=0", "max_updates must be > 0 or null, got 0"),
        ("exp_name=../../etc", "exp_name must be"),
        # found in review (2026-12-05): each was taken, then changed the run silently or failed late
        ("league_baselines=[planner, planner]", r"league_baselines: \['planner'\] listed more than once"),
        ("eval_opponents=[planner, planner]", "eval_opponents: .* listed more than once"),
        ("env_threads=1000", "env_threads 1000 is more than numba's"),
    ):
        with pytest.raises(ValueError, match=message):
            load_config(SMOKE, [assignment])
    with pytest.raises(SystemExit) as exited:
        main(["--config", str(SMOKE), "--set", "total_steps=abc"])
    assert exited.value.code == 2
    assert "total_steps: expected an integer" in capsys.readouterr().err


def test_tournament_config_values_are_checked_against_the_field_types(tmp_path: Path) -> None:
    from training.tournament import TournamentError, load_config

    path = tmp_path / "t.yaml"
    path.write_text("participants: [random, greedy]\nout: " + str(tmp_path / "out") + "\n", encoding="utf-8")
    cfg = load_config(path, ["ratings.prior_draws=1e-1", "games_per_pairing=4e1", "move_time_limit=2e0"])
    assert (cfg.prior_draws, cfg.games_per_pairing, cfg.move_time_limit) == (0.1, 40, 2.0)
    for assignment, message in (
        ("ratings.prior_draws=abc", "ratings.prior_draws: expected a number"),
        ("seed=2.5", "seed: expected an integer, got 2.5"),
        ("workers=two", "workers: expected an integer"),
        ("name=[1, 2]", "name: expected a string"),
        ("backend=7", "backend: expected a string"),
        ("move_time_limit=0", "move_time_limit must be > 0"),
    ):
        with pytest.raises(TournamentError, match=message):
            load_config(path, [assignment])


def _training_checkpoint(tmp_path: Path) -> Path:
    from training.ppo import PPOConfig, Trainer, load_config

    values = {**load_config(SMOKE).to_dict(), "run_root": str(tmp_path), "num_envs": 1, "hidden": 16, "slot_embed": 4}
    trainer = Trainer(PPOConfig(**values), progress=False)
    trainer.started = time.perf_counter()
    path = trainer.save_checkpoint()
    trainer.writer.close()
    return path


def test_crafted_checkpoints_are_checkpoint_errors(tmp_path: Path) -> None:
    """An extra shape key, no optimizer, NaN weights: CheckpointError at load (resume included), not later."""
    import torch

    from agents import checkpoint as ckpt
    from training.ppo import PPOConfig, Trainer

    good = _training_checkpoint(tmp_path)
    data = ckpt.load(good)

    def crafted(name: str, change) -> Path:
        copy = torch.load(good, weights_only=True)
        change(copy)
        path = tmp_path / name
        torch.save(copy, path)
        return path

    cases = {
        "extra_shape_key.pt": (lambda d: d["policy"]["shape"].update(colour="blue"), "network shape has keys"),
        "no_optimizer.pt": (lambda d: d["trainer"].pop("optimizer"), "lacks 'optimizer'"),
        "nan_weights.pt": (
            lambda d: next(iter(d["policy"]["state_dict"].values())).fill_(float("nan")),
            "NaN or infinite",
        ),
        "string_weights.pt": (lambda d: d["policy"].update(state_dict={"w": "x"}), "not a tensor"),
    }
    config = PPOConfig(**{**data["config"], "run_root": str(tmp_path)})
    for name, (change, message) in cases.items():
        path = crafted(name, change)
        with pytest.raises(ckpt.CheckpointError, match=message):
            ckpt.load(path)
        with pytest.raises(ckpt.CheckpointError, match=message):
            Trainer(config, resume=path, progress=False)


def test_rummy_rules_file_alias_bomb_and_non_utf8_are_refused(tmp_path: Path) -> None:
    """Rummy's rules files go through the same YAML limits as Burako's (before:
    plain ``yaml.safe_load`` expanded the bomb)."""
    from burako_env.rummy.rules import load_rummy_rules

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(f"joker_penalty: {alias_bomb()}\n", encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(RulesError, match="alias") as info:
        load_rummy_rules(bomb)
    assert time.perf_counter() - start < 1.0
    assert str(bomb) in str(info.value) and len(str(info.value)) < 500
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("hand_size: 14 # año\n".encode("latin-1"))
    with pytest.raises(RulesError, match="not UTF-8"):
        load_rummy_rules(latin)


def test_input_and_output_paths_are_named_for_what_is_wrong_with_them(tmp_path: Path) -> None:
    """A folder given where a file is read says so (it said "does not exist"); a file under a
    file says which is the file; a pickle the safe loader refuses is reported without torch's
    advice to load it unsafely (weights_only=False would run the file's code)."""
    from agents import checkpoint as ckpt
    from training.files import check_output_file
    from training.tournament import TournamentError
    from training.tournament import load_config as load_tournament

    with pytest.raises(ckpt.CheckpointError, match="is a folder, not a file"):
        ckpt.load(tmp_path)
    with pytest.raises(RulesError, match="is a folder, not a file"):
        load_rules(str(tmp_path))
    with pytest.raises(TournamentError, match="is a folder, not a file"):
        load_tournament(tmp_path)
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the folder '.*a_file' is a file, not a folder"):
        check_output_file(a_file / "games.jsonl", "record path")
    crafted = tmp_path / "crafted.pt"
    crafted.write_bytes(b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.")
    with pytest.raises(ckpt.CheckpointError) as refused:
        ckpt.load(crafted)
    message = str(refused.value)
    assert "cannot be read" in message and "weights_only" not in message and "\n" not in message


def test_a_journal_line_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    """forfeits.jsonl holding `[1, 2]` said "list indices must be integers or slices, not str"."""
    from training.tournament import TournamentError
    from training.tournament.journal import read_journal

    journal = tmp_path / "forfeits.jsonl"
    journal.write_text("[1, 2]\n", encoding="utf-8")
    expected = r"forfeits\.jsonl, line 1: not a game entry \(a JSON object\), got \[1, 2\]"
    with pytest.raises(TournamentError, match=expected):
        read_journal(journal, is_record=False)


def test_legal_masks_handed_out_are_read_only_E3() -> None:
    """A caller's write into a returned mask made apply() accept an illegal action (a tile the
    player does not hold left his hand at -1). Both engines hand out read-only masks, clones too."""
    from burako_env.fast import FastGame

    state = GameState.new_game(np.random.default_rng(1))
    state.apply(2)
    game = FastGame.new_game(np.random.default_rng(1))
    for mask in (state.legal_mask(), state.clone().legal_mask(), game.legal_mask(), game.to_game_state().legal_mask()):
        with pytest.raises(ValueError, match="read-only"):
            mask[int(np.flatnonzero(mask == 0)[0])] = 1


def test_compiled_kernels_refuse_out_buffers_and_seats_they_would_overrun() -> None:
    """FastGame.encode(out=) and sample_legal_actions(out=) wrote past a short buffer (the process
    crashed on exit); a mano or player outside the table built a state that broke E1."""
    from burako_env.fast import FastGame

    game = FastGame.new_game(np.random.default_rng(0))
    guard = np.full(6000, -1.0, np.float32)
    encode_out = r"encode's out must be a writable C-contiguous float32 array of shape \(4886,\)"
    with pytest.raises(ValueError, match=encode_out):
        game.encode(0, out=guard[:10])
    assert (guard == -1.0).all()
    with pytest.raises(ValueError, match="got float64"):
        game.encode(0, out=np.zeros(4886))
    assert game.encode(1, out=np.zeros(4886, np.float32)).shape == (4886,)
    # a strided buffer is another type to numba: it compiled encode again (5 s) instead of a clear error
    wide = np.zeros((4886, 2), np.float32)
    with pytest.raises(ValueError, match="float32 \\(4886,\\), strided"):
        game.encode(0, out=wide[:, 0])
    assert (wide == 0).all()
    for seat in (2, -1, True, 1.0):
        with pytest.raises(ValueError, match=r"player must be a seat 0\.\.1"):
            game.encode(seat)  # type: ignore[arg-type]
    for make in (FastGame.new_game, GameState.new_game):
        with pytest.raises(ValueError, match=r"mano must be a seat 0\.\.1, got 7"):
            make(np.random.default_rng(0), mano=7)
    envs = BurakoVectorEnv(8, num_threads=1)
    _, masks, _ = envs.reset(seed=0)
    ints = np.full(20, -5)
    sample_out = r"sample_legal_actions' out must be a writable C-contiguous int64 array of shape \(8,\)"
    with pytest.raises(ValueError, match=sample_out):
        sample_legal_actions(masks, np.random.default_rng(0), out=ints[:2])
    assert (ints == -5).all()
    with pytest.raises(ValueError, match=r"masks must be an array of shape \(games, 3519\)"):
        sample_legal_actions(masks[0], np.random.default_rng(0))


def test_a_game_state_read_from_data_has_its_numbers_in_range() -> None:
    """GameState.from_dict promised a ValueError for malformed data but took current=9, mano=7,
    end_reason='bogus', privilege_tile=99 (an IndexError later in legal_mask), and turn=inf was an
    OverflowError."""
    data = GameState.new_game(np.random.default_rng(0)).to_dict()
    assert GameState.from_dict(data).to_dict() == data
    for field, value, message in (
        ("current", 9, "current 9 is outside 0..1"),
        ("mano", 7, "mano 7 is outside 0..1"),
        ("end_reason", "bogus", "end_reason 'bogus' is not one of"),
        ("match_winner", 5, "match_winner 5 is outside -1..1"),
        ("privilege_tile", 99, "privilege_tile 99 is outside -1..52"),
        ("pile_top_required", 99, "pile_top_required 99 is outside -1..52"),
        ("turn", float("inf"), "OverflowError"),
    ):
        with pytest.raises(ValueError, match=f"malformed game state data: .*{message}"):
            GameState.from_dict({**data, field: value})


def test_env_options_are_checked_not_coerced() -> None:
    """match="no" was True (a non-empty string), num_threads=1.7 was 1, illegal_reward=nan was taken,
    and max_cycles=np.int64(5) was refused as "not a positive integer"."""
    from burako_env.gym import BurakoGymEnv

    for make, options, message in (
        (burako_env.raw_env, {"match": "no"}, "match must be True or False, got str 'no'"),
        (burako_env.rummy_raw_env, {"match": 1}, "match must be True or False, got int 1"),
        (BurakoGymEnv, {"match": 0.0}, "match must be True or False"),
        (BurakoGymEnv, {"illegal_reward": float("nan")}, "illegal_reward must be a finite number"),
        (BurakoVectorEnv, {"num_envs": 2, "num_threads": 1.7}, "num_threads must be a positive integer or None"),
        (burako_env.raw_env, {"max_cycles": 0}, "max_cycles must be a positive integer or None"),
    ):
        with pytest.raises(ValueError, match=message):
            make(**options)
    assert burako_env.raw_env(max_cycles=np.int64(5)).max_cycles == 5
    assert burako_env.raw_env(match=np.bool_(True)).match is True


def test_describe_action_takes_integer_ids_only() -> None:
    """describe_action(1.5) answered "place at the high end"; np.float32(7.9) was a TypeError."""
    from burako_env.actions import describe_action

    assert describe_action(np.int64(7)) == describe_action(7)
    for bad in (1.5, np.float32(7.9), True, "7"):
        with pytest.raises(ValueError, match="action must be an integer, got"):
            describe_action(bad)  # type: ignore[arg-type]


def test_build_state_takes_seats_and_a_turn_count_not_fractions() -> None:
    """build_state accepted mano=0.5 and turn=-5 (only the range of current and mano was checked)."""
    from burako_env.scenario import build_state

    for options, message in (
        ({"mano": 0.5}, r"mano must be a seat 0\.\.1, got 0\.5"),
        ({"current": 2}, r"current must be a seat 0\.\.1, got 2"),
        ({"turn": -5}, r"turn must be a whole number in 0\.\.399 \(max_turns ends the hand\), got -5"),
        ({"turn": 10**6}, r"turn must be a whole number in 0\.\.399"),
        ({"hand_number": -1}, "hand_number must be a whole number >= 0, got -1"),
        ({"match_scores": [1.7, "3"]}, "match_scores: expected whole numbers"),
    ):
        with pytest.raises(ValueError, match=message):
            build_state(hands={0: [], 1: []}, **options)


def test_build_state_names_a_bad_tile_value_instead_of_truncating_it() -> None:
    """privilege_tile=1.5 was int()-ed to kind 1 and reported as "K2 is not in the hand";
    pile_top_required=-1 was reported as a tile "Y0" not in the hand; a hand of
    [1.5] held a K2. Each is refused by name now; text tiles and numpy kinds still work."""
    from burako_env.engine import Phase
    from burako_env.scenario import build_state, tile_kind, tiles

    assert tiles([np.int64(3), 52, "R5"]) == [3, 52, tile_kind("R5")]
    for options, message in (
        ({"phase": Phase.PRIVILEGE, "privilege_tile": 1.5}, r"bad privilege_tile 1\.5"),
        ({"phase": Phase.PRIVILEGE, "privilege_tile": True}, "bad privilege_tile True"),
        ({"pile_top_required": -1}, "bad pile_top_required -1"),
        ({"pile_top_required": 53}, "bad pile_top_required 53"),
        ({"hands": {0: [1.5], 1: "R5"}}, r"bad tile kind 1\.5"),
    ):
        arguments = {"hands": {0: "K2 R5", 1: "R6"}, "stock": "B1 B2", **options}
        with pytest.raises(ValueError, match=message):
            build_state(**arguments)  # type: ignore[arg-type]


def test_a_huge_unsigned_action_is_named_as_given_not_wrapped_negative() -> None:
    """A uint64 action of 2**63 became -9223372036854775808 in the batched APIs' message
    (the cast to int64 wrapped it); both batched envs name it as given, and nothing moves."""
    from burako_env.gym_vector import BurakoGymVectorEnv
    from burako_env.vector import BurakoVectorEnv

    core = BurakoVectorEnv(2, num_threads=1)
    core.reset(seed=3)
    gym_env = BurakoGymVectorEnv(2)
    gym_env.reset(seed=3)
    for env in (core, gym_env):
        before = env.obs.copy() if env is core else gym_env._observations()["observation"].copy()
        acts = np.array([0, 2**63], dtype=np.uint64)
        with pytest.raises(ValueError, match=r"game 1: action 9223372036854775808\b.*no game moved"):
            env.step(acts)
        after = env.obs if env is core else gym_env._observations()["observation"]
        assert np.array_equal(before, after)


def test_the_wrapped_env_refuses_a_bool_action_like_the_raw_env() -> None:
    """env().step(True) ended in numpy's "truth value of an array is ambiguous" (PettingZoo's
    TerminateIllegalWrapper indexed the mask with True); now the raw env's message, and the
    game neither moved nor ended, so a legal move still plays."""
    from burako_env.env import env

    game = env()
    game.reset(seed=5)
    observation, *_ = game.last()
    before = observation["observation"].copy()
    with pytest.raises(ValueError, match=rf"{game.agent_selection}: action must be an integer, got bool True"):
        game.step(True)  # type: ignore[arg-type]
    observation, reward, terminated, truncated, _ = game.last()
    assert np.array_equal(observation["observation"], before) and reward == 0 and not terminated and not truncated
    game.step(int(np.flatnonzero(observation["action_mask"])[0]))
    assert game.agent_selection in game.agents


# --------------------------------------------------------------------------- records' rules (a review, 2026-12-05)
def _random_record(rules: str = "burako") -> dict:
    from agents.random_agent import RandomAgent
    from agents.runner import play_game

    result = play_game([RandomAgent(seed=1), RandomAgent(seed=2)], rules, 2, deal_seed=3, record=True)
    assert result.record is not None
    return result.record


def test_a_records_rules_may_not_name_a_preset_file_to_read(tmp_path: Path) -> None:
    """A record's rules are whole fields; ``preset: <path>`` made the reader load that file (the web
    table's replay of an upload read the server's files and named their keys in its error)."""
    from burako_env.records import replay, validate_record

    secret = tmp_path / "config.yaml"
    secret.write_text("db_password: hunter2\n", encoding="utf-8")
    record = _random_record()
    record["rules"] = {**record["rules"], "preset": str(secret)}
    for read in (validate_record, replay):
        with pytest.raises(RecordError, match="not a 'preset' to read") as info:
            read(record)
        assert "db_password" not in str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tile_values", {"joker": 2**63}),
        ("canasta_bonus", {"clean": 10**13}),
        ("closing_bonus", 10**30),
        ("target", 10**20),
    ],
)
def test_rule_points_are_bounded_so_scores_fit_the_engines_integers(field: str, value: object) -> None:
    """B25-B28 values far beyond any sheet's: refused as rules, and a record carrying them is a
    RecordError (replay raised a bare OverflowError from numpy)."""
    from burako_env.records import replay

    with pytest.raises(RulesError, match=field):
        load_rules({"preset": "burako", field: value})
    record = _random_record()
    rules = dict(record["rules"])
    rules[field] = {**rules[field], **value} if isinstance(value, dict) else value
    record["rules"] = rules
    with pytest.raises(RecordError, match=field):
        replay(record)


def test_rummy_rules_labels_player_counts_and_bounds_are_checked_as_burakos() -> None:
    """Rummy's rules took a name with a newline (it goes into run folder names), a number as its
    source, duplicate player counts, a float player count (a numpy TypeError later), and penalties and
    match lengths that push observations outside their declared box."""
    from burako_env.rummy.rules import load_rummy_rules

    bad = {
        "name": "a/../b\nc",
        "source": 5,
        "players": [2, 2, 3],
        "joker_penalty": 10**7,
        "hands_per_match": 10**6,
        "first_play_minimum": 10**30,
    }
    for field, value in bad.items():
        with pytest.raises(RulesError, match=field):
            load_rummy_rules("rummy", {field: value})
    with pytest.raises(RulesError, match="distinct player counts"):
        load_rules({"preset": "burako", "players": [2, 2]})
    with pytest.raises(RulesError, match="num_players must be an integer"):
        load_rummy_rules("rummy").check_players(2.0)  # type: ignore[arg-type]


def test_build_state_refuses_positions_no_game_reaches() -> None:
    """B17, B20-B22, V3: a finished hand without its result, the privilege draw without its rule or
    after turn 0, a player out of tiles whose side has its muerto (he closed), a pile top to meld
    without its rule, in phase DRAW, or that no move can meld (a live state with no legal action)
    were all built."""
    from burako_env.engine import Phase
    from burako_env.scenario import build_state

    must = {"pile_top_must_be_melded": True}
    cases = (
        ({"phase": Phase.HAND_OVER}, "phase HAND_OVER is a finished hand"),
        ({"phase": Phase.PRIVILEGE, "privilege_tile": "R5", "rules": "burako_casual"}, "needs the rule mano_privilege"),
        ({"phase": Phase.PRIVILEGE, "privilege_tile": "R5", "turn": 7}, "mano_privilege and turn 0"),
        ({"hands": {0: "R5 R6", 1: ""}, "muerto_taken": {1: True}}, "player 1 has an empty hand"),
        ({"pile_top_required": "R5", "overrides": {"pile_top_must_be_melded": False}}, "needs the rule"),
        ({"pile_top_required": "R5", "phase": Phase.DRAW, "overrides": must}, "and phase PLAY"),
        ({"pile_top_required": "R5", "overrides": must}, "cannot be melded from this position"),
    )
    for options, message in cases:
        arguments = {"hands": {0: "R5 B9", 1: "K3"}, "stock": "B1 B2", **options}
        with pytest.raises(ValueError, match=message):
            build_state(**arguments)  # type: ignore[arg-type]
    # the same pile top with tiles to meld it: built
    state = build_state(hands={0: "R5 R6 R7 B9", 1: "K3"}, stock="B1 B2", pile_top_required="R5", overrides=must)
    assert state.pile_top_required >= 0 and state.legal_actions()


def test_training_configs_that_changed_the_run_silently_are_refused(tmp_path: Path) -> None:
    """max_snapshots 0 with no baselines evicted every snapshot: 100% self-play under a 0.2 share; a
    rules name with "/" or ".." put the run folder outside run_root."""
    from training.ppo import load_config
    from training.resume import new_run_dir

    with pytest.raises(ValueError, match="the league is empty"):
        load_config(SMOKE, ["league_baselines=[]", "max_snapshots=0", "self_play_fraction=0.2"])
    cfg = load_config(SMOKE)
    root = tmp_path / "root"
    for name in ("../../escaped2p", "sub/dir2p", "x" * 300):
        folder = new_run_dir(root, name, cfg)
        assert folder.parent == root and len(folder.name) < 200


def test_a_yaml_key_given_twice_is_refused_not_taken_last() -> None:
    """A config with total_steps twice, or a schedule given twice, loaded with the last value silently."""
    with pytest.raises(ValueError, match=r"t.yaml, line 2: the key 'total_steps' is given twice"):
        load_yaml("total_steps: 100\ntotal_steps: 5000\n", "t.yaml")
    with pytest.raises(ValueError, match="the key 'learning_rate' is given twice"):
        load_yaml("schedules:\n  learning_rate: [[0, 1]]\n  learning_rate: [[0, 2]]\n", "t.yaml")
    assert load_yaml("a: 1\nb: {a: 2}\n", "t.yaml") == {"a": 1, "b": {"a": 2}}  # one key per mapping
    assert load_yaml("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n", "t.yaml")["c"] == {"x": 1, "y": 2}
