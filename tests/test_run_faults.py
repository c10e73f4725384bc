"""Faults during long runs and runs that share a folder (issue 14, items 6, 7, 8):
agents whose process dies, exits or hangs become recorded forfeits; output
folders and files are locked; resumed journals must match the run; clear
errors for the smaller faults of the command lines."""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.random_agent import RandomAgent
from training import tournament as T


class DyingAgent:
    """A random agent that, in seat ``seat`` at its ``after``-th decision, ends
    its process (``how="os_exit"``), calls ``sys.exit`` (``how="sys_exit"``),
    or never answers (``how="hang"``; ``how="stuck"``: not even to a signal)."""

    name = "dying"

    def __init__(self, seed: int | None = None, how: str = "os_exit", seat: int = 0, after: int = 2) -> None:
        self.inner = RandomAgent(seed=seed)
        self.how, self.fault_seat, self.after = how, seat, after
        self.calls = 0
        self.seat = -1

    def reset(self, seat: int, rules: Any, num_players: int) -> None:
        self.calls, self.seat = 0, seat
        self.inner.reset(seat, rules, num_players)

    def act(self, observation: Any, view: Any) -> int:
        self.calls += 1
        if self.seat == self.fault_seat and self.calls > self.after:
            if self.how == "os_exit":
                os._exit(3)
            if self.how == "sys_exit":
                sys.exit("deliberate exit")
            if self.how == "stuck":  # as if stuck in C code: the SIGALRM of the move limit cannot interrupt it
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        return self.inner.act(observation, view)


def gauntlet(out: Path, challengers: list[dict[str, Any]], **overrides: Any) -> T.TournamentConfig:
    data: dict[str, Any] = {
        "participants": [{"name": "rand", "agent": "random"}, *challengers],
        "format": "gauntlet",
        "challengers": [c["name"] for c in challengers],
        "games_per_pairing": 2,
        "seed": 3,
        "workers": 1,
        "backend": "inprocess",
        "out": str(out),
        "ratings": {"bootstrap": 10},
    }
    data.update(overrides)
    return T.TournamentConfig.from_dict(data)


def forfeits(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["meta"]["forfeit"] for line in (out / T.FORFEITS).read_text().splitlines()]


def test_a_dead_or_hung_pool_worker_becomes_a_forfeit_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """os._exit in a pool worker, and an agent stuck past move_time_limit (its worker is stopped): one forfeit each."""
    from training import game_pool

    monkeypatch.setattr(game_pool, "HANG_GRACE_SECONDS", 0.5)
    agent = f"{__name__}:DyingAgent"
    config = gauntlet(
        tmp_path,
        [
            {"name": "exiter", "agent": agent, "options": {"how": "os_exit"}},
            {"name": "stuck", "agent": agent, "options": {"how": "stuck"}},
        ],
        backend="pool",
        move_time_limit=0.5,
        chunk_size=2,
    )
    start = time.perf_counter()
    result = T.run_tournament(config)
    assert time.perf_counter() - start < 120
    assert result.complete and len(result.rows) == 4
    faults = sorted(forfeits(tmp_path), key=lambda f: f["participant"])
    assert [(f["participant"], f["kind"], f["seat"]) for f in faults] == [
        ("exiter", "crash", 0),
        ("stuck", "timeout", 0),
    ]
    assert "exit code 3" in faults[0]["message"] and faults[0]["step"] >= 2
    assert "its process was stopped" in faults[1]["message"]
    # the other seating of each deal was played to the end
    assert len((tmp_path / T.RECORDS).read_text().splitlines()) == 2


def test_sys_exit_and_a_hang_in_process_are_forfeits_and_resume_does_not_replay_them(tmp_path: Path) -> None:
    agent = f"{__name__}:DyingAgent"
    config = gauntlet(
        tmp_path,
        [
            {"name": "quitter", "agent": agent, "options": {"how": "sys_exit"}},
            {"name": "hanger", "agent": agent, "options": {"how": "hang"}},
        ],
        move_time_limit=0.3,
    )
    result = T.run_tournament(config)
    assert result.complete
    faults = sorted(forfeits(tmp_path), key=lambda f: f["participant"])
    assert [(f["participant"], f["kind"]) for f in faults] == [("hanger", "timeout"), ("quitter", "exit")]
    assert "sys.exit('deliberate exit')" in faults[1]["message"]
    assert "did not answer within the move time limit (0.3 s)" in faults[0]["message"]
    assert T.run_tournament(config).played == 0


