"""Rummy for people: the table as text (ANSI) and as a picture (RGB array, SVG).

The picture reuses Burako's drawing primitives (:mod:`burako_env.graphics`:
boxes, tiles, texts, painted with Pillow). The table is drawn as one valid
arrangement of its multiset into melds (found by the partition DP, one meld
per row segment), since the engine keeps only the multiset.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from burako_env.rummy.engine import NO_TILE, Phase, RummyState
from burako_env.rummy.partition import can_partition
from burako_env.scenario import tile_text, tiles_text
from burako_env.tiles import JOKER, NUM_COLOURS, NUM_KINDS, NUM_NUMBERS, kind_of


def arrange(table: np.ndarray) -> list[list[int]]:
    """One split of the table into melds, for display (greedy with the exact check as a guide)."""
    rest = np.asarray(table, dtype=np.int64).copy()
    melds: list[list[int]] = []
    while rest.any():
        found = None
        for colour in range(NUM_COLOURS):
            for start in range(1, NUM_NUMBERS - 1):
                for end in range(NUM_NUMBERS, start + 1, -1):
                    meld = [kind_of(colour, n) for n in range(start, end + 1)]
                    if _take(rest, meld):
                        found = meld
                        break
                if found:
                    break
            if found:
                break
        if found is None:
            for number in range(1, NUM_NUMBERS + 1):
                kinds = [kind_of(c, number) for c in range(NUM_COLOURS) if rest[kind_of(c, number)]]
                found = next(
                    (list(meld) for size in (4, 3) for meld in combinations(kinds, size) if _take(rest, list(meld))),
                    None,
                )
                if found:
                    break
        if found is None:
            found = next((meld for meld in _joker_melds(rest) if _take(rest, meld)), None)
        if found is None:  # no candidate fits (not seen): show what is left as one group
            melds.append(np.repeat(np.arange(NUM_KINDS), rest).tolist())
            break
        melds.append(found)
    return melds


def _joker_melds(rest: np.ndarray) -> list[list[int]]:
    """Melds holding jokers that ``rest`` could give, for :func:`arrange`:
    runs with each missing number a joker (and with one present number a
    joker too), and sets of one number's colours filled up with jokers."""
    jokers = int(rest[JOKER])
    if not jokers:
        return []
    out: list[list[int]] = []
    for colour in range(NUM_COLOURS):
        for start in range(1, NUM_NUMBERS - 1):
            for end in range(start + 2, NUM_NUMBERS + 1):
                run = [kind_of(colour, n) if rest[kind_of(colour, n)] else JOKER for n in range(start, end + 1)]
                missing = run.count(JOKER)
                if missing == len(run) or missing > jokers:
                    continue
                out.append(run)
                if missing < jokers:
                    out += [[*run[:i], JOKER, *run[i + 1 :]] for i, k in enumerate(run) if k != JOKER]
    for number in range(1, NUM_NUMBERS + 1):
        kinds = [kind_of(c, number) for c in range(NUM_COLOURS) if rest[kind_of(c, number)]]
        for size in (4, 3):
            for naturals in range(min(len(kinds), size), max(1, size - jokers) - 1, -1):
                out += [[*meld, *[JOKER] * (size - naturals)] for meld in combinations(kinds, naturals)]
    return [meld for meld in out if meld.count(JOKER) < len(meld)]


def _take(rest: np.ndarray, meld: list[int]) -> bool:
    trial = rest.copy()
    for kind in meld:
        trial[kind] -= 1
    if trial.min() < 0 or not can_partition(trial):
        return False
    rest[:] = trial
    return True


def render_text(state: RummyState, viewer: int | None = None) -> str:
    """The table as text; ``viewer`` shows only that player's hand (None: every hand)."""
    lines = [
        f"Rummy, hand {state.hand_number + 1}/{state.rules.hands_per_match}, turn {state.turns}, "
        f"{state.phase.name}, stock {state.stock_size}, closing tile "
        + (tile_text(state.closing_tile) if state.closing_tile != NO_TILE else "placed")
    ]
    for player in range(state.num_players):
        mark = ">" if player == state.current and state.phase == Phase.PLAY else " "
        hand = tiles_text(state.hands[player]) if viewer in (None, player) else f"{state.hand_size(player)} tiles"
        first = "" if state.first_play_done[player] else " (no first play yet)"
        lines.append(f"{mark} player_{player} [{state.match_scores[player]}]{first}: {hand}")
    lines.append("table: " + " | ".join(" ".join(tile_text(k) for k in meld) for meld in arrange(state.table)))
    if state.pending.any() or state.pending_closing:
        lines.append("pending: " + tiles_text(state.pending) + (" + closing tile" if state.pending_closing else ""))
    if state.hand_scores is not None and state.phase != Phase.PLAY:
        who = "blocked" if state.closer is None else f"player_{state.closer} closed"
        lines.append(f"hand over ({who}): {state.hand_scores}; match {state.match_scores}")
    return "\n".join(lines)


def rummy_scene(state: RummyState, viewer: int | None = None):
    from burako_env.graphics import MARGIN, TILE_GAP, TILE_H, TILE_W, WIDTH, Scene, Text, draw_tile

    items: list = []
    y = MARGIN + 16
    items.append(Text(MARGIN, y, render_text(state).splitlines()[0], 14, bold=True))
    y += 14
    per_row = (WIDTH - 2 * MARGIN - 120) // (TILE_W + TILE_GAP)
    for player in range(state.num_players):
        kinds = np.repeat(np.arange(NUM_KINDS), state.hands[player]).tolist()
        items.append(Text(MARGIN, y + TILE_H / 2 + 5, f"player_{player} ({state.match_scores[player]})", 12))
        for i, kind in enumerate(kinds[:per_row]):
            shown = kind if viewer in (None, player) else None
            draw_tile(items, MARGIN + 120 + i * (TILE_W + TILE_GAP), y, shown, False)
        y += TILE_H + 8
    items.append(Text(MARGIN, y + 12, "table", 12, bold=True))
    y += 20
    x = MARGIN
    for meld in arrange(state.table):
        width = len(meld) * (TILE_W + TILE_GAP) + 10
        if x + width > WIDTH - MARGIN:
            x, y = MARGIN, y + TILE_H + 8
        for i, kind in enumerate(meld):
            draw_tile(items, x + i * (TILE_W + TILE_GAP), y, kind, False)
        x += width
    y += TILE_H + 12
    if state.closing_tile != NO_TILE:
        items.append(Text(MARGIN, y + TILE_H / 2 + 5, "closing tile", 12))
        draw_tile(items, MARGIN + 120, y, state.closing_tile, False, frame="#ff5252")
        y += TILE_H + 8
    return Scene(WIDTH, int(y + MARGIN), items)


def render_image(state: RummyState, viewer: int | None = None) -> np.ndarray:
    """The table as an (height, width, 3) uint8 picture."""
    from burako_env.graphics import scene_image

    return scene_image(rummy_scene(state, viewer))


def render_svg(state: RummyState, viewer: int | None = None) -> str:
    from burako_env.graphics import scene_svg

    return scene_svg(rummy_scene(state, viewer))


__all__ = ["JOKER", "arrange", "render_image", "render_svg", "render_text"]
