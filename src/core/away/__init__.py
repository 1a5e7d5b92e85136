"""When nobody watches: what is news (events), notifications through the user's command, running
that command, and autostop (when to stop the machine).

Imports: the read wings, hub and launch. Not fleet.
"""
