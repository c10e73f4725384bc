"""CleanRL-style PPO (one file, plain torch) on the Gymnasium vector env.

    python -m examples.cleanrl_ppo --num-envs 16 --total-steps 200000

The structure of CleanRL's ``ppo.py`` (rollout buffer, GAE, clipped
objective, value loss, entropy bonus, minibatch epochs) with the two changes
a card game needs: the policy's logits are masked with
``obs["action_mask"]`` (illegal actions get -inf), and the environment is
:class:`burako_env.gym_vector.BurakoGymVectorEnv` (one learner seat per game;
the opponents, built-in random here, play inside ``step``), wrapped in
Gymnasium's ``RecordEpisodeStatistics``. The env resets finished games in the
same step (``AutoresetMode.SAME_STEP``), so a done flag cuts the return at
that step and the next observation already belongs to the new hand.

Torch runs on one thread: a small CPU machine is better spent on the env.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch
    from gymnasium.wrappers.vector import RecordEpisodeStatistics
    from torch import nn

    from burako_env.gym_vector import BurakoGymVectorEnv

    parser = argparse.ArgumentParser(description="CleanRL-style masked PPO on BurakoGymVectorEnv")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--num-steps", type=int, default=64, help="rollout length per env")
    parser.add_argument("--total-steps", type=int, default=200_000)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.999)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--vf-coef", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    envs = RecordEpisodeStatistics(BurakoGymVectorEnv(args.num_envs, learner_seat="alternate"))
    obs_size = envs.single_observation_space["observation"].shape[0]
    num_actions = int(envs.single_action_space.n)

    class Agent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Linear(obs_size, args.hidden), nn.Tanh(), nn.Linear(args.hidden, args.hidden), nn.Tanh()
            )
            self.actor = nn.Linear(args.hidden, num_actions)
            self.critic = nn.Linear(args.hidden, 1)

        def value(self, x: torch.Tensor) -> torch.Tensor:
            return self.critic(self.body(x)).squeeze(-1)

        def act(
            self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
            h = self.body(x)
            logits = self.actor(h).masked_fill(~mask, -1e9)
            dist = torch.distributions.Categorical(logits=logits)
            if action is None:
                action = dist.sample()
            return action, dist.log_prob(action), dist.entropy(), self.critic(h).squeeze(-1)

    agent = Agent()
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    n, t_len = args.num_envs, args.num_steps
    obs_buf = torch.zeros((t_len, n, obs_size))
    mask_buf = torch.zeros((t_len, n, num_actions), dtype=torch.bool)
    act_buf = torch.zeros((t_len, n), dtype=torch.long)
    logp_buf = torch.zeros((t_len, n))
    rew_buf = torch.zeros((t_len, n))
    done_buf = torch.zeros((t_len, n))
    val_buf = torch.zeros((t_len, n))

    obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(obs["observation"])
    next_mask = torch.as_tensor(obs["action_mask"] != 0)
    returns: list[float] = []
    start = time.monotonic()
    updates = max(1, args.total_steps // (n * t_len))
    for _update in range(updates):
        for t in range(t_len):
            obs_buf[t], mask_buf[t] = next_obs, next_mask
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs, next_mask)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            obs, reward, terminated, truncated, infos = envs.step(action.numpy())
            rew_buf[t] = torch.as_tensor(reward)
            done_buf[t] = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            next_obs = torch.as_tensor(obs["observation"])
            next_mask = torch.as_tensor(obs["action_mask"] != 0)
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]].tolist())
        with torch.no_grad():  # GAE; a done at step t ends that game's return there (same-step autoreset)
            advantages = torch.zeros_like(rew_buf)
            last = torch.zeros(n)
            next_value = agent.value(next_obs)
            for t in reversed(range(t_len)):
                not_done = 1.0 - done_buf[t]
                following = next_value if t == t_len - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * following * not_done - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                advantages[t] = last
            targets = advantages + val_buf
        b_obs, b_mask = obs_buf.reshape(-1, obs_size), mask_buf.reshape(-1, num_actions)
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = advantages.reshape(-1), targets.reshape(-1)
        batch = n * t_len
        size = batch // args.minibatches
        for _epoch in range(args.epochs):
            order = torch.randperm(batch)
            for k in range(0, batch, size):
                idx = order[k : k + size]
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                value_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                loss = policy_loss + args.vf_coef * value_loss - args.ent_coef * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
    seconds = time.monotonic() - start
    steps = updates * n * t_len
    first, last = returns[: max(1, len(returns) // 5)], returns[-max(1, len(returns) // 5) :]
    result = {
        "library": "torch (CleanRL-style PPO) on gymnasium VectorEnv",
        "learner_steps": steps,
        "seconds": round(seconds, 1),
        "steps_per_second": round(steps / max(seconds, 1e-9), 1),
        "episodes": len(returns),
        "mean_return_first_fifth": float(np.mean(first)) if returns else None,
        "mean_return_last_fifth": float(np.mean(last)) if returns else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
