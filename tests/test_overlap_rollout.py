"""``overlap_rollout``: the next batch's games are played in a second thread while the update learns
from the batch before (training/ppo.py, ``Trainer._overlapped``)."""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import wait
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.test_training_vector import thread_counts_on, vector_config
from training import ppo
from training.network import evaluate_actions
from training.ppo import Trainer
from training.rollout import episode_batch


def overlapped(tmp_path: Path, **overrides: object) -> Trainer:
    return Trainer(vector_config(tmp_path, overlap_rollout=True, torch_threads=1, **overrides), progress=False)


def close(trainer: Trainer) -> None:
    trainer.close()
    trainer.writer.close()
    trainer.lock.release()


def stored_log_probs_under(net: torch.nn.Module, episodes: list) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities ``net`` gives the stored actions, the stored behaviour log-probabilities)."""
    batch = episode_batch(episodes)
    masks = torch.from_numpy(np.unpackbits(batch["packed_masks"], axis=1, count=net.shape.num_actions).astype(bool))
    with torch.no_grad():
        logp, _, _ = evaluate_actions(net, torch.from_numpy(batch["obs"]), masks, torch.from_numpy(batch["actions"]))
    return logp, torch.from_numpy(batch["logprobs"])


def test_the_overlapped_rollout_acts_with_the_weights_from_before_the_update_beside_it(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path)
    try:
        first = copy.deepcopy(trainer.net)
        trainer.collect_and_update()  # the first batch alone, then its update beside the second batch's games
        assert trainer._ready is not None
        collected = trainer.rollout_decisions
        before = copy.deepcopy(trainer.net)
        # hands carry over between rollouts: the rows of hands in play now were stored by the call before
        carried = {row for hand in trainer.rollout.live for seat in hand for row in seat}
        stats, rollout_seconds, update_seconds = trainer.collect_and_update()
        # the update learned from the batch the call before collected ...
        assert stats["batch_decisions"] == collected
        # ... while the games beside it were played by the weights from before that update, one update behind
        rows = np.concatenate([ep.rows for ep in trainer._ready])
        new = torch.from_numpy(~np.isin(rows, list(carried)))
        assert 0 < int(new.sum()) < rows.size
        logp_before, stored = stored_log_probs_under(before, trainer._ready)
        logp_after, _ = stored_log_probs_under(trainer.net, trainer._ready)
        logp_first, _ = stored_log_probs_under(first, trainer._ready)
        assert torch.allclose(logp_before[new], stored[new], atol=1e-5)
        assert not torch.allclose(logp_after[new], stored[new], atol=1e-5)
        # the carried rows were played by the first weights (both rollouts of the first call acted with them)
        assert torch.allclose(logp_first[~new], stored[~new], atol=1e-5)
        assert 0 < trainer.loop_seconds < rollout_seconds + update_seconds + 1.0
        assert trainer.rollout_decisions == sum(ep.rows.size for ep in trainer._ready) >= trainer.cfg.batch_size
    finally:
        close(trainer)


def test_the_batch_being_learned_keeps_its_rows_while_the_next_one_is_played(tmp_path: Path) -> None:
    """The rollout beside an update must not be handed the rows the update reads; they go back to the
    store at the collect after, so the store holds the hands in play and two batches, not more."""
    trainer = overlapped(tmp_path)
    try:
        trainer.collect_and_update()
        sizes = []
        for _ in range(4):
            learning = trainer._ready
            assert learning is not None
            rows = np.concatenate([ep.rows for ep in learning])
            saved = {name: array.copy() for name, array in episode_batch(learning).items()}
            trainer.collect_and_update()
            next_rows = np.concatenate([ep.rows for ep in trainer._ready])
            assert not set(rows.tolist()) & set(next_rows.tolist())
            for name, array in episode_batch(learning).items():  # unchanged while it was learned from
                assert np.array_equal(array, saved[name]), name
            sizes.append(trainer.rollout.store.size)
        in_play_bound = 2 * trainer.cfg.batch_size + 300 * trainer.cfg.num_envs
        assert max(sizes) < in_play_bound
    finally:
        close(trainer)


def test_an_overlapped_run_repeats_itself_and_its_checkpoint_keeps_the_updates_generator(tmp_path: Path) -> None:
    """The games draw from the trainer's generator in one thread while the update shuffles in the other:
    each has its own, so two runs of one seed learn the same weights, and a resume continues both."""
    weights = []
    for run in ("a", "b"):
        trainer = overlapped(tmp_path / run)
        try:
            for _ in range(3):
                trainer.collect_and_update()
            weights.append([p.detach().clone() for p in trainer.net.parameters()])
            assert trainer.update_rng is not trainer.rng
            trainer.update, trainer.started = 3, time.perf_counter()  # as train() sets them
            trainer.save_checkpoint()
            state = trainer.update_rng.bit_generator.state
            run_dir = trainer.run_dir
        finally:
            close(trainer)
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))
    resumed = Trainer(
        vector_config(tmp_path / "b", overlap_rollout=True, torch_threads=1), resume=run_dir, progress=False
    )
    try:
        assert resumed.update_rng.bit_generator.state == state
        assert resumed._ready is None  # the batch collected before the stop is played afresh
        stats, _, _ = resumed.collect_and_update()
        assert stats["batch_decisions"] >= resumed.cfg.batch_size
    finally:
        close(resumed)


def test_the_update_keeps_the_rollouts_torch_threads_when_overlapped(tmp_path: Path) -> None:
    """update_threads: null keeps ``torch_threads`` for the whole overlapped update."""
    trainer = overlapped(tmp_path, update_threads=None)
    seen = thread_counts_on(trainer, "_ppo_epochs")
    try:
        trainer.collect_and_update()
        steps = thread_counts_on(trainer.optimizer, "step")  # one a minibatch
        stats, _, _ = trainer.collect_and_update()
        assert seen == [1, 1] and set(steps) == {1} and torch.get_num_threads() == 1
        assert "wide_minibatches" not in stats
    finally:
        close(trainer)


def test_the_overlapped_update_widens_to_update_threads_once_the_rollout_is_done(tmp_path: Path) -> None:
    """update_threads: 2 with overlap_rollout: the minibatches after the games beside the update are done
    run on two threads, those before on ``torch_threads``; the rollout's count comes back after."""
    trainer = overlapped(tmp_path, update_threads=2, minibatch_size=32, update_epochs=3, target_kl=None)
    try:
        trainer.collect_and_update()
        steps = thread_counts_on(trainer.optimizer, "step")  # one a minibatch
        released = threading.Event()
        step = trainer.optimizer.step

        def releasing(*args: object, **kwargs: object) -> object:
            if len(steps) == 3:  # three minibatches learned: the games beside the update end in this one
                released.set()
                beside = trainer._rollout_beside
                assert beside is not None
                wait([beside], timeout=60)
            return step(*args, **kwargs)

        def held_collect() -> list:
            assert released.wait(timeout=60)
            return []

        trainer.optimizer.step = releasing  # type: ignore[method-assign]
        trainer.collect = held_collect  # type: ignore[method-assign]
        stats, _, _ = trainer.collect_and_update()
        assert steps[:4] == [1] * 4 and steps[4:] == [2] * (len(steps) - 4)  # widened from the fifth
        assert stats["wide_minibatches"] == len(steps) - 4 > 0
        assert torch.get_num_threads() == 1
    finally:
        close(trainer)


