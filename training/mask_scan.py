"""The rollout's one pass over its games' legal-action masks, compiled (``VectorRollout.step``).

Each step the batched rollout needs, from the env's int8 masks (games x 3,519 actions, 0/1):

| what | for |
|---|---|
| ``counts[g]``, each game's legal count | a game with one legal action moves without a forward pass |
| ``first[g]``, its first legal action | that move |
| the learner games' (row, action) pairs | the legal logits and the draw (``training.network.sample_actions``) |
| the learner games' masks, bit-packed | the decision store (``DecisionStore.put``) |

As numpy ops these were five passes over the 0.9 MB of a 256-game step's masks (an int32 sum, an argmax,
a gather, ``np.packbits``, a flat ``nonzero``: ~270 us a step, ~2 us a learner decision, bench/README.md).
A position has ~9 legal actions of 3,519, so :func:`_scan` reads the masks eight bytes at a time and
opens only the words that hold one; every legal (game, action) pair is listed once, games in order,
actions ascending (``np.nonzero``'s order, so the draws are the numpy path's), and the learner rows' pairs
and packed masks are cut from that list (:meth:`MaskScan.select`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _scan(
    words: np.ndarray, flat: np.ndarray, num_actions: int, counts: np.ndarray, first: np.ndarray, cols: np.ndarray
) -> int:  # pragma: no cover - compiled
    """``counts``/``first`` per game and the actions of every legal pair, in order, into ``cols`` (as many as
    fit); returns the number of pairs. ``words`` is ``flat``'s whole 8-byte words, read as uint64."""
    counts[:] = 0
    first[:] = -1
    total = 0
    n_words = words.shape[0]
    n_lines = n_words // 8
    for w in range(n_lines):  # a cache line's eight words at a time: almost all are empty
        line = words[w * 8 : w * 8 + 8]
        if line[0] | line[1] | line[2] | line[3] | line[4] | line[5] | line[6] | line[7] == 0:
            continue
        for v in range(w * 8, w * 8 + 8):
            if words[v] != 0:
                total = _note_bytes(flat, v * 8, v * 8 + 8, num_actions, counts, first, cols, total)
    for v in range(n_lines * 8, n_words):
        if words[v] != 0:
            total = _note_bytes(flat, v * 8, v * 8 + 8, num_actions, counts, first, cols, total)
    return _note_bytes(flat, n_words * 8, flat.shape[0], num_actions, counts, first, cols, total)


@njit(cache=True, nogil=True, inline="always")
def _note_bytes(
    flat: np.ndarray,
    start: int,
    stop: int,
    num_actions: int,
    counts: np.ndarray,
    first: np.ndarray,
    cols: np.ndarray,
    total: int,
) -> int:  # pragma: no cover - compiled
    """The legal actions among ``flat[start:stop]`` noted (``_scan``); returns the pairs counted so far."""
    for p in range(start, stop):
        if flat[p] != 0:
            game = p // num_actions
            action = p - game * num_actions
            if counts[game] == 0:
                first[game] = action
            counts[game] += 1
            if total < cols.shape[0]:
                cols[total] = action
            total += 1
    return total


@njit(cache=True, nogil=True)
def _select(
    games: np.ndarray,
    counts: np.ndarray,
    starts: np.ndarray,
    cols: np.ndarray,
    out_rows: np.ndarray,
    out_cols: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The pairs of ``games`` (rows numbered 0..len(games)-1) into ``out_rows``/``out_cols``."""
    q = 0
    for k in range(games.shape[0]):
        g = games[k]
        s = starts[g]
        for j in range(counts[g]):
            out_rows[q] = k
            out_cols[q] = cols[s + j]
            q += 1


@njit(cache=True, nogil=True)
def pack_pairs(rows: np.ndarray, cols: np.ndarray, packed: np.ndarray, targets: np.ndarray) -> None:  # pragma: no cover
    """``packed[targets[k]]`` = row k's mask as ``np.packbits`` packs it (first action in a byte's high bit), from
    the pairs ``(rows, cols)`` (rows numbered 0..len(targets)-1)."""
    for k in range(targets.shape[0]):
        packed[targets[k], :] = 0
    for q in range(rows.shape[0]):
        c = cols[q]
        packed[targets[rows[q]], c >> 3] |= np.uint8(0x80 >> (c & 7))


class MaskScan:
    """One step's masks scanned once (:meth:`scan`); then :attr:`counts`, :attr:`first` and, per set of
    games, their pairs (:meth:`select`). Buffers are kept between steps; the pairs' grows when a step has
    more legal pairs than it holds (the scan is then run again)."""

    def __init__(self, num_games: int, num_actions: int) -> None:
        self.num_actions = num_actions
        self.counts = np.zeros(num_games, dtype=np.int64)
        self.first = np.zeros(num_games, dtype=np.int64)
        self.starts = np.zeros(num_games, dtype=np.int64)
        self._cols = np.zeros(64 * max(num_games, 1), dtype=np.int64)

    def scan(self, masks: np.ndarray) -> None:
        """Read ``masks`` (games x actions, int8 or bool, C-contiguous)."""
        expected = (self.counts.shape[0], self.num_actions)
        if masks.shape != expected:
            raise ValueError(f"MaskScan.scan: masks of shape {masks.shape}, expected {expected}")
        if not masks.flags.c_contiguous:
            raise ValueError("MaskScan.scan: masks must be C-contiguous")
        flat = masks.reshape(-1).view(np.uint8)
        words = flat[: flat.shape[0] // 8 * 8].view(np.uint64)
        total = _scan(words, flat, self.num_actions, self.counts, self.first, self._cols)
        if total > self._cols.shape[0]:
            self._cols = np.zeros(2 * total, dtype=np.int64)
            _scan(words, flat, self.num_actions, self.counts, self.first, self._cols)
        np.cumsum(self.counts[:-1], out=self.starts[1:])

    def select(self, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The legal pairs of ``games`` (int64, each in range): rows 0..len(games)-1, actions ascending."""
        rows = np.empty(int(self.counts[games].sum()), dtype=np.int64)
        cols = np.empty_like(rows)
        _select(games, self.counts, self.starts, self._cols, rows, cols)
        return rows, cols


def compile_kernels() -> None:
    """Compile (or load from numba's cache) this module's kernels: a first rollout step does not wait."""
    scan = MaskScan(3, 10)
    masks = np.zeros((3, 10), dtype=np.int8)
    masks[0, 3] = masks[2, [1, 9]] = 1
    scan.scan(masks)
    rows, cols = scan.select(np.array([0, 2], dtype=np.int64))
    pack_pairs(rows, cols, np.zeros((2, 2), dtype=np.uint8), np.array([1, 0], dtype=np.int64))
