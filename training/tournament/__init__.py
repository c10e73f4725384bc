"""Tournaments between agents: duplicate deals, ratings with confidence, resumable runs.

    burako-tournament --config configs/tournament.yaml
    burako-tournament --config configs/tournament.yaml --set games_per_pairing=40 --set backend=inprocess
    burako-tournament --config configs/tournament_rummy.yaml      # Rummy (game: rummy)

Every pairing is a duplicate match, exactly as in ``burako-eval``
(the seeding, seating and result rows of :mod:`training.duplicate`, which both share):
each deal is played twice with the sides swapped (2 players: A in seat 0,
then in seat 1; 4 players: A's partnership in seats 0+2, then in 1+3), with
the same agent seed per seat in both games, so deal luck and seat luck cancel
within a deal pair.

Why a tournament rather than a table of ``burako-eval`` runs: one rating
scale for many agents (Bradley–Terry fitted on every game at once, so A vs C
informs A vs B), intervals on that scale, one resumable run folder, and a
choice of execution back end.

The YAML file (every key but ``participants`` has a default; ``--set
key=value`` overrides any key, dotted for nested ones, with list indices:
``--set participants.3.options.simulations=20``; values are parsed as YAML;
``--set participants.3=null`` drops a participant)::

    name: tournament              # a label for the reports
    game: null                    # burako or rummy (--game on the command line); null: the
                                  # game of the rules (a Rummy preset means rummy), else burako
    rules: null                   # rules preset name, YAML path, or a mapping; null: the
                                  # game's own preset (burako, rummy)
    players: 2                    # 2, or 4 (Burako partnerships); Rummy: 2
    participants:                 # unique display names; at least two
      - {name: random, agent: random}
      - {name: planner, agent: planner}
      - {name: search, agent: ismcts, options: {simulations: 100}}
      - {name: bot, agent: policy, options: {checkpoint: runs/ppo/best.pt}}
      # agent: a registry name (agents/registry.py), or "module:Class" for a
      # class outside the registry; it is built as Class(seed=..., **options).
      # A built-in agent of the other game (planner in Rummy, rummy-heuristic
      # in Burako) is refused before anything runs; random plays both
    format: round_robin           # round_robin: every pair; gauntlet: each
                                  # challenger against every other participant
    challengers: []               # gauntlet only: the challengers' names
    games_per_pairing: 400        # even: deals per pairing x 2 seatings
    seed: 0                       # every deal, agent and bootstrap seed derives from it
    workers: 2                    # processes (pool) or local CPUs (ray)
    backend: pool                 # inprocess | pool | ray
    chunk_size: null              # games per task; null: chosen from the work left
    move_time_limit: null         # seconds an agent may take per move (null: no limit); see Outcomes
    out: runs/tournament          # the run folder
    ray:
      address: null               # null: a local instance; "auto" or ray://host:port: a cluster
      runtime_env: null           # passed to ray.init (e.g. {working_dir: .} for a cluster)
    ratings:
      bootstrap: 1000             # bootstrap resamples of the deal pairs, for the intervals
      prior_draws: 1.0            # virtual draws added to every pairing that played (see below)
      anchor: null                # a participant pinned at Elo 0; null: the mean is 0

Seeds. The pairing of A and B (A is the earlier participant in round robin,
the challenger in a gauntlet) has the seed
``pairing_seed(seed, A, B)`` (from the tournament seed and both display
names), and its deal ``i`` is dealt from ``deal_seed(pairing_seed, i)`` with
agent seeds ``agent_seed(pairing_seed, i, seat)`` — the functions of
:mod:`training.duplicate`, so a pairing replays exactly as
``burako-eval --seed <pairing seed>``. Names rather than positions make the
deals of a pairing independent of the number of participants and of where the
others stand; only the pair's own order counts (A, B and B, A are two seeds:
listing B before A deals that pairing afresh).
Each game is a pure function of the config, so results are identical
whatever the back end, the worker count or the chunking.

Outcomes. A game is a win (1), draw (0.5) or loss (0) for A by hand total:
in Burako the higher side total wins, and void and truncated hands are draws
with score difference 0; in Rummy (2 players, each for himself) the lower
hand total wins (R10), and the score difference is A's margin, B's total
minus A's (positive when A did better), as in ``burako-eval --game rummy``.
The game-specific facts (which agents play which game, the players a
duplicate pairing seats, playing a game into its record and reading A's
result off it) live in :mod:`training.games`, shared with ``burako-eval``. An agent that
raises, calls ``sys.exit`` or returns an illegal action
(:class:`~agents.runner.AgentFault`) loses that game by forfeit (score
difference 0, ``end_reason`` forfeit), the error is kept, and the tournament
goes on. So does an agent that takes more than ``move_time_limit`` seconds
over a move (kind ``timeout``; it is interrupted by SIGALRM, see
:func:`agents.runner.play_game`). With the ``pool`` back end, an agent whose
worker process dies (``os._exit``, a crash, the out-of-memory killer: kind
``crash``) or that is stuck where no signal reaches it (the worker is stopped
``HANG_GRACE_SECONDS`` after the limit: kind ``timeout``) forfeits the game
in flight; the worker is replaced and the rest of its task goes on. Each
worker keeps a shared note of whose code it runs, so the fault is the right
agent's. (In process, ``os._exit`` ends everything and code stuck in C is
never stopped: use ``pool`` for untrusted agents.) Timeouts depend
on the machine, so a run with a limit is reproducible only while no agent
comes near it. A participant that cannot be built at all stops the run
before any game.

Ratings.

- Bradley–Terry on the Elo scale, fitted on all games with ``choix``
  (``ilsr_pairwise_dense``, the ML estimate of a comparison matrix; draws
  count half a win each way). Every pairing that played gets ``prior_draws``
  virtual draws, so a 400–0 sweep has a large but finite gap (the ML estimate
  alone would be infinite). ``Elo = 400 · log10(e) · θ``: a 100-point gap is
  a 64% expected score. The 95% interval is the 2.5–97.5 percentile of a
  bootstrap that resamples the deal pairs of each pairing with replacement
  (the pair is the independent unit; its two games are not independent).
- OpenSkill (Plackett–Luce, ``openskill``), updated game by game in a fixed
  order (deal, seating, pairing), as an online rating would be: mu, sigma
  and the conservative ordinal mu − 3·sigma.
- The crosstable: each ordered pair's win rate and mean score difference,
  with 95% intervals over deal pairs as in ``burako-eval`` (win rate: Wilson
  score interval; score difference: normal approximation), games, deals and
  forfeits.

The run folder (``out``)::

    config.yaml       the config used (games are only reused from a folder whose
                      game-defining config, i.e. game, rules, players, seed and
                      participants, is the same)
    agent_files.json  the SHA-256 of each file a participant's agent reads (a
                      policy's checkpoint, given or the shipped default): games
                      are only reused while every one is unchanged, so a bot
                      replaced under the same path never passes for the old one
    records.jsonl     every finished game, burako_env.records format (a Rummy game's
                      record has "game": "rummy"; both replay exactly with
                      burako_env.records.replay); meta.tournament holds the
                      pairing, deal and seating
    forfeits.jsonl    every forfeited game: the same meta plus meta.forfeit with the
                      fault (a forfeited hand is not over, so it has no valid record)
    results.csv       one row per game
    leaderboard.md    ratings, crosstable, pairings, forfeits
    leaderboard.csv   one row per participant
    crosstable.csv    one row per ordered pair
    ratings.png       Bradley–Terry Elo with 95% intervals
    timings.csv       seconds per game (machine-dependent, so kept out of the results)

Resuming. Games are appended to the two JSON-lines files as they finish, so
an interrupted tournament (Ctrl-C, a killed job) started again with the same
config plays only the games that are missing; a half-written last line is
dropped and that game played again. Every game found must be one this run
schedules, with this run's tournament seed, pairing seed, deal seed and agent
labels; anything else is refused (never published as this run's games). At
the end both files are rewritten in schedule order, so a run's files do not
depend on the order games finished in. ``--fresh`` deletes the previous run's
files first.

Sharing a folder. A run holds a lock on its folder (``out/.lock``, a
``filelock`` lock released when the process ends, even when killed), so a
second run in the same ``out`` is refused at once. ``config.yaml`` is written
only once the folder has been accepted: a refused run changes nothing. Empty
journals (a run that failed before its first game) block nothing.

Back ends: ``inprocess`` (one process; for debugging), ``pool`` (a local
process pool, spawn start method) and ``ray`` (the same tasks as Ray tasks;
``pip install -e ".[ray]"``). Agents are built per game, from the seeds
above; an agent that loads something heavy (a checkpoint) should cache it
per process.
"""

