"""The HTTP client every Hugging Face Hub call of rgpu-tui goes through, and the token.

Shared by push (core.hub.push) and pull (core.hub.hub_pull). `configure_hub(timeout)` installs,
through `huggingface_hub.set_client_factory`, an httpx client with connect/read/write
timeouts on every request (a call that asks for none, as huggingface_hub's repo_info does,
gets ours too) whose timeout is raised as `HubTimeout`: huggingface_hub retries its own
timeout errors for minutes, not ours, so a stalled Hub ends the command at once. It also
makes huggingface_hub quiet (no progress bars, no retry warnings on our screen) and
LFS-only (no Xet). `get_token()` reads the token the huggingface_hub way (HF_TOKEN, or
the stored login); callers never print, log, record or pass it on a command line.
"""

from __future__ import annotations

import threading

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


def make_client(timeout: float):
    import httpx2

    try:
        from huggingface_hub.utils._http import hf_request_event_hook

        hooks = {"request": [hf_request_event_hook]}
    except ImportError:  # pragma: no cover - a different huggingface_hub
        hooks = {}

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
