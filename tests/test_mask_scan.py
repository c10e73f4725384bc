"""The rollout's compiled pass over the masks (training/mask_scan.py) equals numpy's passes."""

from __future__ import annotations

import numpy as np
import pytest

from burako_env.actions import NUM_ACTIONS
from burako_env.vector import BurakoVectorEnv, sample_legal_actions
from training.mask_scan import MaskScan, pack_pairs


def numpy_figures(masks: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the rollout computed before the scan: counts, first legal action, the games' pairs."""
    counts = masks.astype(bool).sum(axis=1)
    first = np.where(counts > 0, masks.astype(bool).argmax(axis=1), -1)
    rows, cols = np.nonzero(masks[games].astype(bool))
    return counts, first, rows, cols


def random_masks(rng: np.random.Generator, games: int, actions: int, density: float) -> np.ndarray:
    masks = (rng.random((games, actions)) < density).astype(np.int8)
    masks[0] = 0  # a game with no legal action
    if games > 2:
        masks[2, -1] = 1  # the last byte of a row: the tail after the last whole word or line
    return masks


@pytest.mark.parametrize(
    ("games", "actions", "density"),
    [(7, NUM_ACTIONS, 0.003), (256, NUM_ACTIONS, 0.003), (5, 13, 0.3), (3, 9, 1.0), (1, 1, 1.0), (40, 100, 0.9)],
)
def test_scan_gives_numpys_counts_first_actions_pairs_and_packed_masks(
    games: int, actions: int, density: float
) -> None:
    """Shapes whose byte count is not a multiple of a word or a line, empty rows, full rows (more pairs
    than the first buffer holds: it grows and the scan runs again)."""
    rng = np.random.default_rng(games * actions)
    masks = random_masks(rng, games, actions, density)
    scan = MaskScan(games, actions)
    for step in range(2):  # the buffers kept from the first step must not leak into the second
        if step:
            masks = random_masks(rng, games, actions, density / 2)
        chosen = np.sort(rng.choice(games, size=max(1, games // 2), replace=False)).astype(np.int64)
        counts, first, rows, cols = numpy_figures(masks, chosen)
        scan.scan(masks)
        np.testing.assert_array_equal(scan.counts, counts)
        np.testing.assert_array_equal(scan.first, first)
        got_rows, got_cols = scan.select(chosen)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_array_equal(got_cols, cols)
        packed = np.full((games + 3, (actions + 7) // 8), 0xFF, dtype=np.uint8)  # stale bits must be cleared
        targets = rng.permutation(games + 3)[: chosen.size].astype(np.int64)
        pack_pairs(got_rows, got_cols, packed, targets)
        np.testing.assert_array_equal(packed[targets], np.packbits(masks[chosen].astype(bool), axis=1))


def test_scan_reads_a_vector_envs_masks_in_play() -> None:
    env = BurakoVectorEnv(16, 2, num_threads=1)
    env.reset(seed=list(range(16)))
    rng = np.random.default_rng(1)
    scan = MaskScan(16, NUM_ACTIONS)
    games = np.arange(0, 16, 3, dtype=np.int64)
    for _ in range(40):
        counts, first, rows, cols = numpy_figures(env.masks, games)
        scan.scan(env.masks)
        np.testing.assert_array_equal(scan.counts, counts)
        np.testing.assert_array_equal(scan.first, first)
        got = scan.select(games)
        np.testing.assert_array_equal(got[0], rows)
        np.testing.assert_array_equal(got[1], cols)
        env.step(sample_legal_actions(env.masks, rng))


def test_scan_refuses_masks_it_cannot_read() -> None:
    scan = MaskScan(4, 10)
    with pytest.raises(ValueError, match="shape"):
        scan.scan(np.zeros((4, 11), dtype=np.int8))
    with pytest.raises(ValueError, match="C-contiguous"):
        scan.scan(np.zeros((10, 4), dtype=np.int8).T)
