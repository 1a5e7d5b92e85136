"""The panes: one module per pane of the run view (GPUs, cost strip and idle banner, autostop
line, push bar, runs list, run header, metrics, log, charts), the body that lays out the run
panes (run_panes.py), LinePane (lines.py: repaints only the cells that changed), the
footer, the form fields and the shared colours.

Imports: inert, compat, the tui's shared modules (app_rules' layout sizes) and core; never
screens, actions, fleet or tui.app (a pane knows no screen).
"""
