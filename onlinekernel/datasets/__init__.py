"""A small real dataset bundled for the demo."""
