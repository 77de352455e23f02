"""What the CLI and the sweep share on the console: the argument parser (its defaults are the sweep's too), the
Rich rendering of progress and results, and the live status file a run writes for the dashboard."""
