"""The workflows that collect with the collector and judge with the store's review: `mpsbench confirm` (rerun a
review's doubtful cases here, both builds interleaved, until decided) and `mpsbench bisect` (the first bad build
between a good and a bad one), each journaled so `--resume` continues it."""
