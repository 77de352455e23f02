"""The collector's command line: `python -m collector run | list | show | push | sweep` (main) over its commands."""
