"""The rules object: presets, YAML files, overrides (V5) and bad configurations."""

from __future__ import annotations

from pathlib import Path

import pytest

import burako_env
from burako_env.rules import Rules, RulesError, load_rules, preset_names

PRESET_PLAYERS = {
    "burako": (2, 4),
    "buraco_cards": (2,),
    "burako_br": (2, 4),
    "burako_royal": (2, 4),
    "burako_casual": (2, 3, 4),
}


def test_every_preset_of_the_part2_table_ships() -> None:
    assert set(preset_names()) == set(PRESET_PLAYERS)
    for name, players in PRESET_PLAYERS.items():
        assert load_rules(name).players == players


@pytest.mark.parametrize(
    ("name", "num_players", "hand", "stock"),
    [
        ("burako", 2, 12, 60),  # B4: 24 + 22 dealt
        ("burako", 4, 11, 40),  # B4: 44 + 22 dealt
        ("buraco_cards", 2, 11, 60),  # 104 cards: 22 + 22 dealt
        ("burako_br", 2, 11, 62),
        ("burako_br", 4, 11, 40),
        ("burako_royal", 2, 12, 60),
        ("burako_royal", 4, 13, 32),
        ("burako_casual", 2, 14, 56),
        ("burako_casual", 3, 14, 31),  # V4: 3 x 14 + 3 x 11 dealt
        ("burako_casual", 4, 14, 28),
    ],
)
def test_v4_v5_hand_sizes_and_stock_for_every_player_count(name: str, num_players: int, hand: int, stock: int) -> None:
    rules = load_rules(name)
    assert rules.hand_size[num_players] == hand
    assert rules.stock_size(num_players) == stock


def test_v5_overrides_on_top_of_a_preset() -> None:
    rules = load_rules("burako", {"target": 1500})
    assert rules.target == 1500 and rules.name == "burako"
    royal15 = load_rules("burako_royal", {"hand_size": {2: 15}})
    assert royal15.hand_size == {2: 15, 4: 13}
    assert royal15.stock_size(2) == 106 - 30 - 22
    values = load_rules("burako", {"tile_values": {"two": 10}})
    assert values.tile_values == {"joker": 50, "two": 10, "ace": 15, "high": 10, "low": 5}
    env = burako_env.raw_env(rules="burako", rule_overrides={"target": 1500})
    assert env.rules.target == 1500


def test_v5_yaml_file_with_preset_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "my_table.yaml"
    path.write_text("preset: burako\nname: home\ntarget: 2000\nmano_privilege: false\n", encoding="utf-8")
    rules = load_rules(str(path))
    assert (rules.name, rules.target, rules.mano_privilege) == ("home", 2000, False)
    assert rules.hand_size == {2: 12, 4: 11}
    env = burako_env.env(rules=str(path))
    env.reset(seed=0)
    assert env.unwrapped.game.phase.name == "DRAW"  # no privilege phase


def test_rules_object_and_mapping_are_accepted() -> None:
    rules = load_rules("burako_br")
    assert load_rules(rules) is rules
    assert load_rules(rules.to_dict()) == rules
    assert burako_env.raw_env(rules=rules).rules == rules
    assert isinstance(rules, Rules)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("preset: burako\ntarget: lots\n", "'target': expected an integer"),
        ("preset: burako\ntraget: 100\n", "unknown rules field 'traget'"),
        ("preset: burako\nhand_size: {2: 45}\n", "cannot deal 2 hands of 45"),
        ("preset: burako\ntile_set: dominoes\n", "'tile_set': expected one of"),
        ("preset: burako\nsets_allowed: maybe\n", "'sets_allowed': expected true or false"),
        ("name: mine\ntile_values: {joker: 50}\n", "'tile_values': missing key"),
        ("preset: burako\ncanasta_bonus: {clean: 200, dirty: 100, real: 0, ace_to_ace: 0, royal: 5}\n", "unknown key"),
        ("preset: burako\nwilds_per_meld: 2\n", "'wilds_per_meld': must be between 1 and 1"),
        ("preset: burako\nplayers: [2, 5]\n", "'players': must be between 2 and 4"),
        ("preset: burako\nplayers: [2, 3]\n", "no hand size for player count"),
        ("preset: nowhere\n", "unknown rules preset 'nowhere'"),
        ("- just\n- a list\n", "expected a mapping"),
        ("target: [unclosed\n", "not valid YAML"),
    ],
)
def test_v5_malformed_rules_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RulesError, match=message):
        load_rules(str(path))


def test_missing_rules_file_and_bad_type() -> None:
    with pytest.raises(RulesError, match="does not exist"):
        load_rules("no/such/file.yaml")
    with pytest.raises(RulesError, match="preset name"):
        load_rules(3.5)  # type: ignore[arg-type]


def test_v4_three_players_only_where_the_table_allows() -> None:
    with pytest.raises(RulesError, match="num_players=3 is not allowed by rules 'burako'"):
        burako_env.env(rules="burako", num_players=3)
    with pytest.raises(RulesError, match="num_players=4 is not allowed by rules 'buraco_cards'"):
        burako_env.env(rules="buraco_cards", num_players=4)
    env = burako_env.env(rules="burako_casual", num_players=3)
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert env.unwrapped.game.num_sides == 3
    assert [len(m) for m in env.unwrapped.game.muertos] == [11, 11, 11]


def test_v5_numpy_values_become_plain_ones() -> None:
    """V5 overrides from a numpy sweep (``rule_overrides={"target": np.int64(3000)}``) stayed numpy:
    the rules equalled their plain twin but hashed differently (compiled tables built twice), and
    ``to_dict()`` (records, checkpoints) failed to write as JSON. Rummy's rules likewise."""
    import json

    import numpy as np

    from burako_env.fast import fast_tables
    from burako_env.rummy.rules import load_rummy_rules

    swept = load_rules("burako", {"target": np.int64(3000), "hand_size": {np.int64(2): np.int64(12)}})
    plain = load_rules("burako", {"target": 3000, "hand_size": {2: 12}})
    assert swept == plain and hash(swept) == hash(plain)
    assert type(swept.target) is int and all(type(v) is int for v in swept.hand_size.values())
    assert json.loads(json.dumps(swept.to_dict())) == json.loads(json.dumps(plain.to_dict()))
    assert fast_tables(swept, 2) is fast_tables(plain, 2)
    rummy = load_rummy_rules("rummy", {"joker_penalty": np.int64(25)})
    assert type(rummy.joker_penalty) is int and json.dumps(rummy.to_dict())
