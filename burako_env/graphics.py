"""Pictures of the table for people: RGB arrays (the env's ``rgb_array``
mode), SVG for notebooks, and an HTML step-through replay of a game record.

One layout serves every output: :func:`table_scene` turns a state into a
:class:`Scene` (boxes, tiles and texts at pixel positions), which
:func:`scene_svg` writes as SVG and :func:`scene_image` paints with Pillow
(installed with matplotlib, whose DejaVu Sans font draws the ★ and the
card suits). What the picture shows, top to bottom:

| band    | contents                                                                  |
|---------|---------------------------------------------------------------------------|
| header  | hand, turn, phase, who is to act, stock and pile sizes                    |
| hands   | one row per player: name, side, tile count, the tiles (backs if hidden)   |
| melds   | one block per side: muerto state, match score, every meld in slot order;  |
|         | canastas framed (gold: clean, silver: dirty)                              |
| pile    | the discard pile's last tiles, the top one framed red                     |
| footer  | a caption (e.g. the move just played) and, at the end, the score lines    |

Tiles are drawn in their colour (black, red, blue, yellow; the joker as a
purple ★); with ``tile_set: cards`` they are cards (rank and suit).
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from burako_env.engine import GameState, Phase
from burako_env.melds import meld_kinds
from burako_env.render import score_text, side_name
from burako_env.tiles import CARD_RANKS, JOKER, KIND_COLOUR_LIST, KIND_NUMBER_LIST, NUM_KINDS, SUIT_SYMBOLS

WIDTH = 980
TILE_W, TILE_H, TILE_GAP = 26, 36, 3
MARGIN = 12
PILE_SHOWN = 20

BACKGROUND = "#1f6f43"  # the felt
PANEL = "#175a36"
TEXT = "#f5f5f0"
TILE_FACE = "#fffbea"
TILE_EDGE = "#8a8570"
TILE_BACK = "#3f5f8f"
INK = ("#202020", "#c62828", "#1565c0", "#d49a00")  # black, red, blue, yellow
JOKER_INK = "#7b1fa2"
CLEAN_FRAME = "#f2c230"
DIRTY_FRAME = "#c0c0c0"
TOP_FRAME = "#ff5252"


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float
    fill: str | None
    stroke: str | None = None
    stroke_width: float = 1.0
    radius: float = 3.0


@dataclass
class Text:
    x: float
    y: float  # baseline
    text: str
    size: int = 13
    colour: str = TEXT
    bold: bool = False
    anchor: str = "start"  # start | middle


@dataclass
class Scene:
    width: int
    height: int
    items: list[Box | Text] = field(default_factory=list)


# ---------------------------------------------------------------------- layout
def _tile_label(kind: int, cards: bool) -> tuple[str, str]:
    if kind == JOKER:
        return "★", JOKER_INK
    colour, number = KIND_COLOUR_LIST[kind], KIND_NUMBER_LIST[kind]
    if cards:
        return f"{CARD_RANKS[number - 1]}{SUIT_SYMBOLS[colour]}", INK[colour]
    return str(number), INK[colour]


def draw_tile(
    items: list[Box | Text], x: float, y: float, kind: int | None, cards: bool, frame: str | None = None
) -> None:
    """A tile face (``kind``) or back (``None``) with its top-left corner at (x, y)."""
    if frame is not None:
        items.append(Box(x - 2, y - 2, TILE_W + 4, TILE_H + 4, None, frame, 2.5, 4))
    if kind is None:
        items.append(Box(x, y, TILE_W, TILE_H, TILE_BACK, TILE_EDGE, 1, 3))
        return
    items.append(Box(x, y, TILE_W, TILE_H, TILE_FACE, TILE_EDGE, 1, 3))
    label, ink = _tile_label(kind, cards)
    size = 12 if cards and len(label) > 2 else 15
    items.append(Text(x + TILE_W / 2, y + TILE_H / 2 + 5, label, size, ink, True, "middle"))


def _hand_kinds(state: GameState, player: int) -> list[int]:
    return [k for k in range(NUM_KINDS) for _ in range(int(state.hands[player, k]))]


def table_scene(state: GameState, viewer: int | None = None, reveal: bool = True, caption: str | None = None) -> Scene:
    """Lay the table out. ``reveal`` shows every hand face up (a spectator's
    view); otherwise only ``viewer``'s hand (default: the player to act)."""
    cards = state.rules.cards
    viewer = state.current if viewer is None else viewer
    items: list[Box | Text] = []
    y = MARGIN + 14
    phase = state.phase.name if state.phase != Phase.HAND_OVER else f"HAND OVER ({state.end_reason})"
    items.append(
        Text(
            MARGIN,
            y,
            f"{state.rules.name} · hand {state.hand_number + 1} · turn {state.turn} · {phase} · "
            f"to act: player_{state.current} · stock {len(state.stock)} · pile {len(state.pile)}",
            14,
            TEXT,
            True,
        )
    )
    y += 12
    per_row = (WIDTH - 2 * MARGIN - 190) // (TILE_W + TILE_GAP)

    # hands
    for p in range(state.num_players):
        kinds = _hand_kinds(state, p)
        rows = max(1, -(-len(kinds) // per_row))
        height = rows * (TILE_H + TILE_GAP) + 8
        items.append(Box(MARGIN, y, WIDTH - 2 * MARGIN, height, PANEL, None, 0, 6))
        marker = "▶ " if p == state.current and state.phase != Phase.HAND_OVER else ""
        items.append(Text(MARGIN + 8, y + 18, f"{marker}player_{p}", 13, TEXT, True))
        muerto = " · muerto unplayed" if state.muerto_unplayed[p] else ""
        items.append(Text(MARGIN + 8, y + 34, f"side {state.side_of[p]} · {len(kinds)} tiles{muerto}", 11))
        shown = reveal or p == viewer
        for i, kind in enumerate(kinds):
            r, c = divmod(i, per_row)
            draw_tile(
                items,
                MARGIN + 180 + c * (TILE_W + TILE_GAP),
                y + 4 + r * (TILE_H + TILE_GAP),
                kind if shown else None,
                cards,
            )
        y += height + 6

    # melds, one block per side
    for s in range(state.num_sides):
        muerto = "muerto taken" if state.muerto_taken[s] else "muerto waiting"
        ready = " · can close" if state.close_ready[s] else ""
        items.append(
            Text(
                MARGIN,
                y + 14,
                f"{side_name(state, s)} · match {state.match_scores[s]} · {muerto}{ready}",
                13,
                TEXT,
                True,
            )
        )
        y += 22
        x, row_top = MARGIN + 4, y
        if not state.melds[s]:
            items.append(Text(MARGIN + 8, y + 16, "(no melds)", 12))
            y += 28
            continue
        for j, meld in enumerate(state.melds[s]):
            kinds = meld_kinds(meld)
            width = len(kinds) * (TILE_W + 1) + 10
            if x + width > WIDTH - MARGIN:
                x, row_top = MARGIN + 4, row_top + TILE_H + 22
            if meld.is_canasta:
                frame = CLEAN_FRAME if meld.clean else DIRTY_FRAME
                items.append(Box(x - 3, row_top - 3, width - 4, TILE_H + 6, None, frame, 3, 5))
            items.append(Text(x, row_top + TILE_H + 13, f"{j}" + (" canasta" if meld.is_canasta else ""), 10))
            for i, kind in enumerate(kinds):
                draw_tile(items, x + i * (TILE_W + 1), row_top, kind, cards)
            x += width + 6
        y = row_top + TILE_H + 22

    # pile
    items.append(
        Text(MARGIN, y + 14, f"discard pile ({len(state.pile)}; last {PILE_SHOWN} shown, top framed)", 13, TEXT, True)
    )
    y += 22
    shown_pile = state.pile[-PILE_SHOWN:]
    for i, kind in enumerate(shown_pile):
        draw_tile(
            items, MARGIN + 4 + i * (TILE_W + TILE_GAP), y, kind, cards, TOP_FRAME if i == len(shown_pile) - 1 else None
        )
    y += TILE_H + 12

    # footer
    lines = [caption] if caption else []
    if state.phase == Phase.HAND_OVER:
        lines.extend(score_text(state).splitlines())
    for line in lines:
        items.append(Text(MARGIN, y + 14, line, 12))
        y += 18
    return Scene(WIDTH, int(y + MARGIN), items)


# ---------------------------------------------------------------------- outputs
def scene_svg(scene: Scene) -> str:
    """The scene as a standalone SVG document."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{scene.width}" height="{scene.height}" '
        f'viewBox="0 0 {scene.width} {scene.height}" font-family="DejaVu Sans, Verdana, sans-serif">',
        f'<rect width="100%" height="100%" fill="{BACKGROUND}"/>',
    ]
    for item in scene.items:
        if isinstance(item, Box):
            fill = item.fill or "none"
            stroke = f' stroke="{item.stroke}" stroke-width="{item.stroke_width}"' if item.stroke else ""
            out.append(
                f'<rect x="{item.x:.1f}" y="{item.y:.1f}" width="{item.w:.1f}" height="{item.h:.1f}" '
                f'rx="{item.radius}" fill="{fill}"{stroke}/>'
            )
        else:
            weight = ' font-weight="bold"' if item.bold else ""
            out.append(
                f'<text x="{item.x:.1f}" y="{item.y:.1f}" font-size="{item.size}" fill="{item.colour}" '
                f'text-anchor="{item.anchor}"{weight}>{html.escape(item.text)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out)


def _require_pictures() -> None:
    """Pictures need the ``pictures`` extra; say so instead of a bare ImportError."""
    try:
        import matplotlib  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"pictures of the table (render_mode='rgb_array') need Pillow and matplotlib ({error.name} is missing): "
            "pip install 'burako-env[pictures]'"
        ) from error


@lru_cache(maxsize=16)
def _font(size: int, bold: bool) -> Any:
    from matplotlib import font_manager
    from PIL import ImageFont

    path = font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal"))
    return ImageFont.truetype(path, size)


def scene_image(scene: Scene) -> np.ndarray:
    """The scene painted as an (height, width, 3) uint8 array."""
    _require_pictures()
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (scene.width, scene.height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for item in scene.items:
        if isinstance(item, Box):
            draw.rounded_rectangle(
                (item.x, item.y, item.x + item.w, item.y + item.h),
                radius=item.radius,
                fill=item.fill,
                outline=item.stroke,
                width=max(1, round(item.stroke_width)) if item.stroke else 0,
            )
        else:
            anchor = "ms" if item.anchor == "middle" else "ls"
            draw.text((item.x, item.y), item.text, fill=item.colour, font=_font(item.size, item.bold), anchor=anchor)
    return np.asarray(image, dtype=np.uint8)


def table_image(
    state: GameState, viewer: int | None = None, reveal: bool = True, caption: str | None = None
) -> np.ndarray:
    """The table as an RGB array (what ``render_mode="rgb_array"`` returns)."""
    return scene_image(table_scene(state, viewer, reveal, caption))


def table_svg(state: GameState, viewer: int | None = None, reveal: bool = True, caption: str | None = None) -> str:
    return scene_svg(table_scene(state, viewer, reveal, caption))


class TableSVG:
    """Displays as the table's SVG in a notebook (``TableSVG(state)`` as a cell's last line)."""

    def __init__(self, state: GameState, **options: Any) -> None:
        self.svg = table_svg(state, **options)

    def _repr_html_(self) -> str:
        return self.svg


# ---------------------------------------------------------------------- replay
class Replay:
    """A recorded game, move by move, for notebooks.

    ``Replay(record)`` replays the record (checked exactly, like
    ``records.replay``); in a notebook it displays as a step-through viewer
    (buttons and a slider, plain HTML and JavaScript, no widget extension
    needed). ``frame(i)`` is position ``i`` as an RGB array, ``svg(i)`` as
    SVG; position 0 is the deal, ``i`` the table after the ``i``-th move.
    """

    def __init__(self, record: Mapping[str, Any], reveal: bool = True) -> None:
        from burako_env.records import replay_steps

        self.record = record
        self.reveal = reveal
        self.steps = list(replay_steps(record))
        agents = record["agents"]
        self.captions = ["the deal"] + [
            f"move {s.index}: player_{s.seat} ({agents[s.seat]}) — {s.description}" for s in self.steps[1:]
        ]

    def __len__(self) -> int:
        return len(self.steps)

    def scene(self, index: int) -> Scene:
        return table_scene(self.steps[index].state, reveal=self.reveal, caption=self.captions[index])

    def frame(self, index: int) -> np.ndarray:
        return scene_image(self.scene(index))

    def svg(self, index: int) -> str:
        return scene_svg(self.scene(index))

    def html(self, indices: Iterable[int] | None = None) -> str:
        """A self-contained step-through viewer of the chosen positions (default: all)."""
        chosen = list(range(len(self))) if indices is None else list(indices)
        uid = f"burako-replay-{uuid.uuid4().hex[:12]}"  # unique even when shown twice
        js = uid.replace("-", "_")  # the viewer's JavaScript function names
        frames = "".join(
            f'<div class="frame" style="display:{"block" if n == 0 else "none"}">{self.svg(i)}</div>'
            for n, i in enumerate(chosen)
        )
        last = len(chosen) - 1
        return f"""<div id="{uid}">
<div style="margin:4px 0">
<button onclick="burakoStep_{js}(-1)">◀ previous</button>
<input type="range" min="0" max="{last}" value="0" style="width:420px"
 oninput="burakoShow_{js}(parseInt(this.value))">
<button onclick="burakoStep_{js}(1)">next ▶</button>
<span class="counter">1 / {last + 1}</span>
</div>{frames}
<script>
(function() {{
  var root = document.getElementById("{uid}"), at = 0;
  var frames = root.getElementsByClassName("frame"), slider = root.querySelector("input");
  window["burakoShow_{js}"] = function(i) {{
    i = Math.max(0, Math.min({last}, i)); frames[at].style.display = "none";
    frames[i].style.display = "block"; at = i; slider.value = i;
    root.querySelector(".counter").textContent = (i + 1) + " / {last + 1}";
  }};
  window["burakoStep_{js}"] = function(d) {{ window["burakoShow_{js}"](at + d); }};
}})();
</script></div>"""

    def _repr_html_(self) -> str:
        return self.html()
