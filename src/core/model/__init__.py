"""The vocabulary of every wing: the Snapshot dataclasses (runs, GPUs, machine, cost, checkpoints,
push targets), frozen and plain.

Imports: base only.
"""
