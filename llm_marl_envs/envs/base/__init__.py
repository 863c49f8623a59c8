"""Shared parts of the environments (not environments themselves).

* :mod:`.pioneer_observer`: CORY's pioneer -> observer chain (GSM8K-v0, IMDBSentiment-v0);
* :mod:`.writing`: MAGRPO's two-writer tasks with a joint reward (TL;DR, arXiv);
* :mod:`.coding_prompts`: CoopCoding's prompts the MAGRPO authors' way (first turn, and the
  feedback between turns).
"""
