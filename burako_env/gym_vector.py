"""A ``gymnasium.vector.VectorEnv`` over the compiled core: N games, one learner seat each.

    from burako_env.gym_vector import BurakoGymVectorEnv
    envs = BurakoGymVectorEnv(num_envs=64, opponent="random")
    obs, infos = envs.reset(seed=0)              # obs["observation"]: (64, D), obs["action_mask"]: (64, A)
    obs, rewards, terminated, truncated, infos = envs.step(actions)   # actions: (64,) ints

What training loops written for Gymnasium's vector API (CleanRL, Gymnasium's
vector wrappers) expect; :class:`~burako_env.vector.BurakoVectorEnv` stays the
raw multi-seat API (every seat's decisions, rewards per seat).

- Spaces: ``single_observation_space`` is the AEC env's dict (``observation``
  float32 vector, ``action_mask`` int8); ``observation_space`` its batch
  (``gymnasium.vector.utils.batch_space``); ``single_action_space``
  ``Discrete(NUM_ACTIONS)``, ``action_space`` ``MultiDiscrete``.
- Each game has one learner seat (``learner_seat``: an int, or
  ``"alternate"``: game i in seat ``i % num_players``). ``step(actions)``
  applies the learner's action in every game, then plays the opponents'
  decisions inside the step until the learner is to act again in every game:
  ``opponent="random"`` (uniform over legal actions, numba, one generator
  per env) or a batched policy ``opponent(observations[k, D], masks[k, A])
  -> actions[k]`` called with the k games where an opponent is to act (the
  observation is that opponent seat's).
- ``rewards[i]``: the learner's own side's hand result when game i's hand
  ends (``reward="score"``: hand score minus the others', / ``reward_scale``;
  ``"win"``: +1 / -1 / 0), else 0 (``env.hand_rewards``, as every env here).
- Autoreset: ``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``. A game
  whose hand ended is dealt again within the same step; the returned
  observation is the new hand's, and ``infos["final_obs"]`` /
  ``infos["final_info"]`` (with the ``_final_obs`` / ``_final_info`` masks, as
  ``SyncVectorEnv`` fills them) hold the last observation and info of the
  finished hand (``end_reason``, ``learner_seat``, ``side``, ``has_score``,
  ``hand_score`` (the learner side's total, 0 without a score),
  ``score_breakdown``).
- Everything returned is a fresh array, never an internal buffer.
- Illegal or out-of-range learner actions raise ``ValueError`` naming the
  games, and no game moves. An opponent policy's illegal answer comes after
  the learner's actions were applied: it raises ``ValueError`` and the
  games stop mid-step, so ``step`` refuses until ``reset``.
- Seeds: ``reset(seed=s)`` gives game i the generator ``default_rng(s + i)``
  for its deals (the same deals as ``BurakoVectorEnv`` and
  ``GameState.new_game``) and reseeds the random opponent; in a list of
  seeds, ``None`` gives that game fresh entropy (and the opponent too).
- Partial reset (Gymnasium 1.x): ``reset(options={"reset_mask": mask})``,
  ``mask`` a bool array of ``num_envs``, deals again only the games marked
  True (game i from ``seed + i`` or the list's entry i, fresh entropy
  without a seed) and leaves the others and the opponent's generator as they
  were; the mask is checked as ``SyncVectorEnv`` checks it, and any other
  option is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from burako_env import actions as A
from burako_env.engine import TRUNCATED, draw_first_mano, shuffle_tiles
from burako_env.env import check_reward, check_seed, rules_for_env
from burako_env.fast import STATE_SIZE, FastGame, fast_tables, new_match
from burako_env.observation import observation_bounds
from burako_env.outcomes import hand_rewards
from burako_env.rules import Rules
from burako_env.safe_yaml import is_integer
from burako_env.vector import action_batch, listed_seeds

BatchedPolicy = Callable[[np.ndarray, np.ndarray], Any]


#: the spawn key of the opponent's generator when reset gets a list of seeds (:meth:`BurakoGymVectorEnv.reset`)
OPPONENT_STREAM = 0x0990


class BurakoGymVectorEnv(VectorEnv):
    """N one-hand games with one learner seat each (module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponent: str | BatchedPolicy = "random",
        num_players: int = 2,
        learner_seat: int | str = 0,
        rules: str | Rules | dict[str, Any] = "burako",
        rule_overrides: dict[str, Any] | None = None,
        reward: str = "score",
        reward_scale: float = 1000.0,
        max_turns: int | None = None,
    ) -> None:
        if not is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        check_reward(reward, reward_scale)
        if opponent != "random" and not callable(opponent):
            raise ValueError(
                f"opponent must be 'random' or a batched policy (observations, masks) -> actions, got {opponent!r}"
            )
        self.rules = rules_for_env(rules, rule_overrides, max_turns, num_players)
        self.num_players = int(num_players)
        self.tables = fast_tables(self.rules, self.num_players)
        self.num_envs = int(num_envs)
        n = self.num_envs
        if learner_seat == "alternate":
            seats = np.arange(n) % self.num_players
        elif isinstance(learner_seat, (int, np.integer)) and not isinstance(learner_seat, bool):
            if not 0 <= learner_seat < self.num_players:
                raise ValueError(
                    f"learner_seat must be in 0..{self.num_players - 1} or 'alternate', got {learner_seat}"
                )
            seats = np.full(n, int(learner_seat))
        else:
            raise ValueError(f"learner_seat must be an int or 'alternate', got {learner_seat!r}")
        self.learner_seats = seats.astype(np.int64)
        self.opponent = opponent
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        low, high = observation_bounds(self.num_players, self.rules)
        self.single_observation_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(A.NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.single_action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.obs_size = self.tables.obs_size
        self._states = np.zeros((n, STATE_SIZE), dtype=np.int32)
        self._games: list[FastGame] = []
        for i in range(n):
            game = FastGame(self.tables)
            game.st = self._states[i]  # a row of one array: the games live side by side
            self._games.append(game)
        self._rngs: list[np.random.Generator] = []
        self._opponent_rng = np.random.default_rng()
        self._obs = np.zeros((n, self.obs_size), dtype=np.float32)
        self._masks = np.zeros((n, A.NUM_ACTIONS), dtype=np.int8)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        n = self.num_envs
        reset_mask = self._reset_mask(options)
        if isinstance(seed, np.ndarray) and seed.shape == ():  # a 0-d array is its one number
            seed = seed[()]
        opponent_seed: Any
        if seed is None:
            seeds: list[Any] = [None] * n
            opponent_seed = None
        elif isinstance(seed, (int, np.integer, bool, np.bool_, float, str, bytes)):
            first = check_seed(seed)  # a non-negative integer; 1.5, "ab" or True are refused by name
            seeds = [first + i for i in range(n)]
            opponent_seed = np.random.SeedSequence([first, n])
        else:
            seeds = listed_seeds(seed, n)
            # the opponent's stream is tagged off the deals': numpy strips trailing zero words, so
            # SeedSequence([5]) or [5, 0] was default_rng(5) itself, game 0's deck shuffle
            fresh = None in seeds  # a game of fresh entropy: the opponent's stream cannot be reproduced either
            opponent_seed = None if fresh else np.random.SeedSequence(list(seeds), spawn_key=(OPPONENT_STREAM,))
        if reset_mask is None:
            self._rngs = [np.random.default_rng(s) for s in seeds]
            self._opponent_rng = np.random.default_rng(opponent_seed)
        else:  # the masked games only: the others and the opponent's generator go on as they were
            for i in np.flatnonzero(reset_mask).tolist():
                self._rngs[i] = np.random.default_rng(seeds[i])
        games = np.ones(n, dtype=bool) if reset_mask is None else reset_mask.copy()
        for i in np.flatnonzero(games).tolist():
            self._deal(i)
        self._play_opponents_or_stop(games, {}, np.zeros(n, dtype=np.float32))
        return self._observations(), {}

    def _reset_mask(self, options: dict[str, Any] | None) -> np.ndarray | None:
        """``options["reset_mask"]`` checked as ``SyncVectorEnv`` checks it (Gymnasium 1.x's partial
        reset), or None; any other option is refused by name rather than ignored."""
        if not options:
            return None
        unknown = sorted(str(key) for key in options if key != "reset_mask")
        if unknown:
            raise ValueError(f"reset: unknown option(s) {unknown}; the only option is 'reset_mask'")
        mask = options["reset_mask"]
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"reset: options['reset_mask'] must be a numpy array, got {type(mask).__name__}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"reset: options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}")
        if mask.dtype != np.bool_:
            raise TypeError(f"reset: options['reset_mask'] must have dtype bool, got {mask.dtype}")
        if not mask.any():
            raise ValueError("reset: options['reset_mask'] resets no game; it needs at least one True")
        if not self._rngs:
            raise RuntimeError("reset: a reset_mask resets some games of a running env; call reset() without it first")
        return mask

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._rngs:
            raise RuntimeError("call reset() before step()")
        acts = action_batch(actions, self.num_envs).copy()
        self._check_legal(np.arange(self.num_envs), acts, "learner")
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        for i, game in enumerate(self._games):
            game.apply(int(acts[i]))
            if game.hand_over:
                self._finish(i, rewards, terminated, truncated, infos)
        self._play_opponents_or_stop(~(terminated | truncated), infos, rewards, terminated, truncated)
        return self._observations(), rewards, terminated, truncated, infos

    def _play_opponents_or_stop(self, *args: Any) -> None:
        """:meth:`_play_opponents`; if the opponent fails (an illegal or misshapen answer, an
        exception), the games stopped between two seats' moves: the env refuses to step until
        reset, instead of playing the learner's next actions in the opponents' seats."""
        try:
            self._play_opponents(*args)
        except BaseException:
            self._rngs = []
            raise

    # ------------------------------------------------------------------ internals
    def _deal(self, i: int) -> None:
        game, rng = self._games[i], self._rngs[i]
        mano = draw_first_mano(rng, self.num_players)
        new_match(game.st, shuffle_tiles(rng, self.tables.full_tiles), mano, game.args)
        game._mask_ok = False

    def _check_legal(self, games: np.ndarray, acts: np.ndarray, who: str) -> None:
        legal = np.zeros(games.size, dtype=bool)
        for k, i in enumerate(games.tolist()):
            a = int(acts[k])
            legal[k] = 0 <= a < A.NUM_ACTIONS and bool(self._games[i].legal_mask()[a])
        if not legal.all():
            bad = np.flatnonzero(~legal)
            listed = ", ".join(f"game {games[k]}: action {acts[k]}" for k in bad[:5])
            more = f" and {bad.size - 5} more" if bad.size > 5 else ""
            moved = "no game moved" if who == "learner" else "the games stopped mid-step: call reset()"
            raise ValueError(f"illegal {who} actions ({listed}{more}); {moved}")

    def _finish(
        self, i: int, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, infos: dict[str, Any]
    ) -> None:
        """Game i's hand is over: the learner's reward, the final observation
        and info, and a new deal (same-step autoreset)."""
        game = self._games[i]
        seat = int(self.learner_seats[i])
        side = game.side_of[seat]
        rewards[i] += hand_rewards(game, self.reward_mode, self.reward_scale, False)[side]
        scores = game.hand_scores
        trunc = game.end_reason == TRUNCATED
        truncated[i], terminated[i] = trunc, not trunc
        final_obs = {
            "observation": game.encode(seat),
            "action_mask": np.zeros(A.NUM_ACTIONS, dtype=np.int8),
        }
        final_info = {
            "end_reason": game.end_reason,
            "learner_seat": seat,
            "side": side,
            "has_score": scores is not None,  # False for a void or truncated hand
            "hand_score": 0 if scores is None else int(scores[side].total),
            "score_breakdown": None if scores is None else [s.to_dict() for s in scores],
        }
        self._add_info(infos, {"final_obs": final_obs, "final_info": final_info}, i)
        self._deal(i)

    def _play_opponents(
        self,
        live: np.ndarray,
        infos: dict[str, Any],
        rewards: np.ndarray,
        terminated: np.ndarray | None = None,
        truncated: np.ndarray | None = None,
    ) -> None:
        """Opponent decisions, batched over games, until the learner is to act
        in every game. A game whose hand ends during them is finished (when it
        was live this step) and dealt again; the new hand's opponents play too."""
        games = self._games
        while True:
            waiting = np.array([g.current != self.learner_seats[i] for i, g in enumerate(games)], dtype=bool)
            idx = np.flatnonzero(waiting)
            if idx.size == 0:
                return
            obs = np.empty((idx.size, self.obs_size), dtype=np.float32)
            masks = np.empty((idx.size, A.NUM_ACTIONS), dtype=np.int8)
            for k, i in enumerate(idx.tolist()):
                game = games[i]
                game.encode(game.current, out=obs[k])
                masks[k] = game.legal_mask()
            if self.opponent == "random":
                acts = _uniform_legal(masks, self._opponent_rng)
            else:
                answer = np.asarray(self.opponent(obs, masks))
                try:  # integers only, as for the learner: a float answer is not truncated to a move
                    acts = action_batch(answer.reshape(-1) if answer.size == idx.size else answer, idx.size)
                except ValueError as exc:
                    raise ValueError(f"the opponent policy: {exc}; the games stopped mid-step: call reset()") from None
                self._check_legal(idx, acts, "opponent")
            for k, i in enumerate(idx.tolist()):
                game = games[i]
                game.apply(int(acts[k]))
                if game.hand_over:
                    if live[i] and terminated is not None and truncated is not None:
                        self._finish(i, rewards, terminated, truncated, infos)
                        live[i] = False
                    else:  # a fresh deal that ended before the learner's first decision: deal again
                        self._deal(i)

    def _observations(self) -> dict[str, np.ndarray]:
        for i, game in enumerate(self._games):
            game.encode(int(self.learner_seats[i]), out=self._obs[i])
            self._masks[i] = game.legal_mask()
        return {"observation": self._obs.copy(), "action_mask": self._masks.copy()}

    def action_masks(self) -> np.ndarray:
        """The learners' legal actions, (num_envs, NUM_ACTIONS) bool; none at all while the games are
        stopped (an opponent failed mid-step: the seats to act are not the learners')."""
        if not self._rngs:
            return np.zeros((self.num_envs, A.NUM_ACTIONS), dtype=bool)
        return np.stack([g.legal_mask() for g in self._games]).astype(bool)

    def game_state(self, i: int) -> Any:
        """Game i as a readable engine state."""
        return self._games[i].to_game_state()

    def close_extras(self, **kwargs: Any) -> None:
        pass


def _uniform_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row, one draw per row from
    ``rng`` (the same picks as ``vector.sample_legal_actions``, serially: the
    few rows of an opponent batch do not pay for a thread-pool launch)."""
    u = rng.random(masks.shape[0])
    cumulative = np.cumsum(masks != 0, axis=1)
    counts = cumulative[:, -1]
    target = np.minimum((u * counts).astype(np.int64), counts - 1)
    return (cumulative > target[:, None]).argmax(axis=1).astype(np.int64)
