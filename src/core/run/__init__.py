"""Reading one run directory: incremental tails, metrics.jsonl/results.csv, status.json, discovery
of runs under a root, a run's checkpoints and the files a push reads, where a push goes.

Imports: base, model.
"""
