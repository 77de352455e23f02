"""A review written out: Markdown and CSV downloads, the CI job summary, the export for PyTorch's tracker."""
