"""Figures that several pages draw the same way: the paper's speed-accuracy points beside ours.

:func:`paper_vs_ours` is every table page's picture of its comparison: the paper's (speedup, accuracy)
per row label on the paper's panels (one per task, model, length or sweep: ``panel``), ours on our
own, each label one colour on every panel, so that a reader sees where each method sits without
reading the table. Paper numbers are labelled as the paper's (:func:`tspd.book.reported.paper_label`),
ours with model, device and n (:func:`tspd.book.provenance`).
"""
from __future__ import annotations

import math
import textwrap

from tspd.book.reported import _get, paper_label


def speedup_or_ratio(rows: list[dict], label: str, reference: str | None) -> list[float | None]:
    """Each row's ``speedup`` where it has one, else its TPS over the TPS of the row labelled
    ``reference`` among ``rows`` (None when neither exists)."""
    ref = next((r for r in rows if reference is not None and str(_get(r, label)) == reference), None)
    ref_tps = _get(ref, "tps") if ref else None
    out = []
    for r in rows:
        s = _get(r, "speedup")
        if s is None and ref_tps and _get(r, "tps") is not None:
            s = _get(r, "tps") / ref_tps
        out.append(s)
    return out


def _panels(rows: list[dict], panel: str | None) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault("" if panel is None else str(_get(r, panel)), []).append(r)
    return out


LOG_SPREAD = 30.0   # speedups spanning more than this factor on one panel are drawn on a log axis: a method
                    # that answers in one forward (Prophet on the embedded models, ~250x) would otherwise
                    # squeeze every other point against 1x


def paper_vs_ours(paper: list[dict], ours: list[dict], label: str = "method", panel: str | None = None,
                  reference: str | None = "Vanilla", ours_title: str | dict[str, str] = "ours",
                  paper_title: str | None = None, y: str = "accuracy", y_title: str = "accuracy (%)",
                  columns: int = 2):
    """The paper's (speedup, accuracy) per ``label`` beside ours, one panel per value of ``panel``.

    ``reference`` names the row whose TPS is 1x where a table gives no speedup column (and whose
    accuracy is drawn as a dotted line: what the others are to keep); a label found in no row is simply
    not drawn. Squares are the paper's rows, circles ours; one colour per label across the panels.
    ``ours_title``: one title for our panels, or one per panel value (each model's own provenance).
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    sides = [("paper", paper_title or paper_label(paper), p, rs) for p, rs in _panels(paper, panel).items()]
    sides += [("ours", ours_title[p] if isinstance(ours_title, dict) else ours_title, p, rs)
              for p, rs in _panels(ours, panel).items()]
    labels = list(dict.fromkeys(str(_get(r, label)) for _, _, _, rs in sides for r in rs))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colour = {name: cmap(i % cmap.N) for i, name in enumerate(labels)}
    ncols = max(1, min(columns, len(sides)))
    nrows = math.ceil(len(sides) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 1.6, 3.4 * nrows), squeeze=False)
    for ax, (side, who, name, rs) in zip(axes.flat, sides):
        xs = speedup_or_ratio(rs, label, reference)
        for r, x in zip(rs, xs):
            if x is None or _get(r, y) is None:
                continue
            ax.plot([x], [_get(r, y)], "s" if side == "paper" else "o", color=colour[str(_get(r, label))], ms=7,
                    alpha=0.9, mec="k", mew=0.5)
        ref = next((r for r in rs if reference is not None and str(_get(r, label)) == reference), None)
        if ref is not None and _get(ref, y) is not None:
            ax.axhline(_get(ref, y), color="0.5", ls=":", lw=1)
        ax.axvline(1.0, color="0.8", lw=0.8)
        drawn = [x for x in xs if x is not None and x > 0]
        if drawn and max(drawn) / min(drawn) > LOG_SPREAD:
            ax.set_xscale("log")
        head = f"{who}" + (f": {panel} {name}" if panel else "")
        ax.set_title("\n".join(textwrap.wrap(head, 48)), fontsize=8)
        ax.set_xlabel("speedup (TPS" + (f" over {reference})" if reference else ")"), fontsize=8)
        ax.set_ylabel(y_title, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.margins(0.15)
        lo, hi = ax.get_ylim()
        if hi - lo < 1e-6:           # every row at one accuracy (e.g. none right): a readable span around it
            mid = (lo + hi) / 2
            ax.set_ylim(mid - 5, mid + 5)
    for ax in list(axes.flat)[len(sides):]:
        ax.axis("off")
    handles = [Line2D([], [], ls="none", marker="o", color=colour[n], mec="k", mew=0.5, label=n) for n in labels]
    handles += [Line2D([], [], ls="none", marker="s", color="w", mec="k", label="the paper's row"),
                Line2D([], [], ls="none", marker="o", color="w", mec="k", label="our row")]
    if reference is not None:
        handles.append(Line2D([], [], color="0.5", ls=":", label=f"{reference}'s accuracy"))
    fig.legend(handles=handles, loc="center right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 1.5 / (4.6 * ncols + 1.6), 1))
    return fig


__all__ = ["speedup_or_ratio", "paper_vs_ours"]
