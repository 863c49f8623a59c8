"""The rules of the multi-round games, without the environment around them.

Pure, seeded functions and small data types that an environment, a scripted player or an
analysis script can share: the maze layouts of MazeCollab-v0 (:mod:`.maze_layout`) and the
Donor game's pairing schedule, reply parsing and reputation traces (:mod:`.donor_rules`).
Their scoring lives in :mod:`llm_marl_envs.rewards` (``rewards.maze``, ``rewards.donor``).
"""
