"""The picture: the RunsWatcher and the Collector that build one Snapshot a refresh, the cost and
the idle clock, and the Snapshot as JSON and as text. The last read wing: it only reads.

Imports: base, model, run, records, machine. Never an act wing (hub, launch, away).
"""
