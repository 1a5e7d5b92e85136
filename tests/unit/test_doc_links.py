"""Every relative link in README.md and docs/*.md resolves: `[text](path)` to a file or folder
that exists, `[text](path#anchor)` and `[text](#anchor)` to a heading of that Markdown file,
by GitHub's rules for heading anchors. Links inside code (fenced blocks, `spans`) are not
links; absolute URLs (https:, mailto:) are not checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.docs import DOCS, README, REPO

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: links become their text, lower case, punctuation dropped
    (letters, digits, `_`, `-` and spaces stay), each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated one gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in a Markdown file's prose."""
    found = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        prose = re.sub(r"(`+).*?\1", "", line)  # code spans are not links
        found += [(number, m.group(1)) for m in LINK.finditer(prose)]
    return found


def broken(path: Path, root: Path = REPO) -> list[str]:
    """Each relative link of `path` that does not resolve, with its line (relative to `root`)
    and why."""
    out = []
    for number, target in links(path):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}:{number}: {target}"
        if not dest.exists():
            out.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{where}: no heading with that anchor in {dest.name}")
        elif anchor and dest.suffix != ".md":
            out.append(f"{where}: an anchor into a file that is not Markdown")
    return out


MARKDOWN = [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert not broken(path), "\n".join(broken(path))


def test_the_docs_exist_and_link_to_each_other() -> None:
    """The check above has something to check: README links every docs file."""
    assert len(MARKDOWN) > 5, MARKDOWN
    readme_targets = {t.partition("#")[0] for _, t in links(README)}
    for doc in DOCS.glob("*.md"):
        assert f"docs/{doc.name}" in readme_targets, f"README does not link docs/{doc.name}"


def test_slugs_follow_githubs_rules() -> None:
    assert slug("Install on the GPU machine") == "install-on-the-gpu-machine"
    assert slug("Printed once, or as JSON") == "printed-once-or-as-json"
    assert slug("The Snapshot as JSON") == "the-snapshot-as-json"
    assert slug("GPU check (preflight)") == "gpu-check-preflight"
    assert slug("`snapshot --json`: the_keys") == "snapshot---json-the_keys"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A part\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md#a-part) [ok](#page) [web](https://example.com/x#y)\n"
        "[gone](missing.md) [bad](other.md#no-such-part) [self](#nothing)\n"
        "```sh\n[in code](nowhere.md)\n```\n"
        "`[in a span](nowhere.md)`\n"
    )
    problems = [p.split(": ", 1)[1] for p in broken(page, root=tmp_path)]
    assert problems == [
        "missing.md: no such file",
        "other.md#no-such-part: no heading with that anchor in other.md",
        "#nothing: no heading with that anchor in page.md",
    ]