def test_move_time_limit_forfeits_a_slow_answer_in_process(tmp_path: Path) -> None:
    from agents.runner import AgentFault, play_game

    class Slow(RandomAgent):
        def act(self, observation: Any, view: Any) -> int:
            time.sleep(0.05)
            return super().act(observation, view)

    with pytest.raises(AgentFault) as info:  # main thread: interrupted by the alarm
        play_game([Slow(seed=1), RandomAgent(seed=2)], "burako", 2, 0, move_time_limit=0.01)
    assert info.value.kind == "timeout" and info.value.seat == 0 and "within the move time limit" in str(info.value)
    # another thread (no signals there): the limit is checked when the agent answers
    caught: list[BaseException] = []

    def play() -> None:
        try:
            play_game([Slow(seed=1), RandomAgent(seed=2)], "burako", 2, 0, move_time_limit=0.01)
        except AgentFault as exc:
            caught.append(exc)

    worker = threading.Thread(target=play)
    worker.start()
    worker.join(30)
    assert len(caught) == 1 and caught[0].kind == "timeout" and "the limit is 0.01 s" in str(caught[0])


def test_burako_eval_reports_a_dead_worker_clearly() -> None:
    from agents.runner import AgentFault
    from training.evaluate import AgentSpec, evaluate

    dying = AgentSpec.of("dying", {"how": "os_exit"}, factory=DyingAgent)
    with pytest.raises(AgentFault, match=r"a worker process died while playing deals 0\.\.0 of dying"):
        evaluate(dying, AgentSpec.of("random"), games=2, workers=2)


class RaisingAgent(RandomAgent):
    """A random agent that raises at its third decision."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed=seed)
        self.calls = 0

    def act(self, observation: Any, view: Any) -> int:
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError("deliberate fault in a worker")
        return super().act(observation, view)


def test_an_agent_fault_in_an_evaluation_worker_reaches_the_parent_whole() -> None:
    """training.game_pool sends a worker's exception back: burako-eval with workers reports it as in process."""
    from agents.runner import AgentFault
    from training.evaluate import AgentSpec, evaluate

    raising = AgentSpec.of("raising", factory=RaisingAgent)
    with pytest.raises(AgentFault, match=r"deliberate fault in a worker.*\[evaluation deal 0, seating 0\]") as info:
        evaluate(raising, AgentSpec.of("random"), games=2, workers=2)
    assert info.value.kind == "exception" and info.value.agent == "A:raising" and info.value.seat == 0
    assert "RemoteTraceback" in type(info.value.__cause__).__name__
    assert "deliberate fault in a worker" in str(info.value.__cause__)


class RummyFault:
    """A Rummy agent that raises, or ends its process, at its third decision."""

    name = "rummy-fault"

    def __init__(self, seed: int | None = None, how: str = "raise") -> None:
        self.how = how
        self.calls = 0

    def reset(self, seat: int, rules: Any = None, num_players: int = 2) -> None:
        pass

    def act(self, observation: Any) -> int:
        import numpy as np

        self.calls += 1
        if self.calls > 2:
            if self.how == "os_exit":
                os._exit(3)
            raise RuntimeError("deliberate fault in a Rummy worker")
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_a_rummy_evaluation_in_workers_reports_faults_and_dead_workers_as_burakos_does() -> None:
    """burako-eval --game rummy --workers 2 ran a bare ProcessPoolExecutor: a dead worker was a raw
    BrokenProcessPool traceback, and a fault let the other chunks play on. It now plays through
    training.game_pool as Burako does."""
    from agents.runner import AgentFault
    from training.evaluate import AgentSpec
    from training.rummy_evaluate import evaluate_rummy

    raising = AgentSpec.of("raising", {"how": "raise"}, factory=RummyFault)
    with pytest.raises(AgentFault, match="deliberate fault in a Rummy worker") as info:
        evaluate_rummy(raising, AgentSpec.of("random"), deals=6, workers=2, chunk_size=1)
    assert "RemoteTraceback" in type(info.value.__cause__).__name__
    dying = AgentSpec.of("dying", {"how": "os_exit"}, factory=RummyFault)
    with pytest.raises(AgentFault, match=r"a worker process died while playing deals (\d)\.\.\1 of dying"):
        evaluate_rummy(dying, AgentSpec.of("random"), deals=2, workers=2, chunk_size=1)


