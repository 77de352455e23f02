"""The dashboard's pages: thin scripts over db.views; charts in pages.charts, widgets in pages.widgets."""
