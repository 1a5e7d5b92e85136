"""What the keys do on this machine: local.py (the run view's local source: LocalRuns, its
keys, marks and charts), runs.py (launching, stopping, resuming, the GPU check), push.py
(the push queue's requests and events)."""
