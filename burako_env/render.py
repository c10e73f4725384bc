"""Text rendering of a table (the env's ``ansi`` mode, the main job's log)."""

from __future__ import annotations

from burako_env.engine import GameState, Phase
from burako_env.melds import describe_meld
from burako_env.tiles import NUM_KINDS, short_name


def hand_text(state: GameState, player: int) -> str:
    cards = state.rules.cards
    tiles = []
    for kind in range(NUM_KINDS):
        tiles.extend([short_name(kind, cards)] * int(state.hands[player, kind]))
    return " ".join(tiles) if tiles else "(empty)"


def side_name(state: GameState, side: int) -> str:
    players = [p for p in range(state.num_players) if state.side_of[p] == side]
    return "side " + str(side) + " (" + ", ".join(f"player_{p}" for p in players) + ")"


def render_table(state: GameState, viewer: int | None = None) -> str:
    """The table as text: every side's melds (canastas marked), the pile top and
    size, the stock, hand sizes, scores, and the hand of ``viewer`` (default:
    the player to act)."""
    cards = state.rules.cards
    viewer = state.current if viewer is None else viewer
    lines = [
        f"hand {state.hand_number + 1} · turn {state.turn} · phase {state.phase.name} · "
        f"mano player_{state.mano} · to act player_{state.current}"
    ]
    for s in range(state.num_sides):
        muerto = "muerto taken" if state.muerto_taken[s] else "muerto waiting"
        lines.append(f"{side_name(state, s)} · match {state.match_scores[s]} · {muerto}")
        if not state.melds[s]:
            lines.append("    (no melds)")
        for j, meld in enumerate(state.melds[s]):
            mark = ""
            if meld.is_canasta:
                mark = "  [CANASTA clean]" if meld.clean else "  [CANASTA dirty]"
            lines.append(f"    {j:2d}: {describe_meld(meld, cards)}{mark}")
    top = short_name(state.pile[-1], cards) if state.pile else "-"
    lines.append(f"pile: top {top}, {len(state.pile)} tiles · stock: {len(state.stock)} tiles")
    sizes = ", ".join(f"player_{p}: {state.hand_size[p]}" for p in range(state.num_players))
    lines.append(f"hand sizes: {sizes}")
    lines.append(f"player_{viewer}'s hand: {hand_text(state, viewer)}")
    if state.phase == Phase.PRIVILEGE and viewer == state.current:
        lines.append(f"privilege tile drawn: {short_name(state.privilege_tile, cards)} (keep or reject)")
    if state.phase == Phase.HAND_OVER:
        lines.append(f"hand over: {state.end_reason}" + (f" by player_{state.closer}" if state.closer >= 0 else ""))
        if state.hand_scores is not None:
            lines.append(score_text(state))
    return "\n".join(lines)


def score_text(state: GameState) -> str:
    """The score breakdown of the finished hand, one line per side (B26)."""
    if state.hand_scores is None:
        return f"no score: hand {state.end_reason}"
    lines = []
    for s, score in enumerate(state.hand_scores):
        d = score.to_dict()
        lines.append(
            f"{side_name(state, s)}: melded {d['melded']:+d}, canastas {d['canasta_bonus']:+d}, "
            f"closing {d['closing_bonus']:+d}, hand {d['hand_penalty']:+d}, muerto {d['muerto_penalty']:+d}"
            f" = {d['total']:+d}  (match {state.match_scores[s]})"
        )
    return "\n".join(lines)
