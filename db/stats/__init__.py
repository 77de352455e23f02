"""Pure statistics over arrays and frames: nothing from the store or the web."""
