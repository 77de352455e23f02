"""Reads that answer one question of the store (selectors, pairing, run lists); no statistics."""
