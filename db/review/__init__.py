"""The review layer: a baseline → candidate comparison judged case by case (comparison, cache, noise lookup,
rules, error control in db.stats, judged review), with its subpackages: cases (the case table's columns and its
words), what_ran (what changed in what ran) and release (the lists and the release summary). db.views adapts it
to each page."""
