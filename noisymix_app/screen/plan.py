"""What a screen trains: the reference methods' recipe (``screen_plan``) on some of their seeds (``screen_seeds``).
Read by the screen (``command``) and by the builder of the reference at the published rows (``published``)."""

from __future__ import annotations

import dataclasses

from noisymix_app.screen.reference import DEFAULT_SEEDS, EXECUTION_FIELDS, PLAN, Reference
from noisymix_infra.io import printable

__all__ = ["screen_plan", "screen_seeds"]


def screen_plan(reference: Reference, overrides: list[str] | tuple[str, ...] = ()):
    """The plan the reference methods were trained with (``analogue-methods`` and the summary's ``--set``
    items), on ``reference``'s seeds (``screen_seeds`` has cut them), with ``overrides`` of execution fields only
    (``workers``); one line for an override that changes the recipe."""
    from noisymix_app.reproduce.plans import PLANS
    from noisymix_infra.config import apply_overrides

    try:
        recipe = apply_overrides(PLANS[PLAN], list(reference.overrides))
    except (ValueError, TypeError) as error:
        raise ValueError(f"{printable(str(reference.path))}: its plan {printable(reference.plan_name)} is not one "
                         f"this code resolves ({str(error).splitlines()[0]})") from None
    plan = apply_overrides(recipe, list(overrides))
    changed = sorted(f.name for f in dataclasses.fields(plan)
                     if f.name not in EXECUTION_FIELDS and getattr(plan, f.name) != getattr(recipe, f.name))
    if changed or any(o.partition("=")[0].strip() in EXECUTION_FIELDS - {"workers"} for o in overrides):
        what = changed[0] if changed else next(o.partition("=")[0] for o in overrides)
        raise ValueError(f"--set {printable(what)}: a screen trains the recipe of its reference methods "
                         f"({printable(reference.plan_name)}) on their seeds, and takes --set workers=N only (besides "
                         "seeds=A,B,..., some of theirs); for "
                         "another recipe make its eight-method summary (noisymix reproduce --plan analogue-methods "
                         "--set ..., then noisymix analogue --results DIR) and give it with --summary")
    if not plan.perturbed_suite:
        raise ValueError(f"{printable(reference.plan_name)} evaluates no -P set: a screen reads Digits-P")
    return dataclasses.replace(plan, seeds=reference.seeds)


def screen_seeds(reference: Reference, overrides: list[str] | tuple[str, ...] = ()) -> tuple[Reference, list[str]]:
    """The seeds a screen trains (issue 65, goal 6) and the other overrides: ``--set seeds=10,12,...``, some of
    the summary's seeds, or by default its first ``DEFAULT_SEEDS``; the reference returned is cut to them
    (``Reference.on_seeds``: paired seed by seed with its runs of the same seeds).  One line for a seed the
    summary has no run of, a seed named twice, or fewer than two (no interval)."""
    from noisymix_infra.config import parse_value

    rest, chosen = [], None
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() != "seeds":
            rest.append(item)
            continue
        try:
            chosen = tuple(parse_value(value.strip(), tuple[int, ...], "seeds"))
        except (ValueError, TypeError) as error:
            raise ValueError(f"--set seeds={printable(value)[:80]}: {str(error).splitlines()[0][:120]}") from None
    if chosen is None:
        return reference.on_seeds(reference.seeds[:DEFAULT_SEEDS]), rest
    missing = [s for s in chosen if s not in reference.seeds]
    if missing or len(set(chosen)) != len(chosen) or len(chosen) < 2:
        why = (f"the summary has no runs of seed {missing[0]}" if missing else "a seed is named twice"
               if len(set(chosen)) != len(chosen) else "a screen needs two seeds at least (an interval over them)")
        raise ValueError(f"--set seeds={printable(value)[:80]}: {why}; a screen is paired seed by seed with the "
                         f"summary's runs, of seeds {', '.join(map(str, reference.seeds))}")
    return reference.on_seeds(chosen), rest
