"""The HTTP client every Hugging Face Hub call of rgpu-tui goes through, and the token.

Shared by push (core.hub.push) and pull (core.hub.hub_pull). `configure_hub(timeout)` installs,
through `huggingface_hub.set_client_factory`, an httpx client with connect/read/write
timeouts on every request (a call that asks for none, as huggingface_hub's repo_info does,
gets ours too) whose timeout is raised as `HubTimeout`: huggingface_hub retries its own
timeout errors for minutes, not ours, so a stalled Hub ends the command at once. It also
makes huggingface_hub quiet (no progress bars, no retry warnings on our screen) and
LFS-only (no Xet). `get_token()` reads the token the huggingface_hub way (HF_TOKEN, or
the stored login); callers never print, log, record or pass it on a command line.

`bounded(seconds, max_bytes, what)` bounds every Hub call made in its block on this thread
as a whole, not each read: by a deadline (a listing whose pages never end, an answer that
drips a byte at a time within each read timeout) and by the size of each answer's body.
Past either, the call raises HubLimit with one line naming `what`.
"""

from __future__ import annotations

import contextlib
import threading
import time

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 60.0

_CLIENT_LOCK = threading.Lock()
_CLIENT_TIMEOUT: float | None = None


class HubTimeout(Exception):
    """The Hub did not answer in time (raised by our HTTP client instead of httpx's
    timeout, so that huggingface_hub does not retry a stalled server for minutes)."""

    def __init__(self, timeout: float):
        super().__init__(f"no answer within {timeout:g} s")
        self.timeout = timeout


class HubLimit(Exception):
    """A Hub call went past the bounds of `bounded()`; str(exc) is the one line to show."""


# [deadline on the monotonic clock, max body bytes, what, seconds, an answer came]
_BOUNDS = threading.local()


@contextlib.contextmanager
def bounded(seconds: float, max_bytes: int, what: str):
    """Hub calls made in this block on this thread end by `seconds` from now, and each
    answer's body holds at most `max_bytes` (see the module doc)."""
    old = getattr(_BOUNDS, "value", None)
    _BOUNDS.value = [time.monotonic() + seconds, max_bytes, what, seconds, False]
    try:
        yield
    finally:
        _BOUNDS.value = old


def _bounds():
    return getattr(_BOUNDS, "value", None)


def _past_deadline(bounds) -> HubLimit:
    _deadline, _max, what, seconds, answered = bounds
    if not answered:  # not one answer in the block: the Hub is silent, not slow
        return HubLimit(f"the Hub did not answer within {seconds:g} s: try again later")
    return HubLimit(f"{what} did not end within {seconds:g} s (--timeout): try again later")


def _bound_request(request) -> None:
    """A request hook: none starts past the deadline, and no read waits beyond it."""
    bounds = _bounds()
    if bounds is None:
        return
    left = bounds[0] - time.monotonic()
    if left <= 0:
        raise _past_deadline(bounds)
    timeout = dict(request.extensions.get("timeout") or {})
    for key in ("connect", "read", "write", "pool"):
        value = timeout.get(key)
        timeout[key] = left if value is None else min(value, left)
    request.extensions["timeout"] = timeout


def _bound_response(response) -> None:
    """A response hook: the body is read within the deadline and up to the size bound."""
    bounds = _bounds()
    if bounds is not None:
        bounds[4] = True
        response.stream = _bounded_stream_class()(response.stream, bounds)


_STREAM_CLASS: list = []


def _bounded_stream_class():
    """The body wrapper (an httpx2 SyncByteStream: made once, httpx2 imported late)."""
    if _STREAM_CLASS:
        return _STREAM_CLASS[0]
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        """A response body that ends the call past the deadline or the size bound."""

        def __init__(self, inner, bounds) -> None:
            self.inner = inner
            self.bounds = bounds

        def __iter__(self):
            deadline, max_bytes, what = self.bounds[:3]
            got = 0
            for chunk in self.inner:
                got += len(chunk)
                if got > max_bytes:
                    raise HubLimit(f"{what}: an answer over {max_bytes >> 20} MB, not read")
                if time.monotonic() > deadline:
                    raise _past_deadline(self.bounds)
                yield chunk

        def close(self) -> None:
            close = getattr(self.inner, "close", None)
            if close is not None:
                close()

    _STREAM_CLASS.append(BoundedStream)
    return BoundedStream


def make_client(timeout: float):
    import httpx2

    hooks: dict = {"request": [_bound_request], "response": [_bound_response]}
    try:
        from huggingface_hub.utils._http import hf_request_event_hook

        hooks["request"].insert(0, hf_request_event_hook)
    except ImportError:  # pragma: no cover - a different huggingface_hub
        pass

    limits = httpx2.Timeout(timeout).as_dict()

    class _HubClient(httpx2.Client):
        def send(self, request, **kwargs):
            # every request waits `timeout` at most: huggingface_hub passes timeout=None
            # (no limit at all) on some calls, repo_info among them
            request.extensions = {**request.extensions, "timeout": limits}
            try:
                return super().send(request, **kwargs)
            except httpx2.TimeoutException as exc:
                raise HubTimeout(timeout) from exc

    return _HubClient(
        event_hooks=hooks,
        follow_redirects=True,
        timeout=httpx2.Timeout(timeout),
    )


def configure_hub(timeout: float) -> None:
    """Quiet, LFS-only huggingface_hub with our timeouts (idempotent)."""
    global _CLIENT_TIMEOUT
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.utils import disable_progress_bars
    from huggingface_hub.utils import logging as hf_logging

    constants.HF_HUB_DISABLE_XET = True  # uploads from a file object go through LFS
    disable_progress_bars()
    hf_logging.set_verbosity_error()  # retries log warnings to stderr: not on our screen
    with _CLIENT_LOCK:
        if _CLIENT_TIMEOUT != timeout:
            huggingface_hub.set_client_factory(lambda: make_client(timeout))
            _CLIENT_TIMEOUT = timeout


def get_token() -> str | None:
    """The token huggingface_hub would use (HF_TOKEN, else the stored login), or None."""
    try:
        from huggingface_hub import get_token as hf_get_token

        return hf_get_token()
    except Exception:
        return None
