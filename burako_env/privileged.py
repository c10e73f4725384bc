"""What a seat cannot see, as numbers: the input of a training critic (``privileged_value``).

A seat's observation (observation.py) holds only what E2 lets it see. In training,
a value function may read more: its estimate only weighs the policy's updates (the
advantages), and it is not used to play. Where the result of a hand turns on the other
hands and on the order of the stock, a critic that knows them explains more of the result,
so the advantages the policy learns from carry less of the deal's luck (an "asymmetric"
or "privileged" critic, as in PerfectDou and Suphx). The policy never reads these features.

Layout (``privileged_size(num_players)`` floats, counts halved so a full pair reads 1):

| segment      | size                  | content                                                  |
|--------------|-----------------------|----------------------------------------------------------|
| other hands  | (num_players-1) x 53  | each other seat's hand, copies per tile kind / 2, in    |
|              |                       | turn order from the seat after this one                  |
| stock        | 53                    | the stock's copies per kind / 2                          |
| muertos      | 53                    | the untaken muertos' copies per kind / 2                 |
| next draws   | NEXT_DRAWS x 53       | one-hot of the stock's top tile, then the one under it   |
|              |                       | (all zeros past the stock's end)                         |

One function computes it from batched arrays (:func:`privileged_features`); the compiled
core's states (``BurakoVectorEnv.privileged``) and a readable ``GameState``
(:func:`privileged_of_state`) both go through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from burako_env.tiles import NUM_KINDS

if TYPE_CHECKING:
    from burako_env.engine import GameState

#: how many of the stock's next tiles the features name (the seat's next draw, then the next seat's)
NEXT_DRAWS = 2


def privileged_size(num_players: int) -> int:
    """Floats per row of :func:`privileged_features`."""
    return (num_players - 1 + 2 + NEXT_DRAWS) * NUM_KINDS


def privileged_features(
    hands: np.ndarray,
    stock: np.ndarray,
    stock_len: np.ndarray,
    muertos: np.ndarray,
    muerto_len: np.ndarray,
    seats: np.ndarray,
) -> np.ndarray:
    """Rows of the layout above, one per ``seats[r]``, from ``hands`` (rows x players x 53 counts),
    ``stock`` (rows x S tile kinds, the top at ``stock_len - 1``), ``muertos`` (rows x sides x M tile
    kinds, the first ``muerto_len`` of each in play; 0 once taken)."""
    rows, num_players, _ = hands.shape
    r = np.arange(rows)
    seats = np.asarray(seats, dtype=np.int64)
    out = np.zeros((rows, privileged_size(num_players)), dtype=np.float32)
    others = (seats[:, None] + np.arange(1, num_players)[None, :]) % num_players
    width = (num_players - 1) * NUM_KINDS
    out[:, :width] = 0.5 * hands[r[:, None], others].reshape(rows, width)
    stock_len = np.asarray(stock_len, dtype=np.int64)
    in_stock = np.arange(stock.shape[1])[None, :] < stock_len[:, None]
    out[:, width : width + NUM_KINDS] = 0.5 * _counts(stock, in_stock, rows)
    width += NUM_KINDS
    muerto_len = np.asarray(muerto_len, dtype=np.int64)
    in_muerto = np.arange(muertos.shape[2])[None, None, :] < muerto_len[:, :, None]
    out[:, width : width + NUM_KINDS] = 0.5 * _counts(muertos.reshape(rows, -1), in_muerto.reshape(rows, -1), rows)
    width += NUM_KINDS
    for depth in range(NEXT_DRAWS):
        has = stock_len > depth
        tiles = stock[r[has], stock_len[has] - 1 - depth]
        out[r[has], width + depth * NUM_KINDS + tiles] = 1.0
    return out


def _counts(kinds: np.ndarray, valid: np.ndarray, rows: int) -> np.ndarray:
    """Per row, how many of its valid entries hold each tile kind (rows x 53)."""
    flat = (np.arange(rows)[:, None] * NUM_KINDS + kinds)[valid]
    return np.bincount(flat, minlength=rows * NUM_KINDS).reshape(rows, NUM_KINDS)


def privileged_of_state(state: GameState, seat: int) -> np.ndarray:
    """The layout's row for ``seat`` of a readable game state."""
    stock = np.asarray(state.stock, dtype=np.int64)
    longest = max([len(m) for m in state.muertos] + [1])
    muertos = np.zeros((1, len(state.muertos), longest), dtype=np.int64)
    for side, muerto in enumerate(state.muertos):
        muertos[0, side, : len(muerto)] = muerto
    return privileged_features(
        np.asarray(state.hands, dtype=np.int64)[None],
        stock[None] if stock.size else np.zeros((1, 1), dtype=np.int64),
        np.array([stock.size]),
        muertos,
        np.array([[len(m) for m in state.muertos]]),
        np.array([seat]),
    )[0]
