"""Markdown table of bench/results/results.jsonl: Burako beside the anchors.

Reports median [min–max] over the runs (rounds) of each benchmark, and the
ratio of our AEC 2-player steps/s to each benchmark's steps/s, two ways:
from the medians, and per round (same round tag, so both ran minutes apart
under the same machine load) as median [min–max].

Usage: python bench/summarize.py [bench/results/results.jsonl]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REFERENCE = "burako_aec_2p"

LABELS = {
    "burako_aec_2p": "Burako `burako_env.env()` AEC, 2p, `reset(seed=i)` each game",
    "burako_aec_4p": "Burako `burako_env.env()` AEC, 4p",
    "burako_raw_aec_2p": "Burako `raw_env` AEC (no wrappers), 2p",
    "burako_engine_2p": "Burako bare engine (`legal_mask` + `apply`), 2p",
    "burako_engine_obs_2p": "Burako bare engine + `Observer.encode`, 2p",
    "pettingzoo_gin_rummy_v4_aec (seed each)": "(a) PettingZoo gin_rummy_v4 AEC, `reset(seed=i)` each game",
    "pettingzoo_gin_rummy_v4_aec (seed once)": "(a) PettingZoo gin_rummy_v4 AEC, seeded once",
    "rlcard_gin_rummy_direct": "(b) RLCard `gin-rummy` direct",
    "openspiel_gin_rummy_bare": "(c-i) OpenSpiel `gin_rummy` (C++), bare",
    "openspiel_gin_rummy_obs": "(c-ii) OpenSpiel `gin_rummy` + `observation_tensor`",
}


def fmt_range(vals: list[float], digits: int = 0) -> str:
    med = statistics.median(vals)
    f = f"{{:,.{digits}f}}"
    return f"{f.format(med)} [{f.format(min(vals))}–{f.format(max(vals))}]"


def key_of(r: dict) -> str:
    return r["bench"] + (f" (seed {r['seed_mode']})" if "seed_mode" in r else "")


def obs_text(r: dict) -> str:
    shape = r.get("obs_shape")
    if shape is None:
        return "–"
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def main(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if not r["bench"].endswith("_conformance")]
    if not rows:
        print(f"no results in {path}")
        return
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[key_of(r)].append(r)
    ref = groups.get(REFERENCE, [])
    ref_by_tag = {r["tag"]: r["steps_per_s"] for r in ref}
    ref_med = statistics.median(r["steps_per_s"] for r in ref) if ref else None

    print(
        "| benchmark | runs | games/run | steps/s median [min–max] | games/s median [min–max] "
        "| CPU-time steps/s median | steps/game | forced frac | obs shape | actions "
        "| ratio: our AEC 2p ÷ this (medians) | ratio per round, median [min–max] |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ordered = sorted(groups, key=lambda k: (not k.startswith("burako_"), list(LABELS).index(k) if k in LABELS else 99))
    for key in ordered:
        rs = groups[key]
        sps = [r["steps_per_s"] for r in rs]
        gps = [r["games_per_s"] for r in rs]
        csps = [r["cpu_steps_per_s"] for r in rs if r.get("cpu_steps_per_s")]
        spg = statistics.median(r["steps_per_game"] for r in rs)
        ratio = per_round = "–"
        if ref_med is not None:
            ratio = f"{ref_med / statistics.median(sps):.2f}×"
            rr = [ref_by_tag[r["tag"]] / r["steps_per_s"] for r in rs if r["tag"] in ref_by_tag]
            if rr:
                per_round = fmt_range(rr, 2)
        print(
            f"| {LABELS.get(key, key)} | {len(rs)} | {rs[0]['games']} | {fmt_range(sps)} | {fmt_range(gps, 1)} "
            f"| {statistics.median(csps):,.0f} | {spg:,.1f} | {rs[0]['forced_frac']} "
            f"| {obs_text(rs[0])} | {rs[0]['action_space']} | {ratio} | {per_round} |"
        )

    changed = [k for k in ordered if len({(r["games"], r["agent_steps"]) for r in groups[k]}) > 1]
    if changed:
        print()
        print(
            "**Warning**: the same games gave different step counts across rounds (the code changed "
            f"during the run?): {', '.join(changed)}"
        )

    ours = [k for k in ordered if k.startswith("burako_")]
    if ours:
        print()
        print("| Burako benchmark | mean turns/hand | agent steps/turn | mean legal actions | end reasons (all runs) |")
        print("|---|---|---|---|---|")
        for key in ours:
            rs = groups[key]
            ends: dict[str, int] = defaultdict(int)
            for r in rs:
                for k, v in r.get("end_reasons", {}).items():
                    ends[k] += v
            ends_text = ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))
            print(
                f"| {LABELS.get(key, key)} | {statistics.median(r['mean_turns_per_hand'] for r in rs):.1f} "
                f"| {statistics.median(r['steps_per_turn'] for r in rs):.2f} "
                f"| {statistics.median(r['mean_legal_actions'] for r in rs):.2f} | {ends_text} |"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent / "results" / "results.jsonl"))
