"""`rgpu-tui fleet`: the fleet's app (app.py: the hosts table, one link per host), a host as
the run view's source (host_screen.py: HostRuns, fed by the host's agent), the agent
commands and their answers (remote.py), the marks and charts across hosts (charts.py), the
hosts table (table.py) and what the links' threads post (messages.py).

Imports: actions (the texts a stop and a resume share), screens, widgets, inert, compat,
the tui's shared modules and core; never tui.app (app and fleet are independent floors).
"""
