"""Starting and stopping runs: the launch form's fields and argv, spawning and recording a launch,
waiting for its run directory, resume, stop (and which process may be signalled), doctor, the
GPU preflight, the training environment, the demo and its synthetic dataset.

Imports: the read wings (base .. render). Not hub, away or fleet.
"""
