"""The picture: what builds the Snapshot. The RunsWatcher and the Collector that build one
Snapshot a refresh (and the charts asked for), the cost and the idle clock, the price's
reading, and the one refresh driver every loop refreshes through. The last building wing: it
only reads. Showing the Snapshot (text, charts, tables, metric families) is the render
wing's, above.

Imports: base, model, run, records, machine. Never an act wing (hub, launch, away).
"""
