"""Schedules: config values that change at given updates.

In a training config::

    schedules:
      learning_rate: [[0, 1.0e-4], [265, 2.0e-4]]   # from update 265 on: 2e-4
      baseline_fraction: [[265, 0.6]]               # before 265: the field's own value

A schedule is a list of ``[update, value]`` points, updates strictly
increasing; from each listed update on (the update about to run, counted
from 0) the value replaces the config field's; before the first point the
field's own value holds. Values are piecewise constant, except that a point
written ``[update, value, linear]`` is reached linearly from the point
before it (a number field only), so a decay is one line::

      learning_rate: [[0, 1.0e-4], [180, 0.7e-4, linear], [181, 1.4e-4], [470, 0.4e-4, linear]]

(``anneal_lr`` still scales the scheduled learning rate linearly to 0 over
``total_steps``; a run bounded by ``max_minutes`` or ``max_updates`` writes its decay here.)
Which fields may be scheduled is :data:`SCHEDULABLE`; the trainer applies the
values at the start of every update, so a resumed run picks up the same
values at the same updates. The config checks the values every listed update
gives (ranges, the league's shares) when it is read, not when training gets
there.
"""

from __future__ import annotations

import math
from typing import Any

#: the mark of a point reached linearly from the one before it
LINEAR = "linear"

#: fields a schedule may change, with the type of their values
SCHEDULABLE: dict[str, tuple[type, ...]] = {
    "learning_rate": (float, int),
    "baseline_fraction": (float, int, type(None)),
    "self_play_fraction": (float, int),
    "ent_coef": (float, int),
    "clip_coef": (float, int),
    "target_kl": (float, int, type(None)),
    "update_epochs": (int,),
    "anchor_kl_coef": (float, int),
}


def schedule_problems(schedules: Any, annotations: dict[str, Any] | None = None) -> list[str]:
    """Everything wrong with a ``schedules`` mapping, as messages (empty: fine).

    With ``annotations`` (the config's field types), each value is checked and
    normalised in place by the config's own rules (``training.config_fields``:
    ``1e-3`` read by YAML as a string becomes a float)."""
    if not isinstance(schedules, dict):
        return [f"schedules must be a mapping of field -> [[update, value(, linear)], ...], got {schedules!r}"]
    problems = []
    for name, points in schedules.items():
        if name not in SCHEDULABLE:
            problems.append(f"schedules: {name!r} cannot be scheduled; schedulable: {sorted(SCHEDULABLE)}")
            continue
        if not isinstance(points, list) or not points:
            problems.append(f"schedules.{name} must be a non-empty list of [update, value] pairs, got {points!r}")
            continue
        last = -1
        for index, point in enumerate(points):
            if not isinstance(point, (list, tuple)) or len(point) not in (2, 3):
                problems.append(f"schedules.{name}: {point!r} is not an [update, value(, linear)] point")
                continue
            update, value = point[0], point[1]
            if len(point) == 3:
                if point[2] != LINEAR:
                    problems.append(f"schedules.{name}: {point!r}: the third element may only be {LINEAR!r}")
                elif index == 0:
                    problems.append(f"schedules.{name}: {point!r} is linear but has no point before it to start from")
                elif float not in SCHEDULABLE[name] or any(
                    isinstance(p, (list, tuple)) and len(p) > 1 and p[1] is None for p in points[index - 1 : index + 1]
                ):
                    problems.append(f"schedules.{name}: {point!r}: only a float field moves linearly, between numbers")
            if isinstance(update, bool) or not isinstance(update, int) or update < 0:
                problems.append(f"schedules.{name}: update {update!r} must be an integer >= 0")
                continue
            if update <= last:
                problems.append(f"schedules.{name}: updates must increase, got {update} after {last}")
            last = update
            if annotations is not None and name in annotations:
                from training.config_fields import FieldError, check_value

                try:
                    value = check_value(f"schedules.{name} at update {update}", value, annotations[name])
                except FieldError as exc:
                    problems.append(str(exc))
                    continue
                if isinstance(point, list):
                    point[1] = value
            if isinstance(value, bool) or not isinstance(value, SCHEDULABLE[name]):
                kinds = "/".join(t.__name__ for t in SCHEDULABLE[name])
                problems.append(f"schedules.{name}: value {value!r} at update {update} must be {kinds}")
    return problems


