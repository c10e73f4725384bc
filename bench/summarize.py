"""Markdown table of bench/results/results.jsonl: Burako beside the anchors.

Reports median [min–max] over the runs (rounds) of each benchmark, and the
ratio of our AEC 2-player steps/s to each benchmark's steps/s, two ways:
from the medians, and per round (same round tag, so both ran minutes apart
under the same machine load) as median [min–max].

Usage: python bench/summarize.py [bench/results/results.jsonl] [--reference rummy_aec_2p]
(the reference is the benchmark the ratio columns divide: ours, AEC, 2 players)
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

REFERENCE = "burako_aec_2p"
OURS = ("burako_", "rummy_")

LABELS = {
    "burako_aec_2p": "Burako `burako_env.env()` AEC, 2p, `reset(seed=i)` each game",
    "burako_aec_4p": "Burako `burako_env.env()` AEC, 4p",
    "burako_aec_python_2p": 'Burako `env(engine="python")` AEC (readable engine), 2p',
    "burako_raw_aec_2p": "Burako `raw_env` AEC (no wrappers), 2p",
    "burako_engine_2p": "Burako bare engine (`legal_mask` + `apply`), 2p",
    "burako_engine_obs_2p": "Burako bare engine + `Observer.encode`, 2p",
    "burako_fast_obs_2p": "Burako compiled core (`FastGame`: mask + encode + apply), 2p",
    "burako_vector_2p": "Burako batched API `BurakoVectorEnv`, 2p (obs + mask every step)",
    "burako_vector_4p": "Burako batched API `BurakoVectorEnv`, 4p (obs + mask every step)",
    "rummy_aec_2p": "Rummy `burako_env.rummy_env()` AEC, 2p, `reset(seed=i)` each game",
    "rummy_aec_3p": "Rummy `burako_env.rummy_env()` AEC, 3p",
    "rummy_aec_4p": "Rummy `burako_env.rummy_env()` AEC, 4p",
    "rummy_engine_2p": "Rummy bare engine (`RummyState`: `legal_mask` + `step`), 2p",
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


def main(path: str, reference: str = REFERENCE) -> None:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if not r["bench"].endswith("_conformance")]
    micro = [r for r in rows if r.get("mode") == "clone"]
    rows = [r for r in rows if r.get("mode") != "clone"]
    if not rows:
        print(f"no results in {path}")
        return
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[key_of(r)].append(r)
    ref = groups.get(reference, [])
    ref_by_tag = {r["tag"]: r["steps_per_s"] for r in ref}
    ref_med = statistics.median(r["steps_per_s"] for r in ref) if ref else None

    print(
        "| benchmark | runs | games/run | steps/s median [min–max] | games/s median [min–max] "
        "| CPU-time steps/s median | steps/game | forced frac | obs shape | actions "
        "| ratio: our AEC 2p ÷ this (medians) | ratio per round, median [min–max] |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ordered = sorted(groups, key=lambda k: (not k.startswith(OURS), list(LABELS).index(k) if k in LABELS else 99))
    for key in ordered:
        rs = groups[key]
        sps = [r["steps_per_s"] for r in rs]
        gps = [r["games_per_s"] for r in rs]
        csps = [r["cpu_steps_per_s"] for r in rs if r.get("cpu_steps_per_s")] or [0.0]
        spg = statistics.median(r["steps_per_game"] for r in rs)
        ratio = per_round = "–"
        if ref_med is not None:
            ratio = f"{ref_med / statistics.median(sps):.2f}×"
            rr = [ref_by_tag[r["tag"]] / r["steps_per_s"] for r in rs if r["tag"] in ref_by_tag]
            if rr:
                per_round = fmt_range(rr, 2)
        print(
            f"| {LABELS.get(key, key)} | {len(rs)} | {rs[0]['games']} | {fmt_range(sps)} | {fmt_range(gps, 1)} "
            f"| {statistics.median(csps):,.0f} | {spg:,.1f} | {rs[0].get('forced_frac') or '–'} "
            f"| {obs_text(rs[0])} | {rs[0].get('action_space', '–')} | {ratio} | {per_round} |"
        )

    changed = [k for k in ordered if len({(r["games"], r["agent_steps"]) for r in groups[k]}) > 1]
    if changed:
        print()
        print(
            "**Warning**: the same games gave different step counts across rounds (the code changed "
            f"during the run?): {', '.join(changed)}"
        )

    ours = [k for k in ordered if k.startswith("burako_")]  # the Burako-only statistics
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
            turns = [r["mean_turns_per_hand"] for r in rs if r.get("mean_turns_per_hand") is not None]
            per_turn = [r["steps_per_turn"] for r in rs if r.get("steps_per_turn") is not None]
            legal = [r["mean_legal_actions"] for r in rs if r.get("mean_legal_actions") is not None]
            print(
                f"| {LABELS.get(key, key)} | {_median_text(turns, 1)} | {_median_text(per_turn, 2)} "
                f"| {_median_text(legal, 2)} | {ends_text} |"
            )

    vector = [k for k in ordered if groups[k][0].get("mode") == "vector"]
    if vector:
        print()
        print(
            "| batched API | batch | threads | memory (all arrays) | memory per game | speed-up over OpenSpiel + obs |"
        )
        print("|---|---|---|---|---|---|")
        spiel = groups.get("openspiel_gin_rummy_obs", [])
        spiel_med = statistics.median(r["steps_per_s"] for r in spiel) if spiel else None
        for key in vector:
            r0 = groups[key][0]
            med = statistics.median(r["steps_per_s"] for r in groups[key])
            speedup = f"{med / spiel_med:.1f}×" if spiel_med else "–"
            print(
                f"| {LABELS.get(key, key)} | {r0['batch']} | {r0['threads']} | {r0['memory_bytes'] / 1e6:.1f} MB "
                f"| {r0['memory_per_game_bytes'] / 1e3:.1f} kB | {speedup} |"
            )
    if micro:
        print()
        print(
            "| per game state (mid-game, turn 40) | runs | `GameState.clone` µs | `GameState.determinize` µs "
            "| `FastGame.clone` µs | readable state bytes | fast state bytes |"
        )
        print("|---|---|---|---|---|---|---|")
        by_bench: dict[str, list[dict]] = defaultdict(list)
        for r in micro:
            by_bench[r["bench"]].append(r)
        for _key, rs in sorted(by_bench.items()):
            clone = fmt_range([r["clone_us"] for r in rs], 2)
            fast_clone = fmt_range([r["fast_clone_us"] for r in rs], 2)
            print(
                f"| {rs[0]['players']} players | {len(rs)} | {clone} "
                f"| {fmt_range([r['determinize_us'] for r in rs], 1)} | {fast_clone} "
                f"| {fmt_range([r['state_bytes'] for r in rs])} | {rs[0]['fast_state_bytes']:,} |"
            )


def _median_text(vals: list[float], digits: int) -> str:
    return f"{statistics.median(vals):.{digits}f}" if vals else "–"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=str(Path(__file__).parent / "results" / "results.jsonl"))
    parser.add_argument("--reference", default=REFERENCE, help="the benchmark the ratio columns divide")
    args = parser.parse_args()
    main(args.path, args.reference)
