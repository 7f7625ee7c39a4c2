# Parity of scripts/examples/reinforcement_learning (reinforce.lua, actor_critic.lua) with
# pytorch/examples reinforcement_learning/{reinforce,actor_critic}.py, PyTorch's side.
#
#   python3 tests/gpu/examples/reinforcement_learning.py prepare DIR
#   nnrepl  tests/gpu/examples/reinforcement_learning.lua DIR
#   python3 tests/gpu/examples/reinforcement_learning.py compare DIR
#
# prepare: for each program, the example's Policy (seed 0; eval mode, so reinforce's dropout
# draws nothing) goes to DIR/reinforcement_learning_init_<program>.safetensors; then it trains
# EPISODES episodes of CartPole-v1 as the example does (Categorical sampling, finish_episode
# after each episode, gamma 0.99, Adam), episode k reset with seed k. Each episode's states and
# sampled actions go to DIR/reinforcement_learning_data.safetensors ("<program>.states.<k>",
# "<program>.actions.<k>"), each update's loss (reinforce's, then actor_critic's) to
# DIR/reinforcement_learning_torch_losses.txt, the final weights ("<program>.<param>") to
# DIR/reinforcement_learning_torch_final.safetensors. The nnrepl side replays the recorded
# episodes through the ports' Policy and finish_episode, and steps cartpole.lua from each
# recorded start state with the recorded actions, checking it reaches the recorded states.
# The environment is gymnasium's CartPole-v1 when gymnasium is installed, else CartPole below
# (the same equations). Each episode's start state is rounded to float32 first, so that the
# float32 observation carries it exactly to nnrepl.
# The run is on the CPU in float32: the examples have no device (actor_critic's
# smooth_l1_loss(value, torch.tensor([R])) mixes devices on a GPU).
# compare: prints `parity reinforcement_learning: max rel loss diff X over K steps, weights Y:
# PASS|FAIL`, PASS when X <= 1e-4 and Y = ||w_nnrepl - w_torch|| / ||w_torch - w_init|| <= 1e-3.
import math
import os
import sys
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity import save_st, load_st, read_losses, loss_diff, update_diff  # noqa: E402

NAME = "reinforcement_learning"
PROGRAMS = ("reinforce", "actor_critic")
EPISODES = 10
GAMMA = 0.99
eps = torch.finfo(torch.float32).eps  # the example's np.finfo(np.float32).eps


class ReinforcePolicy(nn.Module):  # reinforce.py's Policy
    def __init__(self):
        super(ReinforcePolicy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


def reinforce_finish_episode(policy, optimizer):  # reinforce.py's, returning the loss
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


class ActorCriticPolicy(nn.Module):  # actor_critic.py's Policy
    def __init__(self):
        super(ActorCriticPolicy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.action_head = nn.Linear(128, 2)
        self.value_head = nn.Linear(128, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


def actor_critic_finish_episode(model, optimizer):  # actor_critic.py's, returning the loss
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


class CartPole:
    """gymnasium's CartPole-v1 step (Euler), for when gymnasium is not installed."""
    def __init__(self):
        self.unwrapped = self

    def reset(self, seed):
        g = torch.Generator().manual_seed(seed)
        self.state = (torch.rand(4, generator=g, dtype=torch.float64) * 0.1 - 0.05).tolist()
        self.steps = 0
        return torch.tensor(self.state, dtype=torch.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = (float(v) for v in self.state)
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta**2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.steps += 1
        terminated = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        return torch.tensor(self.state, dtype=torch.float32), 1.0, terminated, self.steps >= 500, {}


def make_env():
    try:
        import gymnasium as gym
        return gym.make("CartPole-v1"), "gymnasium's CartPole-v1"
    except ImportError:
        return CartPole(), "CartPole (gymnasium is not installed)"


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def run(prog, env):
    """EPISODES episodes of the example's main loop; returns the data, losses and final weights."""
    torch.manual_seed(0)
    model = ReinforcePolicy() if prog == "reinforce" else ActorCriticPolicy()
    model.eval()
    init = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = optim.Adam(model.parameters(), lr=1e-2 if prog == "reinforce" else 3e-2)
    data, losses = {}, []
    for k in range(EPISODES):
        obs, _ = env.reset(seed=k)
        state = torch.as_tensor(obs, dtype=torch.float32)
        env.unwrapped.state = state.double().numpy()  # start exactly at the float32 observation
        states, actions = [], []
        for t in range(1, 10000):
            states.append(state)
            if prog == "reinforce":  # reinforce.py's select_action
                probs = model(state.unsqueeze(0))
                m = Categorical(probs)
                action = m.sample()
                model.saved_log_probs.append(m.log_prob(action))
            else:  # actor_critic.py's
                probs, state_value = model(state)
                m = Categorical(probs)
                action = m.sample()
                model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
            actions.append(action.item())
            obs, reward, terminated, truncated, _ = env.step(action.item())
            state = torch.as_tensor(obs, dtype=torch.float32)
            model.rewards.append(reward)
            if terminated or truncated:
                break
        data[f"{prog}.states.{k}"] = torch.stack(states)
        data[f"{prog}.actions.{k}"] = torch.tensor(actions, dtype=torch.int64)
        losses.append(reinforce_finish_episode(model, optimizer) if prog == "reinforce"
                      else actor_critic_finish_episode(model, optimizer))
        print(f"torch {prog} episode {k}: {len(actions)} steps, loss {losses[-1]:.6f}")
    return init, data, losses, model.state_dict()


def prepare(d):
    os.makedirs(d, exist_ok=True)
    env, env_name = make_env()
    print(f"environment: {env_name}")
    data, losses, final = {}, [], {}
    for prog in PROGRAMS:
        init, prog_data, prog_losses, weights = run(prog, env)
        save_st(path(d, f"init_{prog}.safetensors"), init)
        data.update(prog_data)
        losses += prog_losses
        final.update({f"{prog}.{k}": v for k, v in weights.items()})
    save_st(path(d, "data.safetensors"), data)
    save_st(path(d, "torch_final.safetensors"), final)
    with open(path(d, "torch_losses.txt"), "w") as f:
        f.writelines(f"{v!r}\n" for v in losses)


def compare(d):
    x = loss_diff(read_losses(path(d, "nnrepl_losses.txt")), read_losses(path(d, "torch_losses.txt")))
    w0 = {}
    for prog in PROGRAMS:
        w0.update({f"{prog}.{k}": v for k, v in load_st(path(d, f"init_{prog}.safetensors")).items()})
    y = update_diff(w0, load_st(path(d, "nnrepl_final.safetensors")), load_st(path(d, "torch_final.safetensors")))
    ok = x <= 1e-4 and y <= 1e-3
    print(f"parity {NAME}: max rel loss diff {x:.3g} over {len(PROGRAMS) * EPISODES} steps, "
          f"weights {y:.3g}: {'PASS' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("prepare", "compare"):
        sys.exit(f"usage: {sys.argv[0]} prepare|compare DIR [--device cpu]")
    if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] != "cpu":
        print("note: the examples have no device; the parity run is on the CPU")
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    else:
        sys.exit(0 if compare(sys.argv[2]) else 1)
