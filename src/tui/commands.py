"""The command palette's list of what the keys do (ctrl+p): every action bound on the app
and on the screen the palette was opened from, with its key.

Built from the bindings themselves (Screen.active_bindings), not from a list of its own: a
key added to the app or a screen later is in the palette too, hidden ones (`P`, `r`, `a`)
included. A widget's own keys (the runs list's arrows) are not actions of the app and are
left out; so is the palette's own key. Each says what it does in the sentence the help
shows too (tui.keys_text), never an action's docstring.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from .keys_text import action_text

PALETTE_ACTION = "command_palette"
APP_NAMESPACE = "app."  # "app.quit" bound on a screen is the app's quit


class KeysProvider(Provider):
    """The app's and the screen's bindings as palette commands: "Push (p)" runs `p`."""

    def commands(self) -> Iterator[tuple[str, str, object, str]]:
        """(title, help, node, action) for each bound action, once: "Quit (q, ^q)", the
        footer's key first."""
        app = self.app
        found: dict[tuple[int, str], tuple[object, list]] = {}
        for active in self.screen.active_bindings.values():
            node, binding = active.node, active.binding
            if not isinstance(node, (App, Screen)) or not active.enabled:
                continue
            if binding.action == PALETTE_ACTION:
                continue
            action = binding.action
            if action.startswith(APP_NAMESPACE):  # a screen's key for the app's action
                node, action = app, action[len(APP_NAMESPACE) :]
            found.setdefault((id(node), action), (node, []))[1].append(binding)
        for (_node_id, action), (node, bindings) in found.items():
            bindings.sort(key=lambda b: not b.show)  # stable: the footer's first
            name = next((b.description for b in bindings if b.description), "")
            name = name or action.replace("_", " ").capitalize()
            keys = ", ".join(dict.fromkeys(app.get_key_display(b) for b in bindings))
            yield f"{name} ({keys})", action_text(action), node, action

    def _runner(self, node, action: str):
        async def run() -> None:
            await self.app.run_action(action, node)

        return run

    async def discover(self) -> Hits:
        for title, help_text, node, action in self.commands():
            yield DiscoveryHit(title, self._runner(node, action), help=help_text or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, node, action in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    self._runner(node, action),
                    help=help_text or None,
                )
