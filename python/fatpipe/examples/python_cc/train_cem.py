"""Trains a congestion controller in fatpipe.gym with numpy alone: the cross-entropy method
(Rubinstein 1999; as a policy search, Szita and Lorincz 2006) on a linear policy,
a = tanh(w . observation + b), over the default environment (Aurora's observation, action
and reward; docs/python-cc.md). Prints the mean episode return of the mean policy on
held-out episodes after each iteration: it rises as the policy learns to raise its rate
while the latency ratio stays low and to lower it when the queue builds.

    python examples/python_cc/train_cem.py [--iterations 8] [--population 16]

Deterministic: the same arguments give the same curve.
"""

import argparse

import gymnasium
import numpy as np

import fatpipe.gym


def episode_return(env, params, seed):
    obs, _ = env.reset(seed=seed)
    w, b = params[:-1], params[-1]
    total, done = 0.0, False
    while not done:
        action = np.array([np.tanh(obs @ w + b)], dtype=np.float32)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--elite", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=2, help="training episodes per candidate")
    args = parser.parse_args()
    env = gymnasium.make(fatpipe.gym.ENV_ID)
    rng = np.random.default_rng(0)
    size = env.observation_space.shape[0] + 1
    mean, std = np.zeros(size), np.full(size, 0.5)
    held_out = [10_000 + k for k in range(4)]

    def evaluate(params, seeds):
        return float(np.mean([episode_return(env, params, s) for s in seeds]))

    print(f"iteration  mean return on {len(held_out)} held-out episodes")
    print(f"{0:>9}  {evaluate(mean, held_out):10.1f}", flush=True)
    for it in range(1, args.iterations + 1):
        seeds = [int(s) for s in rng.integers(0, 10_000, size=args.episodes)]
        candidates = mean + std * rng.standard_normal((args.population, size))
        scores = np.array([evaluate(c, seeds) for c in candidates])
        elite = candidates[np.argsort(scores)[-args.elite:]]
        mean, std = elite.mean(axis=0), elite.std(axis=0) + 0.02
        print(f"{it:>9}  {evaluate(mean, held_out):10.1f}", flush=True)
    env.close()


if __name__ == "__main__":
    main()
