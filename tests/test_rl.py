"""The Gymnasium environment: API conformance and that actions act."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from isthmus.rl import EcnThresholdEnv


def test_the_environment_passes_gymnasiums_checker():
    env = EcnThresholdEnv(interval="200us", episode="2ms")
    check_env(env, skip_render_check=True)


def test_thresholds_steer_marking_and_queues():
    results = {}
    for choice in (0, 3):
        env = EcnThresholdEnv(interval="500us", episode="10ms")
        env.reset(seed=3)
        action = np.full(env.action_space.shape, choice)
        queue, marks, rewards, done = [], 0, [], False
        while not done:
            obs, reward, done, _, info = env.step(action)
            queue.append(obs[:, 0].max())
            rewards.append(reward)
            marks = info["ecn_marks"]
        results[choice] = (marks, max(queue), np.mean(rewards))
    low, high = results[0], results[3]
    assert low[0] > high[0], "a lower threshold must mark more"
    assert low[1] < high[1], "a lower threshold must keep queues shorter"


def test_reset_with_a_seed_reproduces_the_episode():
    env = EcnThresholdEnv(interval="300us", episode="3ms")
    traces = []
    for _ in range(2):
        env.reset(seed=11)
        traces.append([env.step(np.ones(env.action_space.shape, dtype=int))[1] for _ in range(5)])
    assert traces[0] == traces[1]


def test_the_time_limit_truncates_and_the_reward_is_utilization_minus_queue():
    env = EcnThresholdEnv(interval="500us", episode="2ms", queue_weight=0.5)
    env.reset(seed=2)
    utilizations = []
    while True:
        obs, reward, terminated, truncated, info = env.step(
            np.zeros(env.action_space.shape, dtype=int)
        )
        expected = obs[:, 1].astype(float).mean() - 0.5 * obs[:, 0].astype(float).mean()
        assert reward == pytest.approx(expected, abs=1e-6)
        utilizations.append(obs[:, 1].mean())
        if terminated or truncated:
            break
    # The web-search flows are still running at 2 ms: a time limit, not an end state.
    assert truncated and not terminated and info["time_ps"] == 2_000_000_000
    assert max(utilizations) > 0.0


def test_the_environment_is_registered_with_gymnasium():
    import gymnasium

    import isthmus.rl  # noqa: F401  (registers the ids)

    env = gymnasium.make("isthmus/EcnThreshold-v0", interval="200us", episode="1ms")
    assert isinstance(env.unwrapped, EcnThresholdEnv)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