# ---------------------------------------------------------------------- item 7: runs that share a folder
def small(out: Path, seed: int = 7, **overrides: Any) -> T.TournamentConfig:
    data: dict[str, Any] = {
        "participants": ["random", {"name": "random2", "agent": "random"}],
        "games_per_pairing": 4,
        "seed": seed,
        "backend": "inprocess",
        "out": str(out),
        "ratings": {"bootstrap": 10},
    }
    data.update(overrides)
    return T.TournamentConfig.from_dict(data)


def test_two_evaluations_cannot_write_the_same_record(tmp_path: Path) -> None:
    from training.evaluate import AgentSpec, evaluate
    from training.locks import file_lock

    record = tmp_path / "games.jsonl"
    record.write_text("the first run's records\n", encoding="utf-8")
    held = file_lock(record, "the record file")  # what a running burako-eval holds
    try:
        with pytest.raises(ValueError, match="another process is using the record file"):
            evaluate(AgentSpec.of("random"), AgentSpec.of("random"), games=2, record_path=record)
        assert record.read_text(encoding="utf-8") == "the first run's records\n"
    finally:
        held.release()
    evaluate(AgentSpec.of("random"), AgentSpec.of("random"), games=2, record_path=record)
    assert len(record.read_text(encoding="utf-8").splitlines()) == 2


def test_two_tournaments_in_one_folder(tmp_path: Path) -> None:
    """A running tournament locks its folder; games of another seed are never published as this run's."""
    from training.locks import folder_lock

    tmp_path.mkdir(exist_ok=True)
    held = folder_lock(tmp_path, "the tournament folder")
    try:
        with pytest.raises(T.TournamentError, match="another process is using the tournament folder"):
            T.run_tournament(small(tmp_path, seed=8))
    finally:
        held.release()
    # the journals of a seed-8 run under a folder whose config says seed 7 (what two interleaved runs left)
    seed8 = tmp_path / "eight"
    T.run_tournament(small(seed8, seed=8))
    seed7 = tmp_path / "seven"
    T.run_tournament(small(seed7, seed=7), max_games=1)
    (seed7 / T.RECORDS).write_bytes((seed8 / T.RECORDS).read_bytes())
    config_before = (seed7 / "config.yaml").read_bytes()
    with pytest.raises(T.TournamentError, match="has seed 8, but this run has 7"):
        T.run_tournament(small(seed7, seed=7))
    # a refused run leaves the folder's config.yaml alone
    assert (seed7 / "config.yaml").read_bytes() == config_before
    with pytest.raises(T.TournamentError, match="does not schedule"):
        T.run_tournament(small(seed8, seed=8, games_per_pairing=2, format="round_robin"))
    assert "seed: 8" in (seed8 / "config.yaml").read_text(encoding="utf-8")


def test_training_run_folders_never_collide_and_are_locked(tmp_path: Path) -> None:
    from training.locks import LockedError
    from training.ppo import PPOConfig, Trainer, new_run_dir

    config = PPOConfig(run_root=str(tmp_path), num_envs=1, hidden=16, slot_embed=4)
    first, second = (new_run_dir(tmp_path, "burako2p", config) for _ in range(2))
    assert first != second and first.is_dir() and second.is_dir()
    assert second.name == first.name + "-2" or second.name[:-2] != first.name  # same second, or the clock moved
    trainer = Trainer(config, progress=False)
    trainer.started = time.perf_counter()
    trainer.save_checkpoint()
    with pytest.raises(LockedError, match="another process is using the training run"):
        Trainer(config, resume=trainer.run_dir, progress=False)
    trainer.lock.release()
    trainer.writer.close()


