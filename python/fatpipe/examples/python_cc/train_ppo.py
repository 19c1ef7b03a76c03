"""Trains Stable-Baselines3's PPO in fatpipe.gym's default environment (Aurora's
observation, action and reward; docs/python-cc.md) on vectorized environments in processes,
and prints the mean episode return of the deterministic policy on held-out episodes before
and after each round of training.

Needs stable-baselines3 (and so torch), which fatpipe does not depend on:
    pip install stable-baselines3
    python examples/python_cc/train_ppo.py [--rounds 5] [--steps 4096] [--envs 4]
"""

import argparse
import sys

import gymnasium
import numpy as np

import fatpipe.gym


def held_out_return(model, seeds):
    env = gymnasium.make(fatpipe.gym.ENV_ID)
    totals = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        totals.append(total)
    env.close()
    return float(np.mean(totals))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4096, help="environment steps per round")
    parser.add_argument("--envs", type=int, default=4, help="environments, each in its own process")
    args = parser.parse_args()
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import SubprocVecEnv
    except ImportError:
        print("train_ppo.py needs stable-baselines3 (pip install stable-baselines3); "
              "examples/python_cc/train_cem.py needs numpy only", file=sys.stderr)
        return 1
    envs = make_vec_env(fatpipe.gym.ENV_ID, n_envs=args.envs, seed=0, vec_env_cls=SubprocVecEnv)
    model = PPO("MlpPolicy", envs, n_steps=512, batch_size=128, seed=0, verbose=0)
    held_out = [10_000 + k for k in range(4)]
    print(f"{'env steps':>9}  mean return on {len(held_out)} held-out episodes")
    print(f"{0:>9}  {held_out_return(model, held_out):10.1f}", flush=True)
    for r in range(1, args.rounds + 1):
        model.learn(total_timesteps=args.steps, reset_num_timesteps=False)
        print(f"{r * args.steps:>9}  {held_out_return(model, held_out):10.1f}", flush=True)
    envs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
