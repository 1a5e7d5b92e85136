"""The Textual app, above core and below the command line: the local app (app.py) and the
fleet's (fleet/), one run view (screens/runs_view.py) fed by a run source (actions/local.py
for this machine, fleet/host_screen.py for a host), the panes (widgets/), and every use of a
private Textual name (compat/). docs/architecture.md, "The tui and the command line", names
each module with its one job.

Imports: core (any wing) and textual; never cli. Inside, by floors (an import-linter
contract): app | fleet > actions > screens > widgets > inert | compat.
"""
