"""Algorithms over the environments that are not trainers of a model.

* :mod:`.donor_evolution`: the cultural-evolution outer loop of the Donor game (Vallinder &
  Hughes, 2024): generations of players, the better half survives, new strategies are written.
"""
