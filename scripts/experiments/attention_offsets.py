"""Where does each head look from a masked product? Attention mass by relative offset (issue 32's diagnostics).

The results of every ``aa*bb = cc`` line in the first ``--n`` test answers are masked (everything else clean,
as ``scripts/experiments/digit_probe.py``), one forward is run with the attention weights recomputed beside
scaled-dot-product attention, and for each layer and head the mean weight that the result's first token
puts on each offset in [-10, 10] is printed (its operands sit at -6 and -3; ``--n`` problems of ``--task``).

    python scripts/experiments/attention_offsets.py RUN_DIR [--task chain] [--window 160] [--n 32] [--lines K] [--bare]
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from digit_probe import problem_arguments, results_masked   # beside this script: first on the import path


REACH = 10   # offsets shown on each side


def weights_of_every_layer(run_forward) -> list[torch.Tensor]:
    """Run ``run_forward()`` with scaled-dot-product attention also recording its weights [B, H, T, T]."""
    seen, sdpa = [], F.scaled_dot_product_attention

    def recording(q, k, v, attn_mask=None, is_causal=False):
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        seen.append((s if attn_mask is None else s.masked_fill(~attn_mask, float("-inf"))).softmax(-1))
        return sdpa(q, k, v, attn_mask=attn_mask, is_causal=is_causal)

    F.scaled_dot_product_attention = recording
    try:
        with torch.no_grad():
            run_forward()
    finally:
        F.scaled_dot_product_attention = sdpa
    return seen


def offsets(run: str, task_name: str, window: int, n: int, lines: int | None = None,
            bare: bool = False) -> torch.Tensor:
    """``[layers, heads, 2 * REACH + 1]``: mean attention from a masked product's first token by offset."""
    net, _, batch, noisy, probed = results_masked(run, task_name, window, n, lines, bare)
    queries = [(i, cols[0]) for i, op, _, cols in probed if op == "*"]
    layers = weights_of_every_layer(
        lambda: net(noisy, attention_mask=batch.attention_mask, position_ids=batch.position_ids))
    T = noisy.shape[1]
    out = torch.zeros(len(layers), layers[0].shape[1], 2 * REACH + 1)
    for i, c in queries:
        lo, hi = max(0, c - REACH), min(T, c + REACH + 1)
        for layer, w in enumerate(layers):
            out[layer, :, lo - c + REACH:hi - c + REACH] += w[i, :, c, lo:hi]
    return out / len(queries)


def main() -> None:
    a = problem_arguments(__doc__.splitlines()[0], n=32)
    mass = offsets(a.run, a.task, a.window, a.n, a.lines, a.bare)
    for layer, heads in enumerate(mass):
        for h, m in enumerate(heads):
            top = m.topk(3)
            where = ", ".join(f"{int(j) - REACH:+d}: {float(v):.2f}" for v, j in zip(top.values, top.indices))
            print(f"layer {layer} head {h}: {float(m.sum()):.2f} of its weight within +-{REACH}; most at {where}")


if __name__ == "__main__":
    main()
