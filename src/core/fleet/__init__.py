"""Several machines: the agent (the remote end, JSON lines over SSH), the delta form, a link per
host and its ssh argv, a host's Snapshot back from its JSON held to the local ranges, a row
of the hosts table (the screen's and `fleet --once`'s).

Imports: every other wing of core.
"""
