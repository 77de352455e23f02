"""The dashboard's pages: one thin script per page over db.views, listed by navigation.py; what they share (engine,
cache, guard, URL state, tables, charts) is in pages.parts."""
