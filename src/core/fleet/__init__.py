"""Several machines: the agent (the remote end, JSON lines over SSH), the delta form, a link per
host, a host's Snapshot back from its JSON, a row of the hosts table.

Imports: every other wing of core.
"""
