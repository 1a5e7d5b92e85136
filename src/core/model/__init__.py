"""The vocabulary of every wing: the Snapshot dataclasses (runs, GPUs, machine, cost, checkpoints,
push targets), frozen and plain, and their JSON codec in both directions (snapshot_json,
snapshot_from_json).

Imports: base only.
"""