def value_at(points: list[list[Any]], update: int, default: Any) -> Any:
    """The scheduled value for ``update`` (``default`` before the first point)."""
    value = default
    for index, point in enumerate(points):
        start, scheduled = point[0], point[1]
        if update >= start:
            value = scheduled
            continue
        if len(point) == 3 and index > 0:  # between the point before and this linear one
            before, before_value = points[index - 1][0], points[index - 1][1]
            value = before_value + (scheduled - before_value) * (update - before) / (start - before)
        break
    return value


def scheduled_values(schedules: dict[str, list[list[Any]]], update: int, config: Any) -> dict[str, Any]:
    """Every scheduled field's value for ``update`` (fields without a schedule are left out)."""
    return {name: value_at(points, update, getattr(config, name)) for name, points in schedules.items()}


#: how often (in updates into a run or a resumed part of one) its pace is checked against its schedules
PACE_CHECK_UPDATES = 50


def last_scheduled_update(schedules: dict[str, list[list[Any]]]) -> tuple[int, str] | None:
    """The latest update any schedule names, and that schedule's field (None: no schedules)."""
    points = [(points[-1][0], name) for name, points in schedules.items() if points]
    return max(points) if points else None


def pace_warning(
    schedules: dict[str, list[list[Any]]],
    *,
    update: int,
    updates_timed: int,
    seconds_timed: float,
    seconds_left: float | None,
    decisions_per_update: float,
    decisions_left: float,
    max_updates: int | None,
) -> str | None:
    """Why the run will end before its schedules' last point, at the pace of its last ``updates_timed``
    updates (``seconds_timed``), or None when it gets there.

    A schedule's points are update numbers and the reference run's budget is a clock (``max_minutes``)
    as well as ``total_steps``: on a slower machine the clock ends the run before a late step-size
    decay, and the bot it exports never had it. Said early, so the run can be stopped and given a
    larger budget or moved points instead of ending weaker without a word. A point at update ``u``
    takes effect when update ``u`` runs, so the run must make ``u + 1`` updates. A bound that allows
    ``x`` more updates at this pace lets ``ceil(x)`` start (the loop starts one whenever the clock and
    the decisions are not yet used up); every bound that stops the run sooner is named, with what it
    needs (rounded up)."""
    last = last_scheduled_update(schedules)
    if last is None or updates_timed <= 0 or update > last[0]:
        return None
    target, field = last
    needed = target + 1 - update  # updates still to run, the last point's own included
    seconds_per_update = seconds_timed / updates_timed
    short: list[tuple[float, str, str]] = []  # (updates the bound allows, the bound, what to raise)
    steps_allows = decisions_left / max(decisions_per_update, 1e-9)
    if math.ceil(steps_allows) < needed:
        more = max(math.ceil((needed - steps_allows) * decisions_per_update / 1e5) / 10, 0.1)
        short.append((steps_allows, "total_steps", f"total_steps by at least {more:.1f} M decisions"))
    clock_allows = None if seconds_left is None else seconds_left / max(seconds_per_update, 1e-9)
    if clock_allows is not None and math.ceil(clock_allows) < needed:
        minutes = max(math.ceil((needed - clock_allows) * seconds_per_update / 60), 1)
        advice = f"max_minutes by at least {minutes} minute{'s' if minutes > 1 else ''}"
        short.append((clock_allows, "max_minutes", advice))
    if max_updates is not None and max_updates < target + 1:
        short.append((float(max_updates - update), "max_updates", f"max_updates to at least {target + 1:,}"))
    if not short:
        return None
    end = update + max(0, math.ceil(min(allowed for allowed, _, _ in short)))
    bounds = " and ".join(bound for _, bound, _ in short)
    raises = "; ".join(advice for _, _, advice in short)
    return (
        f"pace: {seconds_per_update:.1f} s and {decisions_per_update:,.0f} decisions an update over the last "
        f"{updates_timed} updates; at that pace {bounds} end{'s' if len(short) == 1 else ''} the run after "
        f"{end:,} updates, so update {target:,} (counted from 0: the last point of schedules.{field}) never runs "
        f"and what the schedules set from there on never happens. To reach it, raise {raises}; or move the "
        "schedules' points earlier (docs/training/README.md)"
    )
