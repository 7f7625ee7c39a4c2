# PyTorch's side of bench/module_parity.lua: the same models, weights, inputs and printout.
import sys
import torch
import torch.nn as nn

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def fill(t, off):
    v = torch.sin(torch.arange(t.numel(), dtype=torch.float64) * 0.37 + off) * 0.3
    with torch.no_grad():
        t.copy_(v.view(t.shape))


def report(name, m, out):
    out.pow(2).sum().backward()
    print(f"{name}.out {out.sum().item():.9e} {out.abs().sum().item():.9e}")
    for pname, p in m.named_parameters():
        print(f"{name}.{pname} {p.grad.sum().item():.9e} {p.grad.abs().sum().item():.9e}")


def prepared(m):
    m = m.to(device)
    for i, p in enumerate(m.parameters(), 1):
        fill(p, i)
    return m


def inp(off, *shape):
    t = torch.empty(*shape)
    fill(t, off)
    return t.to(device)


lstm = prepared(nn.LSTM(16, 32, num_layers=2, bidirectional=True))
report("lstm", lstm, lstm(inp(0.5, 7, 4, 16))[0])
gru = prepared(nn.GRU(16, 24, batch_first=True))
report("gru", gru, gru(inp(0.7, 4, 7, 16))[0])
mha = prepared(nn.MultiheadAttention(32, 4))
q, kv = inp(0.1, 5, 3, 32), inp(0.2, 9, 3, 32)
pad = torch.zeros(3, 9, dtype=torch.bool)
pad[1][8] = True
report("mha", mha, mha(q, kv, kv, key_padding_mask=pad.to(device))[0])
enc = prepared(nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0), 2,
                                     enable_nested_tensor=False))
report("encoder", enc, enc(inp(0.3, 6, 2, 32), mask=nn.Transformer.generate_square_subsequent_mask(6).to(device)))
tr = prepared(nn.Transformer(d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=48,
                             dropout=0.0, batch_first=True, norm_first=True))
report("transformer", tr, tr(inp(0.4, 2, 6, 32), inp(0.6, 2, 5, 32)))
gen = prepared(nn.Sequential(nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.PReLU(8),
                             nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1)))
report("convt", gen, gen(inp(0.8, 2, 16, 5, 5)))
c1 = prepared(nn.Sequential(nn.Conv1d(6, 8, 5, padding=2), nn.Mish(), nn.MaxPool1d(2), nn.Conv1d(8, 4, 3, stride=2)))
report("conv1d", c1, c1(inp(0.9, 3, 6, 20)))
up = prepared(nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"), nn.Conv2d(4, 4, 3, padding=1),
                            nn.Upsample(size=(13, 17), mode="nearest"), nn.Conv2d(4, 8, 3), nn.PixelShuffle(2),
                            nn.UpsamplingBilinear2d(scale_factor=1.5)))
report("upsample", up, up(inp(1.1, 2, 4, 5, 6)))


class Stn(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(2 * 6 * 7, 6)
        self.conv = nn.Conv2d(2, 3, 3)

    def forward(self, x):
        theta = self.loc(x.reshape(x.size(0), -1)).view(-1, 2, 3) * 0.3 + torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).to(x.device)
        return self.conv(nn.functional.grid_sample(x, nn.functional.affine_grid(theta, x.size(), align_corners=False), align_corners=False))


stn = prepared(Stn())
report("stn", stn, stn(inp(1.3, 3, 2, 6, 7)))
