"""URLs made safe to record or show: no credentials in them.

`HF_ENDPOINT=http://user:hf_...@host` is a working way to reach a Hub behind a proxy that
wants basic auth, and libraries put the URL they requested into their error messages. The
userinfo part (`user:password@`) of every URL in a text is dropped before the text is
recorded (pushes.jsonl), printed or shown in a notice: the endpoint, commit URLs and error
messages all go through `strip_userinfo`.
"""

from __future__ import annotations

import re

# scheme://, then the authority up to the last "@" before the path, query, fragment or the
# end of the URL (a password may itself hold "@", ":" or "%40")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@")


def strip_userinfo(text: str) -> str:
    """`text` (one URL or any message holding URLs) with the `user:password@` of each URL
    removed: `http://u:p@host:8080/x` -> `http://host:8080/x`."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(r"\1", text)