# ---------------------------------------------------------------------- item 8: smaller faults
def test_command_line_path_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from training import evaluate as E

    for args, message in (
        (["--chunk-size", "0"], "chunk_size (deals per worker task) must be an integer >= 1"),
        (["--record", str(tmp_path / "missing" / "g.jsonl")], "does not exist"),
        (["--record", str(tmp_path)], "is a folder"),
        (["--json", str(tmp_path / "missing" / "s.json")], "--json '" + str(tmp_path / "missing" / "s.json")),
        (["--json", str(tmp_path / "g.jsonl"), "--record", str(tmp_path / "g.jsonl")], "name the same file"),
        (["--json", str(tmp_path)], "is a folder"),
        (["--game", "rummy", "--json", str(tmp_path / "missing" / "s.json")], "does not exist"),
    ):
        with pytest.raises(SystemExit) as exited:
            E.main(["--a", "random", "--b", "random", "--games", "2", "--no-progress", *args])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
    a_file = tmp_path / "out.txt"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(T.TournamentError, match="is a file, not a folder"):
        T.run_tournament(small(a_file))


def test_a_bad_json_path_is_refused_before_any_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """burako-eval --json into a missing folder: refused when the command starts, not after the games
    (it used to play them all, then end in a FileNotFoundError traceback)."""
    from training import evaluate as E

    def no_games(*args: object, **kwargs: object) -> None:
        raise AssertionError("games were played before the --json path was checked")

    monkeypatch.setattr(E, "evaluate", no_games)
    with pytest.raises(SystemExit) as exited:
        E.main(["--a", "random", "--b", "random", "--games", "2", "--json", str(tmp_path / "no" / "s.json")])
    assert exited.value.code == 2


