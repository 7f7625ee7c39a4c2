# Parity of scripts/examples/gcn with pytorch/examples gcn, PyTorch's side.
#
#   python3 tests/gpu/examples/gcn.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/gcn.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/gcn.py compare DIR
#
# prepare: a random graph in the loader's terms -> DIR/gcn_data.safetensors: "features" (0/1
# word counts, [60, 12]), "labels" (int64 [60], 3 classes), "edges" (int64 [150, 2] node
# positions, duplicates and self-citations allowed) and "idx_train" (40 nodes); the example's
# GCN (bias on, dropout p=0 so nothing random runs; seed 0) -> DIR/gcn_init.safetensors; then
# load_cora's tensor steps (sparse features, D^-1/2 (A + I) D^-1/2 as a sparse tensor) and 15
# of train_iter's steps (Adam lr 0.01, weight decay 5e-4, NLLLoss on the training nodes).
# Writes DIR/gcn_torch_losses.txt and DIR/gcn_torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, V, FEAT, CLASSES, E, HIDDEN = "gcn", 15, 60, 12, 3, 150, 16


class GraphConv(nn.Module):  # the example's
    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):  # the example's
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def cora_tensors(features, labels, edges, device):  # load_cora after np.genfromtxt, unchanged
    scale_vector = torch.sum(features, dim=1)
    scale_vector = 1 / scale_vector
    scale_vector[scale_vector == float('inf')] = 0
    scale_vector = torch.diag(scale_vector).to_sparse()
    features = scale_vector @ features
    V = len(labels)
    E = edges.shape[0]
    adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64)
    adj_mat = torch.eye(V) + adj_mat
    degree_mat = torch.sum(adj_mat, dim=1)
    degree_mat = torch.sqrt(1 / degree_mat)
    degree_mat[degree_mat == float('inf')] = 0
    degree_mat = torch.diag(degree_mat).to_sparse()
    adj_mat = degree_mat @ adj_mat @ degree_mat
    return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), GCN(FEAT, HIDDEN, CLASSES, True, 0.0).state_dict())
    g = torch.Generator().manual_seed(1)
    save_st(path(d, "data.safetensors"), {
        "features": (torch.rand(V, FEAT, generator=g) < 0.3).float(),
        "labels": torch.randint(0, CLASSES, (V,), generator=g),
        "edges": torch.randint(0, V, (E, 2), generator=g),
        "idx_train": torch.randperm(V, generator=g)[:40],
    })


def train(d, device):
    data = load_st(path(d, "data.safetensors"))
    features, labels, adj_mat = cora_tensors(data["features"], data["labels"], data["edges"], device)
    mask_train = data["idx_train"].to(device)
    model = GCN(FEAT, HIDDEN, CLASSES, True, 0.0)
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    optimizer = Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    losses = []
    for _ in range(STEPS):  # train_iter's step
        model.train()
        optimizer.zero_grad()
        output = model(features, adj_mat)
        loss = criterion(output[mask_train], labels[mask_train])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
