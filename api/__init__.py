"""The HTTP API (/api/v1), mounted beside the dashboard by app.py: uploads and the JSON twins of the pages."""
