"""The footer: Textual's, less the keys that would be cut. A key shows whole or not at all
("g GPU▏" at 80 columns said nothing); `?` lists every key and ctrl+p finds each one."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Footer

KEY = "FooterKey"  # the footer's key widgets, by their CSS type (the class is private)


def key_width(key: Widget) -> int:
    """The cells a key takes in the footer: its text (with its padding) and its margins."""
    return key.render().cell_len + key.styles.margin.width


def fitting(widths: list[int], room: int) -> list[bool]:
    """Which keys to show, in order: each one that still fits whole in `room` cells."""
    shown = []
    for width in widths:
        fits = width <= room
        shown.append(fits)
        if fits:
            room -= width
    return shown


class KeysFooter(Footer):
    """Fitted after every recompose (the keys change with the focus and the screen) and
    every resize; the palette's key, docked right, always shows."""

    async def recompose(self) -> None:
        await super().recompose()
        self.fit_keys()

    def on_resize(self) -> None:
        self.fit_keys()

    def fit_keys(self) -> None:
        keys = list(self.query_children(KEY))
        if not keys or not self.size.width:
            return
        docked = [k for k in keys if k.has_class("-command-palette")]
        rest = [k for k in keys if not k.has_class("-command-palette")]
        room = self.size.width - sum(key_width(k) for k in docked)
        for key, fits in zip(rest, fitting([key_width(k) for k in rest], room), strict=True):
            if key.display != fits:
                key.display = fits
