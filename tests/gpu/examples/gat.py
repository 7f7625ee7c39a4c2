# Parity of scripts/examples/gat with pytorch/examples gat, PyTorch's side.
#
#   python3 tests/gpu/examples/gat.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/gat.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/gat.py compare DIR
#
# prepare: a random graph in the loader's terms -> DIR/gat_data.safetensors: "features" (0/1
# word counts, [60, 12]), "labels" (int64 [60], 3 classes), "edges" (int64 [150, 2] node
# positions) and "idx_train" (40 nodes); the example's GAT (n_hidden 8, 4 heads concatenated,
# dropout 0 so nothing random runs; seed 0) -> DIR/gat_init.safetensors; then load_cora's
# tensor steps (row-normalised features, the dense A + I) and 15 of train_iter's steps (Adam
# lr 0.005, weight decay 5e-4, NLLLoss on the training nodes). Writes DIR/gat_torch_losses.txt
# and DIR/gat_torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, V, FEAT, CLASSES, E, HIDDEN, HEADS = "gat", 15, 60, 12, 3, 150, 8, 4


class GraphAttentionLayer(nn.Module):  # the example's
    def __init__(self, in_features: int, out_features: int, n_heads: int, concat: bool = False, dropout: float = 0.4, leaky_relu_slope: float = 0.2):
        super(GraphAttentionLayer, self).__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        if concat:
            self.out_features = out_features
            assert out_features % n_heads == 0
            self.n_hidden = out_features // n_heads
        else:
            self.n_hidden = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.softmax = nn.Softmax(dim=1)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def forward(self, h: torch.Tensor, adj_mat: torch.Tensor):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        e = self._get_attention_scores(h_transformed)
        connectivity_mask = -9e16 * torch.ones_like(e)
        e = torch.where(adj_mat > 0, e, connectivity_mask)
        attention = F.softmax(e, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        else:
            h_prime = h_prime.mean(dim=0)
        return h_prime


class GAT(nn.Module):  # the example's
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4, leaky_relu_slope=0.2):
        super(GAT, self).__init__()
        self.gat1 = GraphAttentionLayer(
            in_features=in_features, out_features=n_hidden, n_heads=n_heads,
            concat=concat, dropout=dropout, leaky_relu_slope=leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(
            in_features=n_hidden, out_features=num_classes, n_heads=1,
            concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope)

    def forward(self, input_tensor: torch.Tensor, adj_mat: torch.Tensor):
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x)
        x = self.gat2(x, adj_mat)
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
    return features.to(device), labels.to(device), adj_mat.to(device)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def new_model():
    return GAT(in_features=FEAT, n_hidden=HIDDEN, n_heads=HEADS, num_classes=CLASSES, concat=True, dropout=0.0,
               leaky_relu_slope=0.2)


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), new_model().state_dict())
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
    model = new_model()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    optimizer = Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
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
