"""Issue 29, section 2: fatpipe.gym, a Gymnasium environment whose agent is one flow's
congestion controller, each step one report interval (the core pauses at each report for
the action, _core.Stepper). Gymnasium's own checker passes; an episode is the same for the
same seed; vectorized environments run in processes."""

from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import fatpipe.gym  # noqa: E402
from fatpipe.gym.env import CongestionControlEnv  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

SMALL = {
    "name": "small",
    "duration": "2s",
    "topology": {"shape": "dumbbell", "bottleneck_rate": "10Mbps", "rtt": "40ms"},
    "flows": [{"name": "agent", "cc": "cubic"}, {"name": "cross", "cc": "cubic", "start": "0.5s"}],
}


def test_gymnasiums_checker_passes():
    env = gymnasium.make(fatpipe.gym.ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def episode(env, seed, steps=40):
    obs, _ = env.reset(seed=seed)
    seen, rewards = [obs], []
    for i in range(steps):
        obs, reward, terminated, truncated, info = env.step(np.array([0.8 if i % 4 else -0.6], dtype=np.float32))
        seen.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return np.array(seen), rewards


def test_the_same_seed_gives_the_same_episode_and_another_seed_another():
    env = CongestionControlEnv()  # the default distribution of dumbbells, drawn per episode
    a, b, c = episode(env, 11), episode(env, 11), episode(env, 12)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert not (len(a[1]) == len(c[1]) and a[1] == c[1])
    env.close()


def test_a_scenario_with_cross_traffic_steps_to_its_end():
    env = CongestionControlEnv(SMALL, flow="agent", report="20ms")
    obs, info = env.reset(seed=1)
    assert obs.shape == (30,) and env.observation_space.contains(obs)
    steps, truncated = 0, False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not terminated and np.isfinite(reward)
        steps += 1
    # A report ends at the first ACK at least 20 ms after it began: over 2 s at most 100,
    # and with ACKs every few milliseconds at least half that.
    assert 50 <= steps <= 100
    env.close()


def test_the_action_sets_the_rate_the_path_delivers():
    # Aurora's action: rate x (1 + 0.025 a) per step, or / (1 - 0.025 a). On an empty 10 Mb/s
    # path the flow delivers what it paces (within 5 %, from the second interval, the first
    # paced one) while below the bottleneck; 40 steps up and 40 down from the same start end
    # 1.025^80 apart.
    def run(a):
        env = CongestionControlEnv({**SMALL, "duration": "6s", "flows": SMALL["flows"][:1]}, report="rtt")
        env.reset(seed=2)
        for step in range(40):
            _, _, _, truncated, info = env.step(np.array([a], dtype=np.float32))
            assert not truncated
            assert step == 0 or info["delivery_rate_bps"] == pytest.approx(info["rate_bps"], rel=0.05)
        env.close()
        return info["rate_bps"]

    assert run(1.0) / run(-1.0) == pytest.approx(1.025 ** 80, rel=0.01)


def test_vectorized_environments_in_processes():
    envs = gymnasium.make_vec(fatpipe.gym.ENV_ID, num_envs=2, vectorization_mode="async")
    obs, _ = envs.reset(seed=[1, 2])
    for _ in range(20):
        obs, reward, terminated, truncated, _ = envs.step(envs.action_space.sample())
    assert obs.shape == (2, 30) and np.all(np.isfinite(reward))
    envs.close()


def test_an_unknown_feature_is_one_line():
    with pytest.raises(ValueError, match="features: 'jitter' is not allowed: one of latency_gradient"):
        CongestionControlEnv(features=("jitter",))
