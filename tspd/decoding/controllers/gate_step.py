"""TSPD's gate network advanced by one decoding step in a handful of fused tensor operations (paper
Section 3.2, Eqs. 10-12; the overhead budget of Section 5.4).

:class:`~tspd.decoding.controllers.tspd.TSPDNet` is written for training: ``nn.LSTM`` over whole
traces. At decoding time each forward advances every position of the block by one step, and on a CPU
``nn.LSTM`` spends most of that step setting up its kernel (oneDNN), not computing. :class:`GateStep`
runs the same network as plain matrix products over all B * Lb positions at once:

    x      = (r - mean) / std                      folded into the first layer's input weights
    gates  = x W_ih^T + h W_hh^T + (b_ih + b_hh)   one matmul per weight, all four gates together
    i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the gate blocks (one sigmoid over all, one tanh)
    c      = f * c + i * g,   h = o * tanh(c)      per layer; at a block's first step h = c = 0
    pi     = sigmoid(w h + b)                      the head (Eq. 11)

The result equals ``TSPDNet`` up to float rounding (a different order of the same sums); the gate is
hard at 0.5 (Eq. 12), so the rounding decides a commit only for a probability within a few ulps of it.
The MLP variant (Table 6) has no state and runs as the module itself.
"""
from __future__ import annotations

import weakref

import torch

_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # read-only network -> its GateStep


class GateStep:
    """One decoding step of a :class:`~tspd.decoding.controllers.tspd.TSPDNet` (in eval mode).

    ``__call__(r [N, F], state) -> (gate logits [N], state)``; ``state`` None starts afresh (a block's
    first step), as ``TSPDNet`` with no state. It holds the network's weights as they were when it was
    made (the controller makes one when it binds, or at its first step).
    """

    @classmethod
    def shared(cls, net) -> "GateStep":
        """The one step of a network that is never written to (one :func:`~tspd.decoding.controllers.weights.load_net`
        read from its files and shares between calls), made once per device it is used on."""
        known = _SHARED.get(net)
        device = next(net.parameters()).device
        if known is None or known.device != device:
            known = _SHARED[net] = cls(net)
        return known

    def __init__(self, net):
        self.net, self.lstm = net, net.config.arch == "lstm"
        self.device = next(net.parameters()).device
        if not self.lstm:
            return
        cell, H = net.cell, net.config.hidden
        with torch.no_grad():
            scale = 1.0 / net.std
            self.layers = []
            for k in range(cell.num_layers):
                w_ih, w_hh = getattr(cell, f"weight_ih_l{k}"), getattr(cell, f"weight_hh_l{k}")
                bias = getattr(cell, f"bias_ih_l{k}") + getattr(cell, f"bias_hh_l{k}")
                if k == 0:   # standardisation folded in: W (r - m) / s = (W / s) r - W (m / s)
                    bias = bias - w_ih @ (net.mean * scale)
                    w_ih = w_ih * scale
                self.layers.append((w_ih.t().contiguous(), w_hh.t().contiguous(), bias.detach().clone()))
            self.head_w = net.head.weight.t().contiguous()
            self.head_b = net.head.bias.detach().clone()
        self.H = H

    @torch.no_grad()
    def __call__(self, r: torch.Tensor, state):
        if not self.lstm:
            logits, _ = self.net(r[None], None)
            return logits[0], None
        H, x, new = self.H, r, []
        for k, (w_ih, w_hh, bias) in enumerate(self.layers):
            gates = torch.addmm(bias, x, w_ih)
            if state is not None:
                h, c = state[k]
                gates.addmm_(h, w_hh)
            act = gates.sigmoid()
            g = gates[:, 2 * H:3 * H].tanh()
            ig = act[:, :H] * g
            c = ig if state is None else torch.addcmul(ig, act[:, H:2 * H], c)
            x = act[:, 3 * H:] * c.tanh()
            new.append((x, c))
        return torch.addmm(self.head_b, x, self.head_w)[:, 0], new


__all__ = ["GateStep"]
