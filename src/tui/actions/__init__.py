"""This machine as a run source: local.py (LocalRuns: the run view's local source, its keys,
marks and charts), runs.py (launching, stopping, resuming, the GPU check, in worker threads,
over core.launch), push.py (the app's push queue: its requests and events).

Imports: screens, widgets, inert, compat, the tui's shared modules (messages) and core;
never tui.app or fleet (the floors above).
"""
