"""`mpsbench sweep`: several torch builds on one machine, each in its own environment, interleaved in rounds so
machine drift and heat spread evenly over the builds. spec (what a --build says) → envs (create or reuse, install,
probe) → schedule (rounds, rotated order, A/A slots) → journal + options (resume as begun) → runner (one
collector process per slot, ended with the sweep) → delivery (--push, each run once)."""
