"""The mean of several policies' weights, as one policy file (``burako-average``).

    burako-average --out averaged.pt runs/<run>/policies/update_0017*.pt runs/<run>/checkpoints/latest.pt

Late in a run, consecutive policies differ by the noise of the last updates
as much as by what they learned; in the one run measured, their mean weights
played steadier than its last network alone (docs/training/README.md,
"Averaging the late policies").
A run does this itself with ``average_kept_policies`` (its ``policy.pt``);
this command does it for any files: exported policies or training
checkpoints of one network and one set of rules, the furthest trained last
(anything else is refused before a file is written, as are a file given twice, two
files of the same network or the same update, and a file that is already a mean). The output keeps the
last source's config, progress and weight precision, and says how many policies it averages
(``averaged``); every policy agent plays it as any other.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents import checkpoint as ckpt
from training.files import check_output_file


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burako-average",
        description="Write one policy whose weights are the mean of the given policies' (same network, same rules).",
    )
    parser.add_argument("sources", nargs="+", help="policy files or training checkpoints, the furthest trained last")
    parser.add_argument("--out", required=True, help="the policy file to write (not one of the sources)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        out = check_output_file(args.out, "--out")
        sources = [Path(s) for s in args.sources]
        if len(sources) < 2:
            raise ValueError(f"give at least two policies to average, got {len(sources)}")
        if out.exists() and not out.is_file():
            raise ValueError(f"--out {args.out} is not a regular file; the policy is written to a file")
        if out.resolve() in {s.resolve() for s in sources}:
            raise ValueError(f"--out {args.out} is one of the sources; write the mean to another file")
        twice = sorted({str(s) for s in sources if sum(t.resolve() == s.resolve() for t in sources) > 1})
        if twice:
            raise ValueError(f"{twice} given more than once; each policy is averaged once")
        loaded = [ckpt.load(s) for s in sources]
        payload = ckpt.average_policies(loaded, [str(s) for s in sources])
        # a copy of a file exported without its progress is one network twice, past the same-update
        # check: it counted twice in the mean
        first_of: dict[str, Path] = {}
        for source, data in zip(sources, loaded, strict=True):
            digest = ckpt.weights_digest(data, str(source))
            if digest in first_of:
                raise ValueError(f"{source} holds the same network as {first_of[digest]}; each policy is averaged once")
            first_of[digest] = source
    except (ValueError, ckpt.CheckpointError) as exc:
        parser.error(str(exc))
    ckpt.save(payload, out)
    progress = payload.get("trained")
    at = "" if progress is None else f", trained to update {progress['update']}"
    print(f"{out}: the mean of {payload['averaged']} policies{at}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
