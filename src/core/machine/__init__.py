"""The machine: GPUs (NVML, simulated, replayed; which run each process works for, idle GPUs),
CPU, memory and disk.

Imports: base, model, run.
"""
