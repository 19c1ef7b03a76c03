"""The Gymnasium environment: one flow of a fatpipe scenario whose congestion controller is
the agent (docs/python-cc.md, "A Gymnasium environment").

Each step is one report interval of that flow (``cc = { python = ..., mode = "report" }``):
the simulation runs in the core until the flow's next report (``_core.Stepper``), the
observation and reward are computed from the report, and the action sets the flow's sending
rate for the next interval. An episode is one run of the scenario, or of a scenario drawn
from a distribution with the episode's seed; the same seed gives the same episode.

Defaults are Aurora's (Jay, Rotman, Godfrey, Schapira, Tamar, "A Deep Reinforcement Learning
Perspective on Internet Congestion Control", ICML 2019):
- observation: the last ``history`` = 10 intervals' latency gradient, latency ratio and
  sending ratio (the paper's state: the gradient of latency over the interval, the
  interval's mean latency over the smallest mean latency seen, packets sent over packets
  acknowledged);
- action: a rate change, rate x (1 + alpha a) for a >= 0 and rate / (1 - alpha a) for
  a < 0, alpha = 0.025 (its action);
- reward: 10 x throughput - 1000 x latency - 2000 x loss, throughput in packets per
  second, latency in seconds, loss the fraction of packets lost (its reward).
fatpipe computes the latency gradient from successive intervals' mean RTTs (Aurora fits it
within the interval), and scales the reward by ``reward_scale`` (default 1e-3) so that
returns stay in a range PPO's defaults handle; both are ours.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import gymnasium
import numpy as np
from gymnasium import spaces

from ..scenario import load
from ..scenario.python_cc import controllers

#: The features an observation may carry, each a function of (report, state); Aurora's three
#: are the default.
AURORA_FEATURES = ("latency_gradient", "latency_ratio", "sending_ratio")
#: Aurora's reward weights: throughput (packets/s), latency (s), loss (fraction).
AURORA_REWARD = {"throughput": 10.0, "latency": 1000.0, "loss": 2000.0}
AURORA_ALPHA = 0.025
AURORA_HISTORY = 10

#: Bounds each feature is clipped to (ours: wide enough for any sane interval).
FEATURE_BOUNDS = {
    "latency_gradient": (-10.0, 10.0),
    "latency_ratio": (1.0, 100.0),
    "sending_ratio": (0.0, 100.0),
    "delivery_ratio": (0.0, 10.0),
    "loss_rate": (0.0, 1.0),
}

#: A feature's value before any interval (the history's start): no change, no loss.
NEUTRAL = {"latency_gradient": 0.0, "latency_ratio": 1.0, "sending_ratio": 1.0, "delivery_ratio": 1.0, "loss_rate": 0.0}

#: The default distribution of scenarios, drawn per episode (ours): a dumbbell whose
#: bottleneck rate, round-trip time and drop-tail queue (in bandwidth-delay products) are
#: drawn uniformly (rate and RTT on a log scale), 10 simulated seconds.
DEFAULT_RANGES = {"rate_bps": (2e6, 20e6), "rtt_s": (0.02, 0.2), "queue_bdp": (0.5, 2.0), "duration_s": 10.0}

#: The class the stepped flow names (its calls are the agent's actions, never made).
STEPPED = "fatpipe.gym.env:Stepped"


class Stepped:
    """Stands for the agent in the normalized scenario: the stepper answers its reports."""

    def on_report(self, report: Mapping[str, Any]) -> None:  # pragma: no cover - never called
        raise RuntimeError("the stepped flow's reports are answered by the environment")


def dumbbell(rate_bps: float, rtt_s: float, queue_bdp: float, duration_s: float) -> Dict[str, Any]:
    """One flow through a dumbbell: the scenario the default distribution draws."""
    return {
        "name": "gym",
        "duration": f"{duration_s}s",
        "topology": {
            "shape": "dumbbell",
            "bottleneck_rate": f"{rate_bps:.0f}bps",
            "rtt": f"{rtt_s * 1e3:.3f}ms",
            "queue": {"discipline": "droptail", "limit_bdp": queue_bdp},
        },
        "flows": [{"name": "agent", "cc": "reno"}],
    }


def draw_default(rng: np.random.Generator) -> Dict[str, Any]:
    r = DEFAULT_RANGES
    log_uniform = lambda lo, hi: float(math.exp(rng.uniform(math.log(lo), math.log(hi))))  # noqa: E731
    return dumbbell(log_uniform(*r["rate_bps"]), log_uniform(*r["rtt_s"]), float(rng.uniform(*r["queue_bdp"])), r["duration_s"])


ScenarioSpec = Union[str, Mapping[str, Any], Sequence[Any], Callable[[np.random.Generator], Any]]


class CongestionControlEnv(gymnasium.Env):
    """One flow's congestion controller as an agent.

    Args:
        scenario: a scenario (TOML path or dict), a list of them (one drawn per episode), or
            a function of a ``numpy.random.Generator`` returning one; default: a dumbbell
            drawn from ``DEFAULT_RANGES``.
        flow: the agent's flow (index or name).
        report: when a step ends: "rtt", a number of ACKs or a duration (as ``report`` in
            ``cc = { python = ... }``).
        features: the observation's features per interval (``FEATURE_BOUNDS``' keys).
        history: how many intervals the observation holds.
        reward_weights: weights of throughput (packets/s), latency (s) and loss (fraction).
        reward_scale: multiplies the reward.
        alpha: the rate change per unit of action.
        max_steps: end an episode (truncated) after this many steps; None: at the scenario's end.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: Optional[ScenarioSpec] = None,
        flow: Union[int, str] = 0,
        report: Any = "rtt",
        features: Sequence[str] = AURORA_FEATURES,
        history: int = AURORA_HISTORY,
        reward_weights: Optional[Mapping[str, float]] = None,
        reward_scale: float = 1e-3,
        alpha: float = AURORA_ALPHA,
        max_steps: Optional[int] = None,
    ) -> None:
        unknown = [f for f in features if f not in FEATURE_BOUNDS]
        if unknown:
            raise ValueError(f"features: {unknown[0]!r} is not allowed: one of {', '.join(FEATURE_BOUNDS)}")
        if history < 1:
            raise ValueError(f"history: {history} is not allowed: at least 1")
        self.scenario, self.flow, self.report = scenario, flow, report
        self.features, self.history = tuple(features), int(history)
        self.weights = {**AURORA_REWARD, **(reward_weights or {})}
        self.reward_scale, self.alpha, self.max_steps = float(reward_scale), float(alpha), max_steps
        low = np.array([FEATURE_BOUNDS[f][0] for f in self.features] * self.history, dtype=np.float32)
        high = np.array([FEATURE_BOUNDS[f][1] for f in self.features] * self.history, dtype=np.float32)
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self._stepper: Any = None

    # ---- episodes -------------------------------------------------------------------------

    def _draw(self) -> Mapping[str, Any]:
        spec = self.scenario
        if spec is None:
            return draw_default(self.np_random)
        if callable(spec):
            return spec(self.np_random)
        if isinstance(spec, (list, tuple)):
            return spec[int(self.np_random.integers(len(spec)))]
        return spec

    def _normalized(self) -> Tuple[Dict[str, Any], int]:
        core = copy.deepcopy(load(self._draw()).core)
        flows = core["flows"]
        index = self.flow if isinstance(self.flow, int) else next((i for i, f in enumerate(flows) if f["name"] == self.flow), None)
        if index is None or not 0 <= index < len(flows) or flows[index].get("tcp") is None:
            raise ValueError(f"flow: {self.flow!r} is not allowed: the agent's flow is a TCP flow of the scenario")
        every = load({"name": "r", "duration": "1s", "topology": {"shape": "dumbbell", "bottleneck_rate": "1Mbps", "rtt": "1ms"},
                      "flows": [{"cc": {"python": STEPPED, "mode": "report", "report": self.report}}]}).core["flows"][0]["cc"]
        flows[index]["cc"] = every
        core["seed"] = int(self.np_random.integers(2**63))
        return core, index

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        from ..core import import_core

        self.close()
        core, index = self._normalized()
        self._flow_doc = core["flows"][index]
        self._stepper = import_core().Stepper(core, index, controllers(core) or None)
        self._obs = np.tile(np.array([NEUTRAL[k] for k in self.features], dtype=np.float32), (self.history, 1))
        self._min_mean_rtt: Optional[float] = None
        self._last_mean_rtt: Optional[float] = None
        self._steps = 0
        self._rate_bps: Optional[float] = None
        self._report = self._stepper.step(None)
        if self._report is not None:
            self._observe(self._report)
        return self._obs.reshape(-1).copy(), self._info(self._report)

    def step(self, action: Any):
        if self._stepper is None:
            raise RuntimeError("step() before reset()")
        r = self._report
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        if r is None:  # the run has ended; gymnasium asks for a reset
            return self._obs.reshape(-1).copy(), 0.0, False, True, {}
        if self._rate_bps is None:
            # The first rate: what the initial window sent over the first interval.
            self._rate_bps = max(r["sending_rate_bps"], 8.0 * r["mss_bytes"])
        x = self.alpha * a
        self._rate_bps = self._rate_bps * (1.0 + x) if x >= 0 else self._rate_bps / (1.0 - x)
        self._rate_bps = min(max(self._rate_bps, 8.0 * r["mss_bytes"]), 1e12)
        self._report = self._stepper.step(self._action(r))
        self._steps += 1
        nxt = self._report
        if nxt is None:
            return self._obs.reshape(-1).copy(), 0.0, False, True, {}
        self._observe(nxt)
        truncated = self.max_steps is not None and self._steps >= self.max_steps
        return self._obs.reshape(-1).copy(), self._reward(nxt), False, bool(truncated), self._info(nxt)

    def close(self) -> None:
        if self._stepper is not None:
            self._stepper.close()
            self._stepper = None

    # ---- what the agent sees and gets -----------------------------------------------------

    def _action(self, r: Mapping[str, Any]) -> Dict[str, Any]:
        """The rate, and a window that does not limit it: twice the rate's bandwidth-delay
        product over the smallest RTT seen (BBR's cwnd_gain of 2), at least 4 segments."""
        rtt_s = (r["min_rtt_ever_ps"] or r["srtt_ps"] or 0) / 1e12
        cwnd = max(4, math.ceil(2.0 * self._rate_bps * rtt_s / (8.0 * r["mss_bytes"])))
        return {"cwnd": min(cwnd, 2**31), "pacing_rate_bps": self._rate_bps}

    def _features(self, r: Mapping[str, Any]) -> Dict[str, float]:
        mean_rtt = (r["mean_rtt_ps"] or 0) / 1e12 or None
        if mean_rtt is not None:
            self._min_mean_rtt = mean_rtt if self._min_mean_rtt is None else min(self._min_mean_rtt, mean_rtt)
        gradient = 0.0
        length_s = max(r["end_ps"] - r["start_ps"], 1) / 1e12
        if mean_rtt is not None and self._last_mean_rtt is not None:
            gradient = (mean_rtt - self._last_mean_rtt) / length_s
        if mean_rtt is not None:
            self._last_mean_rtt = mean_rtt
        sent, delivered = r["sent_bytes"], r["delivered_bytes"]
        return {
            "latency_gradient": gradient,
            "latency_ratio": mean_rtt / self._min_mean_rtt if mean_rtt and self._min_mean_rtt else 1.0,
            "sending_ratio": sent / delivered if delivered else (FEATURE_BOUNDS["sending_ratio"][1] if sent else 1.0),
            "delivery_ratio": r["delivery_rate_bps"] / self._rate_bps if self._rate_bps else 1.0,
            "loss_rate": r["lost_bytes"] / max(sent, 1),
        }

    def _observe(self, r: Mapping[str, Any]) -> None:
        f = self._features(r)
        row = np.array([np.clip(f[k], *FEATURE_BOUNDS[k]) for k in self.features], dtype=np.float32)
        self._obs = np.roll(self._obs, -1, axis=0)
        self._obs[-1] = row

    def _reward(self, r: Mapping[str, Any]) -> float:
        mss = r["mss_bytes"]
        length_s = max(r["end_ps"] - r["start_ps"], 1) / 1e12
        throughput_pps = r["delivered_bytes"] / mss / length_s
        latency_s = (r["mean_rtt_ps"] or r["srtt_ps"] or 0) / 1e12
        loss = r["lost_bytes"] / max(r["sent_bytes"], r["lost_bytes"], 1)
        w = self.weights
        value = w["throughput"] * throughput_pps - w["latency"] * latency_s - w["loss"] * loss
        return float(value * self.reward_scale)

    def _info(self, r: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        if r is None:
            return {}
        return {"time_s": r["end_ps"] / 1e12, "rate_bps": self._rate_bps, "delivery_rate_bps": r["delivery_rate_bps"],
                "mean_rtt_s": (r["mean_rtt_ps"] or 0) / 1e12, "lost_bytes": r["lost_bytes"]}
