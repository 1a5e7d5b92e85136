"""The fleet's screens: the hosts table (`rgpu-tui fleet`) and a host's full view."""
