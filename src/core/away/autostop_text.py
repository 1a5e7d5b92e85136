"""What autostop says (core.away.autostop): the countdown's line, why it holds and what to do,
what it did. One line each; the callers clean them (printable, no token) before they go out."""

from __future__ import annotations

import getpass
import os
import re

from ..base.invocation import command
from ..hub.weights_safety import (
    HASHING,
    OUTSIDE,
    PENDING,
    TORN,
    UNCHECKABLE,
    UNSAFE,
    HubCheck,
    RunWeights,
    Survey,
)
from ..run.tail import redact

NAMED_RUNS = 3  # runs named in one message; the rest are counted
_SHORT = re.compile(r"(last|epoch_\d+)\.pt")  # what `push --file` names without a path
TRUST_SETTING = "autostop_trust_records"


def nothing_text(survey: Survey) -> str:
    """What a survey with no weights file to lose says: never "nothing" without why."""
    if survey.runs:
        runs = f"{survey.runs} run{'s' if survey.runs > 1 else ''}"
        return f"no weights under {survey.root} ({runs} found, none with weights)"
    return f"no runs and no weights under {survey.root} (is that the folder that holds them?)"


def summary(survey: Survey) -> str:
    """What the countdown line says of the weights now."""
    if survey.doubts:
        return f"cannot check everything under {survey.root}: {survey.doubts[0]}"
    weights = survey.weights
    if not weights:
        return nothing_text(survey)
    unsafe = [w for w in weights if w.verdict in UNSAFE]
    if unsafe:
        first = unsafe[0]
        more = f" (+{len(unsafe) - 1} more)" if len(unsafe) > 1 else ""
        return f"{first.name}: {first.detail}{more}: {_todo(first, short=True)} or autostop holds"
    pending = [w for w in weights if w.verdict in PENDING]
    if pending:
        first = pending[0]
        verb = "hashing" if first.verdict == HASHING else "waiting for"
        return f"{verb} {first.label} to check it is on the Hub"
    return "all weights on the Hub"


def push_command(w: RunWeights) -> str:
    """The command that pushes this very file."""
    if w.file == "best.pt":
        extra = ""
    elif _SHORT.fullmatch(w.file):
        extra = f" --file {w.file.removesuffix('.pt')}"
    else:  # any other name: its path
        extra = f" --file {os.path.join(w.run_dir, 'weights', w.file)}"
    return f"`{command()} push {w.run_dir}{extra}`"


def _todo(w: RunWeights, short: bool = False) -> str:
    if w.verdict == OUTSIDE:
        return "copy the file it points to into the run, then push it"
    if w.verdict == UNCHECKABLE:
        return f"make it readable to {_user()}, the user the watcher runs as"
    if w.verdict == TORN:
        return (
            f"`{command()} resume {w.run_dir}` sets a torn checkpoint aside (or remove it yourself "
            "once its run's newest complete weights are pushed)"
        )
    if short:
        return "push it (p)"
    return f"push it (`p` in the app, or {push_command(w)})"


def held_text(unsafe: list[RunWeights], auto_push: bool) -> str:
    parts = [f"{w.name}: {w.detail}" for w in unsafe[:NAMED_RUNS]]
    if len(unsafe) > NAMED_RUNS:
        parts.append(f"{len(unsafe) - NAMED_RUNS} more")
    failed = next((w for w in unsafe if w.last_error), None)
    text = f"autostop held: {'; '.join(parts)}: {_todo(unsafe[0])}"
    if len(unsafe) > 1:
        text += ", and the same for the others"
    if failed is not None:
        text += f"; the last push failed: {failed.last_error}"
    elif auto_push:
        text += "; auto_push tried once this idle stretch"
    return text


def hub_held_text(hub: HubCheck) -> str:
    bad = hub.bad
    parts = [f"{f.weights.label}: {f.detail}" for f in bad[:NAMED_RUNS]]
    if len(bad) > NAMED_RUNS:
        parts.append(f"{len(bad) - NAMED_RUNS} more")
    first = bad[0].weights
    force = push_command(first)[:-1] + " --force`"
    return (
        f"autostop held: pushes.jsonl says pushed, but the Hub disagrees: {'; '.join(parts)}: "
        f"push again ({force})"
    )


def unreachable_text(hub: HubCheck) -> str:
    return (
        f"autostop held: cannot confirm on the Hub: {hub.unreachable}: it asks again in a "
        f"minute (`{TRUST_SETTING} = true` trusts pushes.jsonl instead, at a risk: see the docs)"
    )


def doubt_text(survey: Survey) -> str:
    return (
        f"autostop held: cannot check everything under {survey.root} for weights: "
        f"{'; '.join(survey.doubts)}"
    )


def missing_root_text(root: str) -> str:
    if os.path.lexists(root):
        return f"autostop held: {root} is not a folder: nothing is stopped until it is one"
    return (
        f"autostop held: {root} does not exist (a typo, or `watch` started from another "
        "folder?): nothing is stopped until it does"
    )


def fired_what(survey: Survey, safe: list[RunWeights], hub: HubCheck, trusted: bool) -> str:
    """What the `autostop` event says was checked."""
    if not safe:
        return nothing_text(survey)
    what = f"all weights on the Hub ({', '.join(w.label for w in safe[:NAMED_RUNS])}"
    more = len(safe) - NAMED_RUNS
    what += f" and {more} more)" if more > 0 else ")"
    if hub.unreachable and trusted:
        what += (
            f"; the Hub could not be asked ({hub.unreachable}): pushes.jsonl trusted "
            f"({TRUST_SETTING})"
        )
    else:
        what += ", checked on the Hub"
    return what


def scrub(text: str, token: str | None) -> str:
    """`text` with the token (and anything shaped like one) replaced: what goes in a record."""
    return redact(text.replace(token, "***") if token else text)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no name for this uid
        return "this user"
