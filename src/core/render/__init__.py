"""The render wing: the Snapshot shown. Text (snapshot_text), the braille charts and their
layout (chart_draw, chart_layout: rows of text with Rich style names), the compare table
(compare), the Prometheus metric families (prometheus) and the exporter that serves them
(exporter_feed, http_serve, metrics_app). What builds the Snapshot is the picture wing,
below; nothing here builds or writes one, it only reads it. (Its JSON is the model wing's
codec, next to the dataclasses.)

Imports: base, model, run, records, machine, picture. Never an act wing (hub, launch, away).
"""
