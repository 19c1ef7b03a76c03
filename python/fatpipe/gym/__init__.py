"""``fatpipe.gym``: a Gymnasium environment whose agent is one flow's congestion controller
(docs/python-cc.md). Needs the ``gym`` extra (``pip install fatpipe[gym]``).

    import gymnasium, fatpipe.gym
    env = gymnasium.make(fatpipe.gym.ENV_ID)           # Aurora's observation and reward
    env = fatpipe.gym.CongestionControlEnv(scenario="my.toml", report="10ms")
"""

from gymnasium.envs.registration import register, registry

from .env import AURORA_FEATURES, AURORA_REWARD, DEFAULT_RANGES, CongestionControlEnv

#: The registered id: ``gymnasium.make(ENV_ID, **kwargs)``.
ENV_ID = "fatpipe/CongestionControl-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="fatpipe.gym.env:CongestionControlEnv")

__all__ = ["ENV_ID", "CongestionControlEnv", "AURORA_FEATURES", "AURORA_REWARD", "DEFAULT_RANGES"]
