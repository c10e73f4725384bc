"""The training's evaluations on the compiled core: a network, playing greedily, against a
compiled heuristic (``planner`` or ``greedy``), every game of the evaluation side by side.

Why: the trainer evaluates every ``eval_every`` updates, and :func:`training.evaluate.evaluate`
plays those games one at a time on the readable engine, the heuristic in Python and the network one
row a move: ~17 s for 200 games against the planner on a 2-core EPYC, 25 times in the reference run
(~7 of its minutes). Here the same games are played as :class:`~burako_env.fast.FastGame` s:

| what                 | how it is the same game as ``evaluate()``'s                               |
|----------------------|---------------------------------------------------------------------------|
| deals and seatings   | deal ``i`` from ``deal_seed(seed, i)`` (``FastGame.new_game`` draws as     |
|                      | ``GameState.new_game``), both seatings (training/duplicate.py)            |
| the heuristic's move | ``agents.fast_planner.choose_game``: the Python agent's move, move for    |
|                      | move (tests/test_fast_planner.py); it draws no random numbers             |
| the network's move   | ``PolicyAgent``'s greedy one: the argmax of the masked logits of          |
|                      | ``net(observation)``; the observation is ``FastGame.encode``, the         |
|                      | Observer's (tests/test_fast.py); a forced move is played unasked          |
| the result row       | ``scored_row`` of the hand's side totals, end reason, turns and actions   |

The network reads every game's waiting row of a step in one forward pass, whose float rounding can
differ from a one-row pass's in the last bits: a move whose two best logits tie to ~1e-6 could go the
other way and that game differ. tests/test_fast_evaluate.py plays evaluations both ways and finds
the same games, move for move (on another CPU's matrix kernels a near tie could go the other way; that
test would then name the game). The training's curve is what this serves: records and resumable
files stay with ``burako-eval``.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from agents import checkpoint as ckpt
from agents import fast_planner
from agents.network import PolicyNet, masked_logits
from burako_env.actions import NUM_ACTIONS
from burako_env.fast import FastGame
from burako_env.observation import layout_id
from burako_env.rules import Rules, load_rules
from training.duplicate import AgentSpec, GameRow, a_seats_of, deal_seed, scored_row, seatings
from training.evaluate import Evaluation, summarize

__all__ = ["POLICY_LABEL", "evaluate_network", "fast_opponent"]

#: the network's side in the result rows, as the trainer's ``AgentSpec("policy", ...)`` labels it
POLICY_LABEL = "policy"


def fast_opponent(opponent: AgentSpec, rules: Rules, num_players: int) -> tuple[np.ndarray, ...] | None:
    """The compiled tables that play ``opponent`` (a registry ``planner`` or ``greedy``, its
    ``weights`` option at most), or None when this module cannot play it."""
    if opponent.factory is not None:
        return None
    found = fast_planner.compiled_tables(opponent.name, dict(opponent.options), rules, num_players)
    return None if found is None else found.kernel_args


@torch.no_grad()
def evaluate_network(
    net: PolicyNet,
    opponent: AgentSpec,
    *,
    games: int,
    seed: int,
    rules: Rules | str = "burako",
    num_players: int = 2,
) -> Evaluation | None:
    """``evaluate(AgentSpec("policy", net=net), opponent, games=games, seed=seed, ...)``'s games and
    summary, played on the compiled core; None when ``opponent`` is not a compiled heuristic (then play
    ``evaluate``). ``net`` is a float32 network on the CPU, as ``PolicyAgent`` plays it."""
    rules_obj = load_rules(rules)
    rules_obj.check_players(num_players)
    tables = fast_opponent(opponent, rules_obj, num_players)
    if tables is None:
        return None
    if games <= 0 or games % 2:
        raise ValueError(f"games must be a positive even number (each deal is played twice), got {games}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if {p.dtype for p in net.parameters()} != {torch.float32} or next(net.parameters()).device.type != "cpu":
        raise ValueError("evaluate_network plays a float32 network on the CPU, as PolicyAgent does")
    ckpt.check_layout(net.shape, layout_id(num_players, rules_obj), "the evaluated network")  # PolicyAgent.reset's
    start = time.perf_counter()
    # deal, seating, its deal seed, the network's seats, the game
    table: list[tuple[int, int, int, tuple[int, ...], FastGame]] = []
    for deal in range(games // 2):
        dseed = deal_seed(seed, deal)
        for k in range(len(seatings(num_players))):
            game = FastGame.new_game(np.random.default_rng(dseed), rules_obj, num_players)
            table.append((deal, k, dseed, a_seats_of(num_players, k), game))
    actions = np.zeros(len(table), dtype=np.int64)
    obs = np.zeros((len(table), net.shape.obs_size), dtype=np.float32)
    masks = np.zeros((len(table), NUM_ACTIONS), dtype=bool)
    playing = list(range(len(table)))
    while playing:
        waiting: list[int] = []  # the games whose network seat has a choice to make, in table order
        for g in playing:
            *_, own, game = table[g]
            mask = game.legal_mask()
            seat = game.current
            if seat not in own:
                game.apply(fast_planner.choose_game(game, tables))
            elif np.count_nonzero(mask) == 1:
                game.apply(int(np.flatnonzero(mask)[0]))
            else:
                row = len(waiting)
                game.encode(seat, out=obs[row])
                masks[row] = mask
                waiting.append(g)
                continue
            actions[g] += 1
        if waiting:
            n = len(waiting)
            logits, _ = net(torch.from_numpy(obs[:n]))
            chosen = torch.argmax(masked_logits(logits, torch.from_numpy(masks[:n])), dim=1).tolist()
            for g, action in zip(waiting, chosen, strict=True):
                table[g][4].apply(int(action))
                actions[g] += 1
        playing = [g for g in playing if not table[g][4].hand_over]
    rows = [
        _row(deal, k, dseed, own, game, opponent.label, int(actions[g]))
        for g, (deal, k, dseed, own, game) in enumerate(table)
    ]
    summary = summarize(rows, POLICY_LABEL, opponent.label, rules_obj.name, num_players, seed)
    summary.seconds = time.perf_counter() - start
    return Evaluation(summary, rows)


def _row(
    deal: int, seating: int, dseed: int, a_seats: tuple[int, ...], game: FastGame, b: str, actions: int
) -> GameRow:
    """The result row ``play_deal_pair`` makes of the same game."""
    scores = game.hand_scores
    return scored_row(
        pairing=0,
        a=POLICY_LABEL,
        b=b,
        deal=deal,
        seating=seating,
        deal_seed=dseed,
        a_seats=a_seats,
        sides=game.side_of,
        side_totals=None if scores is None else [s.total for s in scores],
        end_reason=str(game.end_reason),
        turns=game.turn,
        actions=actions,
    )
