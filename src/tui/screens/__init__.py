"""The screens: the run view (runs_view.py, one screen for the local app and every fleet host)
and the run source protocol it is fed by and acts through (run_source.py), and the screens
it opens: dialogs (confirm, pick, report), the launch form, the cost view, the help, the
chart view's metric picker and compare table.

Imports: widgets, inert, compat, the tui's shared modules (keys_text) and core; never
actions, fleet or tui.app (a screen is fed and acted through by a source above it).
"""
