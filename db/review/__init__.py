"""The review layer: a baseline → candidate comparison judged case by case (comparison, cache, noise lookup,
rules, error control in db.stats, judged review, lists and release summary). db.views adapts it to each page."""