# The package, one module per section: config (the YAML keys, --set,
# participants), schedule (pairings, jobs, one game), backends (in process,
# pool, Ray), journal (the run folder, resume), results (rows read back from
# the journals), ratings, reports, run (run_tournament) and cli (main). The
# names below are its public face: import them from training.tournament.
from training.duplicate import GameRow
from training.tournament.backends import death_forfeit, execute
from training.tournament.cli import build_parser, main
from training.tournament.config import (
    BACKENDS,
    DEFAULTS,
    FORMATS,
    Participant,
    TournamentConfig,
    TournamentError,
    apply_override,
    check_participants,
    load_config,
)
from training.tournament.journal import FORFEITS, RECORDS, RUN_FILES
from training.tournament.ratings import (
    BOOTSTRAP_STREAM,
    ELO_PER_NAT,
    BTRatings,
    PairStats,
    SkillRating,
    Standing,
    bradley_terry_ratings,
    comparison_matrix,
    fit_bradley_terry,
    openskill_ratings,
    pair_stats,
    standings,
)
from training.tournament.reports import crosstable_csv, leaderboard_csv, leaderboard_md, plot_ratings, results_csv
from training.tournament.results import row_from_entry
from training.tournament.run import TournamentResult, run_tournament
from training.tournament.schedule import (
    GameJob,
    GameOutput,
    GameTask,
    Pairing,
    forfeit_output,
    make_pairings,
    pairing_seed,
    play_job,
    schedule,
)

__all__ = [
    "BACKENDS",
    "BOOTSTRAP_STREAM",
    "DEFAULTS",
    "ELO_PER_NAT",
    "FORFEITS",
    "FORMATS",
    "RECORDS",
    "RUN_FILES",
    "BTRatings",
    "GameJob",
    "GameOutput",
    "GameRow",
    "GameTask",
    "PairStats",
    "Pairing",
    "Participant",
    "SkillRating",
    "Standing",
    "TournamentConfig",
    "TournamentError",
    "TournamentResult",
    "apply_override",
    "bradley_terry_ratings",
    "build_parser",
    "check_participants",
    "comparison_matrix",
    "crosstable_csv",
    "death_forfeit",
    "execute",
    "fit_bradley_terry",
    "forfeit_output",
    "leaderboard_csv",
    "leaderboard_md",
    "load_config",
    "main",
    "make_pairings",
    "openskill_ratings",
    "pair_stats",
    "pairing_seed",
    "play_job",
    "plot_ratings",
    "results_csv",
    "row_from_entry",
    "run_tournament",
    "schedule",
    "standings",
]
