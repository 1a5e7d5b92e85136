"""The bottom wing: safe file opening, printable text, value ranges, URLs, formatting, the
settings file (config, [[hosts]]), private folders, $VAR expansion and the no-screen loops' signals.

Imports: nothing of rgpu_tui.
"""
