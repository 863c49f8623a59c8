"""``python -m llm_marl_envs.policies.server``: serve a model (:mod:`.command`)."""

from llm_marl_envs.policies.server.command import main

if __name__ == "__main__":
    main()