def test_an_interrupted_atomic_write_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Summaries and reports (burako-eval --json, the tournament's tables, a run's config.yaml) are written
    whole or not at all: a failure before the rename leaves the old file and no temporary one."""
    from burako_env import atomic_file
    from training import files

    target = tmp_path / "summary.json"
    files.write_text_atomic(target, "old\n")
    with monkeypatch.context() as patch:

        def disk_full(src: object, dst: object) -> None:
            raise OSError(28, "No space left on device")

        patch.setattr(atomic_file.os, "replace", disk_full)
        with pytest.raises(OSError, match="No space left"):
            files.write_text_atomic(target, "new, longer text\n")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    files.write_text_atomic(target, "new\r\nline\n")
    assert target.read_bytes() == b"new\r\nline\n"


def test_an_atomic_write_has_its_own_temporary_name_and_reaches_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers of one target must not share a temporary file (the name was fixed, NAME.tmp:
    one writer's rename could publish the other's half-written text), and the text and the
    rename are flushed to disk, so a power cut cannot leave an empty file after the rename.
    A new file gets the mode open() would give it, not a private 0600."""
    import os
    import stat

    from burako_env import atomic_file
    from training import files

    target = tmp_path / "summary.json"
    other_writers_tmp = tmp_path / "summary.json.tmp"
    other_writers_tmp.write_text("another writer, half way", encoding="utf-8")
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(atomic_file.os, "fsync", recording_fsync)
    umask = os.umask(0o022)
    try:
        files.write_text_atomic(target, "mine\n")
    finally:
        os.umask(umask)
    assert target.read_text(encoding="utf-8") == "mine\n"
    assert other_writers_tmp.read_text(encoding="utf-8") == "another writer, half way"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "summary.json.tmp"]
    assert synced == ["file", "folder"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_an_atomic_write_keeps_the_targets_mode_its_link_and_writes_devices_directly(tmp_path: Path) -> None:
    """The rename must not turn a private file public, a link into a copy, or /dev/stdout into a file."""
    import os
    import stat

    from training import files

    private = tmp_path / "private.json"
    private.write_text("old", encoding="utf-8")
    private.chmod(0o600)
    files.write_text_atomic(private, "new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text(encoding="utf-8") == "new"
    link = tmp_path / "link.json"
    link.symlink_to(private)
    files.write_text_atomic(link, "through the link")
    assert link.is_symlink() and private.read_text(encoding="utf-8") == "through the link"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert files.check_output_file(fifo, "--json") == fifo
        files.write_text_atomic(fifo, "to the reader")
        assert os.read(read_end, 100) == b"to the reader"
    finally:
        os.close(read_end)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "pipe", "private.json"]


def test_a_checkpoint_is_saved_through_a_link_and_a_failed_save_keeps_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """burako-average --out, a run's exports and its checkpoints go through ``agents.checkpoint.save``:
    it used a fixed NAME.tmp beside the link's own name and renamed that over it, so an --out that
    was a symbolic link became a plain file (the policy it pointed at untouched) and two writers
    shared one temporary file. Now the link stays, the file it names gets the new weights, another
    writer's NAME.tmp is left alone, and a save that fails half way keeps the previous checkpoint."""
    import torch

    from agents import checkpoint as ckpt
    from agents.network import NetworkShape, PolicyNet
    from burako_env.rules import load_rules

    rules = load_rules("burako")
    torch.manual_seed(0)
    net = PolicyNet(NetworkShape.for_env(2, rules, hidden=16, slot_embed=4), rules)
    real = tmp_path / "bots" / "policy_v1.pt"
    ckpt.save(ckpt.policy_payload(net, rules, {"seed": 1}), real)
    link = tmp_path / "current.pt"
    link.symlink_to(real)
    others_tmp = tmp_path / "current.pt.tmp"
    others_tmp.write_bytes(b"another writer, half way")
    ckpt.save(ckpt.policy_payload(net, rules, {"seed": 2}), link)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert ckpt.load(real)["config"] == {"seed": 2}
    assert others_tmp.read_bytes() == b"another writer, half way"

    def dies_half_way(payload: object, f: Any) -> None:
        f.write(b"PK\x03\x04 half a zip")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(OSError, match="No space left"):
        ckpt.save(ckpt.policy_payload(net, rules, {"seed": 3}), link)
    assert ckpt.load(link)["config"] == {"seed": 2}
    assert sorted(p.name for p in real.parent.iterdir()) == ["policy_v1.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bots", "current.pt", "current.pt.tmp"]


class SignalsWhilePickled:
    """Sends ``signum`` to this process while ``torch.save`` writes it; saved as an empty OrderedDict
    (a type the safe loader accepts)."""

    def __init__(self, signum: int, times: int = 1) -> None:
        self.signum, self.times = signum, times

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        for _ in range(self.times):
            os.kill(os.getpid(), self.signum)
        return collections.OrderedDict, ()


@pytest.fixture
def terminal_sigint() -> Any:
    """SIGINT raises ``KeyboardInterrupt``, as in a terminal (a test worker may ignore it), for one test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_a_checkpoint_save_waits_for_the_file_then_interrupts(
    tmp_path: Path, signum: int, terminal_sigint: None
) -> None:
    """Ctrl-C or ``kill`` (SIGTERM, as ``training.signals`` makes it) landing inside ``torch.save``
    raised ``KeyboardInterrupt`` in the middle of torch's zip writer, whose clean-up then raised
    ``RuntimeError: ... unexpected pos`` in its place: burako-train exited 1 with a traceback, not
    130 with its resume hint. The signal is now held until the file is in place, then delivered."""
    import torch

    from agents import checkpoint as ckpt
    from training.signals import sigterm_as_interrupt

    target = tmp_path / "latest.pt"
    ckpt.save({"config": {"seed": 1}, "weights": torch.zeros(3)}, target)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        ckpt.save({"config": {"seed": 2}, "weights": torch.ones(3), "probe": SignalsWhilePickled(signum)}, target)
    saved = torch.load(target, weights_only=True)
    assert saved["config"] == {"seed": 2} and saved["probe"] == {} and saved["weights"].tolist() == [1.0, 1.0, 1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt"]
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def test_a_second_ctrl_c_during_a_save_stops_at_once_and_keeps_the_previous_file(
    tmp_path: Path, terminal_sigint: None
) -> None:
    """Holding the first stop must not make a hung write unstoppable: the second one interrupts the
    write at once, and the previous checkpoint stays whole."""
    import torch

    from agents import checkpoint as ckpt

    target = tmp_path / "latest.pt"
    ckpt.save({"config": {"seed": 1}}, target)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save({"config": {"seed": 2}, "probe": SignalsWhilePickled(signal.SIGINT, times=2)}, target)
    assert torch.load(target, weights_only=True) == {"config": {"seed": 1}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("times", [1, 2])
def test_kill_during_a_save_outside_a_run_ends_the_process_as_sigterm_does(tmp_path: Path, times: int) -> None:
    """Without ``sigterm_as_interrupt`` SIGTERM ends the process: held during a write, it still does so
    once the file is in place (one signal: the new file), or at once (a second signal: the old file)."""
    import subprocess

    target = tmp_path / "latest.pt"
    script = f"""
import collections, os, signal, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
import torch
from agents import checkpoint as ckpt

class Probe:
    def __reduce__(self):
        for _ in range({times}):
            os.kill(os.getpid(), signal.SIGTERM)
        return collections.OrderedDict, ()

ckpt.save({{"config": {{"seed": 1}}}}, {str(target)!r})
ckpt.save({{"config": {{"seed": 2}}, "probe": Probe()}}, {str(target)!r})
print("not ended")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert "not ended" not in done.stdout
    import torch

    assert torch.load(target, weights_only=True)["config"] == {"seed": 2 if times == 1 else 1}


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write_when_old_and_its_process_gone(
    tmp_path: Path,
) -> None:
    """Each write has its own hidden temporary name, so a writer killed between write and rename (SIGKILL,
    a power cut) leaves a checkpoint-sized file that no later write would overwrite. The next write of
    the same target deletes such files once their process is gone and they are old; a live writer's, a
    recent one (a writer on another machine), another target's and a stranger's file stay."""
    import subprocess

    from burako_env import atomic_file

    dead = subprocess.Popen(["true"])  # a pid whose process has ended
    assert dead.wait() == 0
    old = time.time() - atomic_file.STALE_SECONDS - 60
    target = tmp_path / "latest.pt"
    names = {
        "stale": f".latest.pt.{dead.pid}.0123abcd.tmp",
        "recent": f".latest.pt.{dead.pid}.4567cdef.tmp",
        "live": f".latest.pt.{os.getpid()}.89ab0123.tmp",
        "other_target": f".final.pt.{dead.pid}.0123abcd.tmp",
        "stranger": ".latest.pt.notes.tmp",
    }
    for key, name in names.items():
        (tmp_path / name).write_bytes(b"half a checkpoint")
        if key != "recent":
            os.utime(tmp_path / name, (old, old))
    atomic_file.write_atomic(target, lambda f: f.write(b"whole"))
    assert target.read_bytes() == b"whole"
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"latest.pt"} | {name for key, name in names.items() if key != "stale"}


