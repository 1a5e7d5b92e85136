"""What the app's keys do, as mixins of RgpuApp: push.py (pushing to the Hub), runs.py
(launching, stopping, resuming, the GPU check)."""
