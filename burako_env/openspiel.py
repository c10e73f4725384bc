"""Burako as an OpenSpiel Python game (``pyspiel``), over the readable engine.

    import pyspiel
    import burako_env.openspiel               # registers "python_burako"
    game = pyspiel.load_game("python_burako", {"players": 2})
    state = game.new_initial_state()          # a chance node: the deal

Requires the ``openspiel`` extra (``pip install -e ".[openspiel]"``).

- The first node is a chance node with ``num_deals`` equally likely outcomes
  (parameter, default 10,000): outcome d deals
  ``GameState.new_game(default_rng(d), rules, players)``, so a deal is named
  by its seed as everywhere in this project. Every later node is a decision.
- Actions, legality and rules are the engine's (``burako_env.actions``);
  ``returns()`` is each player's side's hand score minus the other sides'
  mean, divided by 1,000 (zero-sum; 0 for a void or truncated hand).
- Observations: the observation vector of ``burako_env.observation``
  (``observation_tensor``); ``observation_string`` names a seat's view now
  by the player and a digest of that vector. ``information_state_string``
  has perfect recall, as OpenSpiel defines it: a digest chained from the
  seat's observation at the deal over every move of the hand (each move is
  seen by all; its id goes in) and what the move may have shown beyond its
  id: the seat's own hand (the tile it drew, a muerto it took), the pile (a
  privilege tile rejected face up, B17) and the tiles known to be held. So
  two histories the seat can tell apart never share a string (the
  observation alone forgets the order of past moves and discards), and two
  it cannot tell apart always do. Everything else a seat sees follows from
  the deal and the move ids, so the chain never encodes a whole observation
  after the deal (that cost ~110 µs a move, two thirds of a step).
  A determinization for that seat keeps both strings.
- Hidden information: :func:`resample_from_infostate` (and the state method
  of the same name) is the engine's ``determinize``: every tile the seat
  cannot see (other hands beyond their known tiles, the stock order, the
  untaken muertos) is resampled. The sample is a fresh state holding only
  what the seat knows: its ``history()`` is empty (the real one starts with
  the deal's seed, which rebuilds every hidden tile), and the other seats'
  information states are digests of the sample, not of their true hands. :func:`ismcts_bot` builds OpenSpiel's
  ``ISMCTSBot`` with this resampler wired in (``set_resampler``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyspiel

from burako_env import actions as A
from burako_env.engine import GameState
from burako_env.observation import Observer, observation_size
from burako_env.rules import load_rules

SHORT_NAME = "python_burako"
DEFAULT_DEALS = 10_000
_DEFAULTS = {"players": 2, "num_deals": DEFAULT_DEALS, "rules": "burako"}

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Python Burako (burako_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_DEFAULTS,
)


class BurakoGame(pyspiel.Game):
    """The game object (module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = {**_DEFAULTS, **(params or {})}
        self.num_deals = int(params["num_deals"])
        if self.num_deals < 1:
            raise ValueError(f"num_deals must be positive, got {self.num_deals}")
        self.rules = load_rules(str(params["rules"]))
        self.players = int(params["players"])
        self.rules.check_players(self.players)
        self.observer_ = Observer(self.players, self.rules)
        info = pyspiel.GameInfo(
            num_distinct_actions=A.NUM_ACTIONS,
            max_chance_outcomes=self.num_deals,
            num_players=self.players,
            min_utility=-float(self.rules.max_turns),  # no tighter bound is known; scores are / 1000
            max_utility=float(self.rules.max_turns),
            utility_sum=0.0,
            max_game_length=10 * self.rules.max_turns,
        )
        super().__init__(_GAME_TYPE, info, params)

    def new_initial_state(self) -> BurakoState:
        return BurakoState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> BurakoObserver:
        # OpenSpiel asks for a perfect-recall observer for information_state_string
        return BurakoObserver(self, perfect_recall=bool(iig_obs_type is not None and iig_obs_type.perfect_recall))


class BurakoState(pyspiel.State):
    """A state of the game: before the deal (chance), then an engine state."""

    def __init__(self, game: BurakoGame, engine_state: GameState | None = None) -> None:
        super().__init__(game)
        self.engine: GameState | None = engine_state
        #: each seat's information state: a digest chained over the moves and its observations after them
        self.recall: list[str] = [] if engine_state is None else self._start_recall()

    def _seat_digest(self, previous: str, player: int, move: int) -> str:
        """The seat's information state after ``move``: its previous one, the move's id and what
        the move may have shown the seat beyond the id (module docstring)."""
        engine = self.engine
        assert engine is not None
        digest = hashlib.sha1(f"{previous}|{move}|".encode())
        digest.update(engine.hands[player].tobytes())
        digest.update(engine.known.tobytes())
        digest.update(bytes(engine.pile))
        return digest.hexdigest()

    def _start_recall(self) -> list[str]:
        """Each seat's information state at the deal: a digest of its observation."""
        assert self.engine is not None
        game = self.get_game()
        return [
            hashlib.sha1(b"deal|" + game.observer_.encode(self.engine, p).tobytes()).hexdigest()
            for p in range(game.players)
        ]

    def current_player(self) -> int:
        if self.engine is None:
            return pyspiel.PlayerId.CHANCE
        if self.engine.hand_over:
            return pyspiel.PlayerId.TERMINAL
        return self.engine.current

    def _legal_actions(self, player: int) -> list[int]:
        assert self.engine is not None
        return self.engine.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        n = self.get_game().num_deals
        return [(d, 1.0 / n) for d in range(n)]

    def _apply_action(self, action: int) -> None:
        if self.engine is None:
            game = self.get_game()
            if not 0 <= int(action) < game.num_deals:  # a chance outcome outside the game's own deals
                raise ValueError(f"chance outcome {action} is not a deal 0..{game.num_deals - 1}")
            self.engine = GameState.new_game(np.random.default_rng(int(action)), game.rules, game.players)
            self.recall = self._start_recall()
        else:
            self.engine.apply(int(action))
            self.recall = [self._seat_digest(h, p, int(action)) for p, h in enumerate(self.recall)]

    def _action_to_string(self, player: int, action: int) -> str:
        if self.engine is None:
            return f"deal {action}"
        return self.engine.describe(int(action))

    def is_terminal(self) -> bool:
        return self.engine is not None and self.engine.hand_over

    def returns(self) -> list[float]:
        if self.engine is None or not self.engine.hand_over:
            return [0.0] * self.get_game().players
        sides = self.engine.side_rewards()
        return [sides[self.engine.side_of[p]] / 1000.0 for p in range(self.get_game().players)]

    def resample_from_infostate(self, player_id: int, probability_sampler: Any = None) -> BurakoState:
        """A state consistent with what ``player_id`` knows (the engine's ``determinize``). Its
        generator is seeded from two draws of ``probability_sampler`` (a seeded
        ``pyspiel.UniformProbabilitySampler`` gives the same samples again); without one, from
        the module's own generator."""
        rng = None
        if probability_sampler is not None:
            words = [int(float(probability_sampler()) * 2**32) for _ in range(2)]
            rng = np.random.default_rng(words)
        return resample_from_infostate(self, player_id, rng)

    def __str__(self) -> str:
        if self.engine is None:
            return "(deal not yet drawn)"
        from burako_env.render import render_table

        return render_table(self.engine)


class BurakoObserver:
    """PyObserver: the observation vector of ``burako_env.observation``; its string is the
    seat's chained digest with ``perfect_recall`` (information states), else the vector's."""

    def __init__(self, game: BurakoGame, perfect_recall: bool = False) -> None:
        self._observer = game.observer_
        self.perfect_recall = perfect_recall
        self.tensor = np.zeros(observation_size(game.players, game.rules), dtype=np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: BurakoState, player: int) -> None:
        if state.engine is None:
            self.tensor.fill(0.0)
        else:
            self.tensor[:] = self._observer.encode(state.engine, player)

    def string_from(self, state: BurakoState, player: int) -> str:
        if state.engine is None:
            return f"p{player} before the deal"
        if self.perfect_recall:
            return f"p{player} {state.recall[player]}"
        vector = self._observer.encode(state.engine, player)
        return f"p{player} {hashlib.sha1(vector.tobytes()).hexdigest()}"


_RESAMPLE_RNG = np.random.default_rng()


def resample_from_infostate(state: BurakoState, player: int, rng: np.random.Generator | None = None) -> BurakoState:
    """The ISMCTS resampler: ``state`` with everything ``player`` cannot see
    resampled (``GameState.determinize``)."""
    if state.engine is None:
        return BurakoState(state.get_game())
    game = state.get_game()
    sample = BurakoState(game)  # a fresh state: the real history names the deal, which rebuilds every hidden tile
    sample.engine = state.engine.determinize(player, rng if rng is not None else _RESAMPLE_RNG)
    # the seat's own information state is kept; the others' follow from the sample (the state's would be
    # digests of their true hands: they differed between worlds the seat cannot tell apart)
    sample.recall = [
        state.recall[q]
        if q == player
        else hashlib.sha1(f"sample|{state.recall[player]}|{q}|".encode() + sample.engine.hands[q].tobytes()).hexdigest()
        for q in range(game.players)
    ]
    return sample


def ismcts_bot(game: BurakoGame, simulations: int = 100, seed: int = 0, uct_c: float = 2.0, rollouts: int = 1) -> Any:
    """OpenSpiel's ``ISMCTSBot`` with random-rollout evaluation and the
    engine's determinization as its resampler."""
    from open_spiel.python.algorithms import ismcts, mcts

    random_state = np.random.RandomState(seed)
    rng = np.random.default_rng(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=rollouts, random_state=random_state)
    bot = ismcts.ISMCTSBot(
        game=game,
        evaluator=evaluator,
        uct_c=uct_c,
        max_simulations=simulations,
        random_state=random_state,
        child_selection_policy=ismcts.ChildSelectionPolicy.PUCT,
    )
    bot.set_resampler(lambda state, player: resample_from_infostate(state, player, rng))
    return bot


pyspiel.register_game(_GAME_TYPE, BurakoGame)
