"""The bottom wing: safe file opening, printable text, value ranges, URLs, formatting, the
settings file (config, [[hosts]]; the command line's flags for it are cli.options'), private
folders, $VAR expansion and the command a hint names.

Imports: nothing of rgpu_tui.
"""
