"""The shipping rule of issue 15 applied to the tables ``scripts/ship_check.sh`` writes.

A trained network replaces ``agents/checkpoints/burako_ppo.pt`` only if, over held-out duplicate
2-player Burako games (``burako-eval --json``):

| opponent | games | seeds | passes when |
|---|---|---|---|
| planner | 1,000 each | 2026 and 2027 | the two win rates' mean >= 0.70, each 95% lower bound > 0.5 |
| ismcts(simulations=30) | 400 | 2026 | win rate >= 0.55, its 95% lower bound > 0.5 |

    python -m training.ship_check <folder with planner_seed2026.json, planner_seed2027.json, ismcts30_seed2026.json>

prints one line per check and the verdict; exit status 0 when it ships, 1 when not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: the tables the rule reads, as ``scripts/ship_check.sh`` names them
TABLES = ("planner_seed2026", "planner_seed2027", "ismcts30_seed2026")
PLANNER_MEAN = 0.70
SEARCH_RATE = 0.55
LOWER_BOUND = 0.5


def lower_bound(table: dict[str, Any]) -> float:
    """The win rate's 95% lower bound; none (a single deal has no interval) is NaN, which fails."""
    bound = table["win_rate_ci"][0]
    return float("nan") if bound is None else float(bound)


def checks(tables: dict[str, dict[str, Any]]) -> list[tuple[str, bool]]:
    """Each check of the rule as (what it says, whether it passes)."""
    planner = [tables["planner_seed2026"], tables["planner_seed2027"]]
    search = tables["ismcts30_seed2026"]
    mean = sum(float(t["win_rate"]) for t in planner) / len(planner)
    result = [(f"planner mean win rate {mean:.3f} >= {PLANNER_MEAN:.2f}", mean >= PLANNER_MEAN)]
    for table in planner:
        low = lower_bound(table)
        result.append((f"planner seed {table['seed']}: lower bound {low:.3f} > {LOWER_BOUND}", low > LOWER_BOUND))
    rate, low = float(search["win_rate"]), lower_bound(search)
    result.append((f"ismcts(30) win rate {rate:.3f} >= {SEARCH_RATE:.2f}", rate >= SEARCH_RATE))
    result.append((f"ismcts(30) lower bound {low:.3f} > {LOWER_BOUND}", low > LOWER_BOUND))
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m training.ship_check <folder of burako-eval --json tables>", file=sys.stderr)
        return 2
    folder = Path(args[0])
    missing = [name for name in TABLES if not (folder / f"{name}.json").is_file()]
    if missing:
        print(f"ship_check: {folder} lacks {', '.join(f'{name}.json' for name in missing)}", file=sys.stderr)
        return 2
    tables = {name: json.loads((folder / f"{name}.json").read_text()) for name in TABLES}
    result = checks(tables)
    for text, ok in result:
        print(("pass  " if ok else "FAIL  ") + text)
    passed = all(ok for _, ok in result)
    print("verdict:", "ships" if passed else "does not ship")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
