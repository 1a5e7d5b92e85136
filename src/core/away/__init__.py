"""When nobody watches: `watch`'s loop (watcher), what is news (events), notifications through
the user's command, running that command, autostop (when to stop the machine), and the
signals that end the loops with no screen (headless).

Imports: the read wings, hub and launch. Not fleet.
"""
