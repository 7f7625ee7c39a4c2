# Parity of scripts/tutorials/reinforcement_q_learning with pytorch/tutorials
# intermediate_source/reinforcement_q_learning.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/reinforcement_q_learning.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/reinforcement_q_learning.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/reinforcement_q_learning.py compare DIR
#
# prepare: seed 0, the tutorial's policy_net = DQN(4, 2) and target_net loaded from it; both go
# to DIR/reinforcement_q_learning_init.safetensors ("policy.<param>", "target.<param>"). K = 12
# batches of 128 transitions (seed 1: states and next states randn * 0.5, actions 0/1, reward
# 1, about 10% final, i.e. next_state None) to DIR/reinforcement_q_learning_data.safetensors
# ("state.<k>" (128, 4), "action.<k>" (128, 1) int64, "next_state.<k>" (128, 4),
# "non_final.<k>" (128,) int64, "reward.<k>" (128,)). Then K times the tutorial's
# optimize_model on batch k in place of memory.sample (its loss recorded) followed by the soft
# update of target_net through the state_dicts. The final weights of both nets go to
# DIR/reinforcement_q_learning_torch_final.safetensors. float32, TF32 off.
# compare: `parity reinforcement_q_learning: max rel loss diff X over 12 steps, weights Y: PASS|FAIL`.
import os
import sys
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, K = "reinforcement_q_learning", 12
BATCH_SIZE = 128
GAMMA = 0.99
TAU = 0.005
LR = 3e-4

Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))


class DQN(nn.Module):  # the tutorial's

    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, 128)
        self.layer2 = nn.Linear(128, 128)
        self.layer3 = nn.Linear(128, n_actions)

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    policy_net = DQN(4, 2)
    target_net = DQN(4, 2)
    target_net.load_state_dict(policy_net.state_dict())
    save_st(path(d, "init.safetensors"), nn.ModuleDict({"policy": policy_net, "target": target_net}).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for k in range(K):
        data[f"state.{k}"] = torch.randn(BATCH_SIZE, 4, generator=g) * 0.5
        data[f"action.{k}"] = torch.randint(0, 2, (BATCH_SIZE, 1), generator=g)
        data[f"next_state.{k}"] = torch.randn(BATCH_SIZE, 4, generator=g) * 0.5
        data[f"non_final.{k}"] = (torch.rand(BATCH_SIZE, generator=g) > 0.1).long()
        data[f"reward.{k}"] = torch.ones(BATCH_SIZE)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    nets = nn.ModuleDict({"policy": DQN(4, 2), "target": DQN(4, 2)})
    nets.load_state_dict(load_st(path(d, "init.safetensors")))
    nets = nets.to(device)
    policy_net, target_net = nets["policy"], nets["target"]
    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    data = load_st(path(d, "data.safetensors"))
    losses = []
    for k in range(K):
        # the transitions memory.sample would give, as the training loop pushes them
        transitions = []
        for i in range(BATCH_SIZE):
            state = data[f"state.{k}"][i].to(device).unsqueeze(0)
            action = data[f"action.{k}"][i].to(device).view(1, 1)
            next_state = data[f"next_state.{k}"][i].to(device).unsqueeze(0) if data[f"non_final.{k}"][i] else None
            reward = data[f"reward.{k}"][i].to(device).view(1)
            transitions.append(Transition(state, action, next_state, reward))

        # optimize_model, from memory.sample on
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None,
                                                batch.next_state)), device=device, dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state
                                           if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH_SIZE, device=device)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        losses.append(loss.item())

        # the training loop's soft update of the target network
        target_net_state_dict = target_net.state_dict()
        policy_net_state_dict = policy_net.state_dict()
        for key in policy_net_state_dict:
            target_net_state_dict[key] = policy_net_state_dict[key]*TAU + target_net_state_dict[key]*(1-TAU)
        target_net.load_state_dict(target_net_state_dict)
    return losses, nets


if __name__ == "__main__":
    main(NAME, make_files, train)
