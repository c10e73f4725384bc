"""``update_process``: the overlapped loop with the update in a process of its own
(training/update_process.py, ``Trainer._overlapped_in_process``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.test_training_vector import vector_config
from training.ppo import Trainer
from training.rollout import DecisionStore
from training.update_process import LearnerError, SharedArrays


def overlapped(tmp_path: Path, **overrides: object) -> Trainer:
    values: dict[str, object] = {"overlap_rollout": True, "torch_threads": 1, "update_threads": None, **overrides}
    return Trainer(vector_config(tmp_path, **values), progress=False)


def close(trainer: Trainer) -> None:
    trainer.close()
    trainer.writer.close()
    trainer.lock.release()


def weights(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.net.parameters()]


def test_the_learner_process_learns_what_the_update_in_this_process_learns(tmp_path: Path) -> None:
    """Same seed, the update beside the games in a thread or in the learner process: the same games,
    the same minibatches, the same weights and statistics after every update (one torch thread each) to
    float rounding (numpy's and torch's sums round by the arrays' alignment, which differs between the
    processes), also when the decision store grows into a new shared segment between updates; the
    checkpoint then holds the learner's optimiser and update generator."""
    runs = {}
    for mode in ("thread", "process"):
        trainer = overlapped(tmp_path / mode, update_process=mode == "process")
        try:
            seen = []
            for update in range(3):
                if update == 2:  # the next batch's rows move to a grown array (a new segment in process mode)
                    trainer.rollout.store._grow(trainer.rollout.store.capacity)
                stats, _, _ = trainer.collect_and_update()
                seen.append((stats, weights(trainer)))
            trainer.update, trainer.started = 3, time.perf_counter()  # as train() sets them
            trainer.save_checkpoint()
            runs[mode] = (seen, trainer.optimizer.state_dict(), trainer.update_rng.bit_generator.state)
        finally:
            close(trainer)
    (thread_seen, thread_opt, thread_rng), (process_seen, process_opt, process_rng) = runs["thread"], runs["process"]
    for (thread_stats, thread_weights), (process_stats, process_weights) in zip(thread_seen, process_seen, strict=True):
        assert thread_stats.keys() == process_stats.keys()
        for key, value in thread_stats.items():
            assert process_stats[key] == pytest.approx(value, rel=1e-4, abs=1e-7), key
        pairs = zip(thread_weights, process_weights, strict=True)
        assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in pairs)
    assert any(not torch.equal(a, b) for a, b in zip(thread_seen[0][1], thread_seen[2][1], strict=True))  # it learns
    assert process_rng == thread_rng
    for a, b in zip(thread_opt["state"].values(), process_opt["state"].values(), strict=True):
        assert all(torch.allclose(a[key], b[key], rtol=1e-4, atol=1e-7) for key in a)


def test_a_run_resumed_from_a_learner_process_checkpoint_goes_on(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path, update_process=True)
    try:
        for _ in range(2):
            trainer.collect_and_update()
        trainer.update, trainer.started = 2, time.perf_counter()
        trainer.save_checkpoint()
        state = trainer.update_rng.bit_generator.state
        learned = weights(trainer)
        run_dir = trainer.run_dir
    finally:
        close(trainer)
    resumed = Trainer(
        vector_config(tmp_path, overlap_rollout=True, torch_threads=1, update_process=True),
        resume=run_dir,
        progress=False,
    )
    try:
        assert resumed.update_rng.bit_generator.state == state
        assert all(torch.equal(a, b) for a, b in zip(learned, weights(resumed), strict=True))
        stats, _, _ = resumed.collect_and_update()
        assert stats["batch_decisions"] >= resumed.cfg.batch_size
        assert any(not torch.equal(a, b) for a, b in zip(learned, weights(resumed), strict=True))
    finally:
        close(resumed)


def test_an_error_in_the_games_lets_the_update_under_way_end_and_the_next_call_go_on(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path, update_process=True)
    try:
        trainer.collect_and_update()
        before = weights(trainer)
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
        assert len(calls) == 3
        # the update beside the games ended and its network came back, as in the thread version
        assert any(not torch.equal(a, b) for a, b in zip(before, weights(trainer), strict=True))
        trainer.rollout.step = step  # type: ignore[method-assign]
        stats, _, _ = trainer.collect_and_update()  # the learner is not left waiting on an answer
        assert stats["batch_decisions"] >= trainer.cfg.batch_size
    finally:
        close(trainer)


def test_an_error_in_the_learner_reaches_the_caller_with_its_traceback(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path, update_process=True)
    try:
        trainer.collect_and_update()
        learner = trainer._learner
        assert learner is not None
        original_begin = learner.begin

        def broken_begin(job: dict) -> None:
            original_begin({**job, "lengths": job["lengths"][:-1]})  # one episode's length lost on the way

        learner.begin = broken_begin  # type: ignore[method-assign]
        with pytest.raises(LearnerError, match=r"the learner process failed:(.|\n)*Traceback"):
            trainer.collect_and_update()
        assert learner.process.is_alive()  # it answered, and waits for the next request
    finally:
        close(trainer)


def test_closing_stops_the_learner_and_frees_the_shared_observations(tmp_path: Path) -> None:
    trainer = overlapped(tmp_path, update_process=True)
    trainer.collect_and_update()
    learner, arrays = trainer._learner, trainer.shared_arrays
    assert learner is not None and arrays is not None
    name = arrays.name_of(trainer.rollout.store.obs)
    assert Path("/dev/shm", name.lstrip("/")).exists()
    close(trainer)
    assert not learner.process.is_alive() and learner.process.exitcode == 0
    assert not Path("/dev/shm", name.lstrip("/")).exists()


def test_a_store_in_shared_memory_grows_into_a_new_segment_and_keeps_its_rows() -> None:
    arrays = SharedArrays()
    try:
        store = DecisionStore(5, num_actions=9, capacity=2, obs_zeros=arrays.zeros)
        first = store.put(np.ones((2, 5), dtype=np.float32), np.ones((2, 9), dtype=bool))
        old, old_name = store.obs, arrays.name_of(store.obs)
        store.put(np.full((3, 5), 2.0, dtype=np.float32), np.ones((3, 9), dtype=bool))
        assert store.capacity >= 5 and arrays.name_of(store.obs) != old_name
        assert np.array_equal(store.obs[first], np.ones((2, 5)))
        arrays.retire_all_but(store.obs)
        with pytest.raises(ValueError, match="not one of these segments"):
            arrays.name_of(old)
    finally:
        arrays.close()


def test_update_process_needs_the_overlapped_loop(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="update_process needs overlap_rollout"):
        vector_config(tmp_path, update_process=True)