def test_a_failed_json_write_after_the_games_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The games are played and their table printed; a --json that cannot be written then (disk full)
    exits 1 with a message naming the path, not a traceback naming a temporary file."""
    from training import evaluate as E

    def disk_full(path: object, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(E, "write_text_atomic", disk_full)
    summary = tmp_path / "s.json"
    assert E.main(["--a", "random", "--b", "random", "--games", "2", "--no-progress", "--json", str(summary)]) == 1
    out, err = capsys.readouterr()
    assert "A win rate" in out
    assert f"burako-eval: cannot write --json {summary}: No space left on device" in err


def test_burako_train_output_path_errors_come_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--export into a folder or a missing folder, and a run_root that is (under) a file: one-line
    errors when the command starts (--export used to fail after the whole run, with a traceback)."""
    from training import ppo

    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    smoke = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_smoke.yaml")
    for args, message in (
        (["--export", str(tmp_path)], "--export '" + str(tmp_path) + "' is a folder"),
        (["--export", str(tmp_path / "missing" / "p.pt")], "does not exist"),
        (["--set", f"run_root={a_file}"], "cannot hold run folders: it or a folder above it is a file"),
        (["--set", f"run_root={a_file / 'sub'}"], "cannot hold run folders"),
    ):
        with pytest.raises(SystemExit) as exited:
            ppo.main(["--config", smoke, "--set", f"run_root={tmp_path / 'runs'}", *args, "--no-progress"])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_burako_train_stopped_before_its_first_checkpoint_says_there_is_nothing_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in the warm start (no checkpoint yet) used to print a --resume command that then failed;
    Ctrl-C while the trainer is still being built printed a traceback."""
    from training import ppo

    smoke = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_smoke.yaml")
    argv = ["--config", smoke, "--set", f"run_root={tmp_path}", "--set", "bc_teacher=null", "--no-progress"]

    def interrupted(self: object, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo.Trainer, "train", interrupted)
    assert ppo.main(argv) == 130
    err = capsys.readouterr().err
    assert "no checkpoint was written yet, so there is nothing to resume" in err and "--resume" not in err
    monkeypatch.setattr(ppo.Trainer, "__init__", interrupted)
    assert ppo.main(argv) == 130
    assert "interrupted before training started; nothing was trained" in capsys.readouterr().err


def test_empty_journals_of_a_failed_run_block_nothing(tmp_path: Path) -> None:
    """A run that failed before its first game (backend=ray without ray, say) left config.yaml and empty journals."""
    T.run_tournament(small(tmp_path, seed=1), max_games=1)
    for name in (T.RECORDS, T.FORFEITS):
        (tmp_path / name).write_bytes(b"")
    result = T.run_tournament(small(tmp_path, seed=2))
    assert result.complete and result.played == 4


def test_resume_before_the_first_ppo_checkpoint_keeps_the_cloning_curves(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from training.ppo import PPOConfig, Trainer

    config = PPOConfig(
        run_root=str(tmp_path), num_envs=1, hidden=16, slot_embed=4, bc_teacher="random", bc_games=2, bc_epochs=3,
        workers=1, minibatch_size=64,
    )  # fmt: skip
    trainer = Trainer(config, progress=False)
    trainer.started = time.perf_counter()
    trainer.behaviour_clone()
    trainer.save_checkpoint()  # what train() does after cloning, before any PPO update
    run_dir = trainer.run_dir
    trainer.writer.close()
    lock = vars(trainer).pop("lock", None)  # the run is "killed" here, before its first PPO checkpoint
    if lock is not None:
        lock.release()
    resumed = Trainer(config, resume=run_dir, progress=False)
    resumed.writer.close()
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert len(events.Scalars("bc/loss")) == 3


def test_a_resume_with_another_run_root_stays_in_its_folder_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume RUN --set run_root=X: the run goes on in RUN, and its config says RUN's parent
    (it wrote X into config.yaml, misreporting where the run lives)."""
    import dataclasses

    from training.ppo import PPOConfig, Trainer

    config = PPOConfig(
        run_root=str(tmp_path / "runs"), num_envs=1, hidden=16, slot_embed=4, workers=1, minibatch_size=64,
        bc_teacher=None,
    )  # fmt: skip
    trainer = Trainer(config, progress=False)
    trainer.started = time.perf_counter()
    trainer.save_checkpoint()
    trainer.lock.release()
    trainer.writer.close()
    capsys.readouterr()
    resumed = Trainer(dataclasses.replace(config, run_root=str(tmp_path / "elsewhere")), resume=trainer.run_dir)
    try:
        assert resumed.run_dir == trainer.run_dir
        assert resumed.cfg.run_root == str(trainer.run_dir.parent)
        assert f"the resumed run stays in {trainer.run_dir}" in capsys.readouterr().err
        assert not (tmp_path / "elsewhere").exists()
    finally:
        resumed.lock.release()
        resumed.writer.close()


def test_a_link_to_a_missing_folder_is_refused_naming_the_link_and_its_target(tmp_path: Path) -> None:
    """A symbolic link whose target's folder is gone (an unmounted disk, a moved run) got the OS's
    error about a hidden temporary name; now the error names the link and its target, and
    nothing is written beside either."""
    from burako_env.atomic_file import write_text_atomic

    link = tmp_path / "current.json"
    link.symlink_to(tmp_path / "gone" / "report.json")
    with pytest.raises(
        FileNotFoundError, match=r"current\.json: it is a symbolic link to .*gone.*report\.json, whose folder .*gone "
    ):
        write_text_atomic(link, "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current.json"] and link.is_symlink()
    write_text_atomic(tmp_path / "plain.json", "{}")  # an ordinary target is written as before
    assert (tmp_path / "plain.json").read_text() == "{}"
    with pytest.raises(NotADirectoryError):  # a file where the folder should be: the OS's own error, as before
        write_text_atomic(tmp_path / "plain.json" / "inside.json", "{}")
