"""Zero-glue adapters for other RL stacks, one module per stack (extra ``integrations``).

Importing this package imports none of them; each module imports its library when it is
imported, and a missing library fails with the ``pip install`` line that adds it.
"""
