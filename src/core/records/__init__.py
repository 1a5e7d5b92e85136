"""The records the read path needs: append-only JSON lines (launches, pushes), which run a launch
became, the watcher's state and the autostop plan and hold files.

Imports: base, model, run.
"""
