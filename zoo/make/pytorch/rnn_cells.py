"""Recurrent cells through their functional ops: an LSTM cell (linear for the input gates,
torch.addmm for the recurrent gates, chunk, sigmoid, tanh, mul, add) followed by a GRU cell
(linear, chunk, sigmoid, tanh, mul, add, 1 - z), unrolled over a short sequence, stacked, and a
linear read-out.

Loss: mse_loss. Optimizer: SGD (momentum, nesterov).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

IN, HID, SEQ, BATCH, OUT = 8, 12, 4, 2, 4


class LSTMCell(nn.Module):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(4 * n_hid, n_in) * 0.2)
        self.w_hh = nn.Parameter(torch.randn(4 * n_hid, n_hid) * 0.2)
        self.b_ih = nn.Parameter(torch.zeros(4 * n_hid))
        self.b_hh = nn.Parameter(torch.zeros(4 * n_hid))

    def forward(self, x, state):
        h, c = state
        gates = F.linear(x, self.w_ih, self.b_ih) + torch.addmm(self.b_hh, h, self.w_hh.t())
        i, f, g, o = gates.chunk(4, dim=1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), o.sigmoid()
        c = f * c + i * g
        h = o * torch.tanh(c)
        return h, c


class GRUCell(nn.Module):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(3 * n_hid, n_in) * 0.2)
        self.w_hh = nn.Parameter(torch.randn(3 * n_hid, n_hid) * 0.2)
        self.b_ih = nn.Parameter(torch.zeros(3 * n_hid))
        self.b_hh = nn.Parameter(torch.zeros(3 * n_hid))

    def forward(self, x, h):
        gi = F.linear(x, self.w_ih, self.b_ih)
        gh = F.linear(h, self.w_hh, self.b_hh)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(torch.add(i_z, h_z))
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + torch.mul(z, h)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = LSTMCell(IN, HID)
        self.gru = GRUCell(HID, HID)
        self.readout = nn.Linear(HID, OUT)

    def forward(self, xs):
        b = xs.shape[0]
        h = torch.zeros(b, HID)
        c = torch.zeros(b, HID)
        hg = torch.zeros(b, HID)
        outs = []
        for step in range(xs.shape[1]):
            h, c = self.lstm(xs[:, step], (h, c))
            hg = self.gru(h, hg)
            outs.append(hg)
        return self.readout(torch.stack(outs, dim=1))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
g = zoo_common.generator()
xs = torch.randn(BATCH, SEQ, IN, generator=g)
target = torch.randn(BATCH, SEQ, OUT, generator=g)


def compute_loss():
    return F.mse_loss(model(xs), target)


zoo_common.train_step(debugger, model, optimizer, compute_loss)
