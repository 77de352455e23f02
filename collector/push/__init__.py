"""Delivering bundles to the server: the Pusher (POST, retry, outbox) and its answers printed on the console."""
