"""What went wrong talking to the Hub, in one line, and whether it is worth another try.

`describe_error` turns an exception from a push or a pull (huggingface_hub, httpx, the
staging copy, our own HTTP client's timeout) into one line saying what to do; `scrub`
takes the token and URL credentials out of any text before it is shown or recorded.
`retrying` runs one Hub call again after a transient error (5xx, 429, the connection
refused or reset; never a timeout), waiting RETRY_WAITS between tries.
"""

from __future__ import annotations

from ..base.urls import strip_userinfo
from ..run.tail import redact
from .hub_client import HubLimit, HubTimeout
from .staging import StagingError

RETRY_WAITS = (1.0, 2.0)


class PushFailed(Exception):
    """A push failure whose message is already the one line to show."""


def _chain(exc: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _first_line(text: str, limit: int = 200) -> str:
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def scrub(text: str, token: str | None) -> str:
    """Remove the token (and anything shaped like one) and URL credentials from text."""
    if token:
        text = text.replace(token, "***")
    return redact(strip_userinfo(text))


def _status(exc) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def describe_error(
    exc: BaseException, *, repo: str, endpoint: str, timeout: float, attempts: int = 1
) -> str:
    """One line saying what went wrong and what to do (the token is scrubbed by the caller)."""
    try:
        from huggingface_hub.errors import (
            HfHubHTTPError,
            HFValidationError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )
    except ImportError:  # pragma: no cover
        HfHubHTTPError = HFValidationError = OfflineModeIsEnabled = RepositoryNotFoundError = ()
    try:
        import httpx2

        net_timeout, net_error = httpx2.TimeoutException, httpx2.TransportError
    except ImportError:  # pragma: no cover
        net_timeout = net_error = ()
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, (PushFailed, StagingError, HubLimit)):
            return str(e)
        if isinstance(e, HubTimeout):
            return f"the Hub did not answer within {e.timeout:g} s: try again later"
        if isinstance(e, net_timeout):
            return f"the Hub did not answer within {timeout:g} s: try again later"
        if isinstance(e, OfflineModeIsEnabled):
            return "HF_HUB_OFFLINE is set: unset it to push"
        if isinstance(e, RepositoryNotFoundError):
            return f"repo {repo} not found (404): check the name and that the token can see it"
        if isinstance(e, HfHubHTTPError):
            status = _status(e)
            server = _first_line(getattr(e, "server_message", None) or "")
            if status == 401:
                return "token rejected (401): check HF_TOKEN or run `hf auth login`"
            if status == 403:
                return f"no write access to {repo} (403): use a token with write access"
            if status == 404:
                return f"repo {repo} not found (404): check the name and that the token can see it"
            if status == 429:
                return "the Hub is rate-limiting this token (429): try again later"
            if status is not None and status >= 500:
                tries = f" ({attempts} tries)" if attempts > 1 else ""
                return f"the Hub failed with {status}{tries}: try again later"
            return f"the Hub refused the push ({status})" + (f": {server}" if server else "")
        if isinstance(e, HFValidationError):
            return f"bad repo name {repo}: {_first_line(str(e))}"
        if isinstance(e, net_error):
            reason = _first_line(str(e)) or type(e).__name__
            return f"cannot reach the Hub at {endpoint}: {reason}"
    for e in chain:
        if isinstance(e, ValueError) and "LFS" in str(e):
            return f"the Hub rejected the upload: {_first_line(str(e))}"
        if isinstance(e, OSError) and not isinstance(e, HfHubHTTPError):
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            return f"{e.strerror or _first_line(str(e)) or type(e).__name__}{where}"
    return f"unexpected error: {_first_line(str(exc)) or 'no details given'}"


def describe_pull_error(exc: BaseException, *, repo: str, endpoint: str, timeout: float) -> str:
    """One line for a failed pull: the few that differ from a push's, else describe_error
    (timeouts, 401, 404, 429, 5xx, an unreachable Hub)."""
    try:
        from huggingface_hub.errors import (
            HfHubHTTPError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )
    except ImportError:  # pragma: no cover
        HfHubHTTPError = OfflineModeIsEnabled = RepositoryNotFoundError = ()
    for e in _chain(exc):
        if isinstance(e, OfflineModeIsEnabled):
            return "HF_HUB_OFFLINE is set: unset it to pull"
        if isinstance(e, HfHubHTTPError):
            status = _status(e)
            if status == 403:
                return f"no read access to {repo} (403): use a token that can read it"
            if isinstance(e, RepositoryNotFoundError) or status in (401, 404, 429):
                break
            if status is not None and 400 <= status < 500:
                return f"the Hub refused the download ({status})"
            break
    return describe_error(exc, repo=repo, endpoint=endpoint, timeout=timeout)


def _transient(exc: BaseException) -> bool:
    """Worth another try: 5xx/429, or the connection refused/reset; never a timeout."""
    try:
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:  # pragma: no cover
        return False
    for e in _chain(exc):
        if isinstance(e, (HubTimeout, HubLimit)):
            return False
        if isinstance(e, HfHubHTTPError):
            status = _status(e)
            return status is not None and (status >= 500 or status == 429)
        if isinstance(e, httpx2.TimeoutException):
            return False
        if isinstance(e, httpx2.TransportError):
            return True
    return False


def retrying(fn, waits, sleep, counter: list[int]):
    waits = tuple(waits)
    for i in range(len(waits) + 1):
        counter[0] = i + 1
        try:
            return fn()
        except Exception as exc:
            if i >= len(waits) or not _transient(exc):
                raise
            sleep(waits[i])
    raise AssertionError("unreachable")  # pragma: no cover
