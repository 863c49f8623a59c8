"""One module per environment; each module docstring is that environment's doc page."""