def test_an_error_in_the_overlapped_rollout_reaches_the_caller_with_no_game_moving(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path)
    try:
        trainer.collect_and_update()
        step = trainer.rollout.step
        calls = []

        def failing(finished: list) -> int:
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("a broken game")
            return step(finished)

        trainer.rollout.step = failing  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="a broken game"):
            trainer.collect_and_update()
        assert trainer._overlap is not None and trainer._overlap._work_queue.empty()
        assert len(calls) == 3  # the thread stopped at the error: no step after it
    finally:
        close(trainer)


def test_overlap_rollout_needs_the_batched_rollout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="overlap_rollout needs rollout: vector"):
        vector_config(tmp_path, rollout="engine", overlap_rollout=True)


def test_proximal_clip_needs_the_overlap(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="proximal_clip needs overlap_rollout"):
        vector_config(tmp_path, proximal_clip=True)


def test_proximal_clip_clips_against_the_network_as_the_update_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoupled PPO: the ratio's anchor is the network the update starts from, not the older one that
    played the batch. The first update's batch was played by the network it starts from, so it learns
    what the plain objective learns; from the second on the anchors are the newer network's."""
    plain = overlapped(tmp_path / "plain")  # one trainer at a time: the rollouts draw from torch's global generator
    try:
        first_plain, _, _ = plain.collect_and_update()
        plain_weights = [p.detach().clone() for p in plain.net.parameters()]
    finally:
        close(plain)
    assert "behaviour_kl" not in first_plain
    proximal = overlapped(tmp_path / "proximal", proximal_clip=True)
    anchors: list[torch.Tensor] = []
    record = proximal._proximal_logp

    def recording(*args: object, **kwargs: object) -> torch.Tensor:
        anchors.append(record(*args, **kwargs))  # type: ignore[arg-type]
        return anchors[-1]

    proximal._proximal_logp = recording  # type: ignore[method-assign]
    try:
        first, _, _ = proximal.collect_and_update()
        for a, b in zip(plain_weights, proximal.net.parameters(), strict=True):
            assert torch.allclose(a, b, atol=1e-6)
        assert abs(first["behaviour_kl"]) < 1e-6
        assert first["policy_loss"] == pytest.approx(first_plain["policy_loss"], abs=1e-6)
        start = copy.deepcopy(proximal.net)
        learning = proximal._ready
        assert learning is not None
        losses: list[tuple[torch.Tensor, torch.Tensor | None]] = []
        plain_loss = ppo.policy_loss

        def recording_loss(ratio, advantages, clip_coef, weights=None):  # type: ignore[no-untyped-def]
            losses.append((ratio.detach().clone(), weights))
            return plain_loss(ratio, advantages, clip_coef, weights)

        monkeypatch.setattr(ppo, "policy_loss", recording_loss)
        second, _, _ = proximal.collect_and_update()
        # the first minibatch's ratios: the network has not moved from its anchor yet
        ratio, weights = losses[0]
        assert torch.allclose(ratio, torch.ones_like(ratio), atol=1e-5)
        assert weights is not None and weights.max() <= ppo.BEHAVIOUR_WEIGHT_MAX
        under_start, stored = stored_log_probs_under(start, learning)
        assert torch.allclose(anchors[-1], under_start, atol=1e-5)
        assert not torch.allclose(anchors[-1], stored, atol=1e-5)  # one update behind: another policy
        lag = anchors[-1] - stored
        assert second["behaviour_kl"] == pytest.approx(float((lag.exp() - 1 - lag).mean()), rel=1e-3)
        assert second["behaviour_kl"] > 1e-8
        assert 0 <= second["behaviour_weight_capped"] < 1
    finally:
        close(proximal)
