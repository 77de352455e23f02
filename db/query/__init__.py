"""Reads that answer one question of the store (selectors, run lists, the Compare's pairing in db.query.compare);
no statistics. It imports no store module: the store's own summaries read through the same pivot."""
