"""core.hub.hub_client: every request through our client ends within its timeout, whatever
timeout the caller asks for (huggingface_hub passes timeout=None, no limit, on some calls)."""

from __future__ import annotations

import socket
import threading

import pytest

from rgpu_tui.core.hub.hub_client import HubTimeout, make_client

DEADLINE_S = 30.0  # the test's own bound: a client without a timeout fails here, not hangs


@pytest.mark.parametrize("asked", [None, 3600.0], ids=["no-limit", "an-hour"])
def test_a_request_that_asks_for_another_timeout_still_gets_ours(asked) -> None:
    outcome: list[BaseException | None] = []
    with socket.socket() as silent:  # accepts (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api/models/a/b"

        def ask() -> None:
            try:
                with make_client(1.0) as client:
                    client.get(url, timeout=asked)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=ask, daemon=True)
        thread.start()
        thread.join(DEADLINE_S)
    # closing the listener ended a request still waiting; it was not our timeout
    if thread.is_alive() or not outcome:
        pytest.fail(f"no answer and no timeout within {DEADLINE_S:g} s")
    assert isinstance(outcome[0], HubTimeout), outcome[0]
    assert outcome[0].timeout == 1.0
