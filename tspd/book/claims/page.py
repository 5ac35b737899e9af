"""The "What reproduces" page as a reader takes it in: a forest plot first, then a compact table, then
every quantity on its own row.

- :func:`forest`: one row per claim, the quantity that decided it with its 95 % interval against the claimed
  bound (or band), coloured by verdict, one panel per kind of quantity (accuracy differences in points, ratios on
  a log axis, other statistics) so that intervals of one unit share an axis;
- :func:`verdict_rows`: claim, verdict and the one quantity that decided it
  (:meth:`~tspd.book.claims.stats.Claim.decisive`);
- :func:`evidence_rows`: the full evidence, one quantity per row.

All read the notebooks' stored verdicts (:func:`tspd.book.claims.store.load_all`); nothing is decoded.
"""
from __future__ import annotations

from tspd.book.claims.stats import FAILS, HOLDS, OPEN, Claim, Finding, number
from tspd.book.claims.store import NOTEBOOKS

COLOURS = {HOLDS: "#1a9850", FAILS: "#d73027", OPEN: "#878787"}
UNITS = ("points", "ratio", "other")
UNIT_TITLES = {"points": "accuracy and other differences (points)", "ratio": "ratios (x, log scale)",
               "other": "other statistics"}
RATIO_SHOWN = (1e-3, 100.0)   # the ratio panel's range: a ratio beyond it is drawn at its edge, as an arrow


def unit(f: Finding) -> str:
    """``points`` (a difference in percentage points), ``ratio`` (``A / B``, bound 1) or ``other``."""
    if "(points)" in f.quantity:
        return "points"
    if " / " in f.quantity and (f.band is not None and f.band[0] < 1 < f.band[1] or f.band is None and f.bound == 1):
        return "ratio"
    return "other"


def interval_text(f: Finding) -> str:
    """``0.94 [0.91, 0.96], claimed > 1``."""
    return f"{f.shown}, claimed {f.side}"


def _claims(stored: dict) -> list[tuple[str, str, str, str, Claim]]:
    """(notebook, where, page text, task, claim) for every stored claim, in the page's order."""
    out = []
    for nb, (where, text) in NOTEBOOKS.items():
        for task, claim in (stored.get(nb) or {}).items():
            out.append((nb, where, text, task, claim))
    return out


def verdict_rows(stored: dict) -> list[dict]:
    """One row per claim and task: its verdict and the quantity that decided it."""
    rows = []
    for nb, where, text, task, claim in _claims(stored):
        f = claim.decisive()
        rows.append({"where": where, "claim": text, "task": task, "verdict": claim.verdict,
                     "decided by": f"{f.quantity}: {interval_text(f)}" if f else "", "n": f.n if f else None,
                     "notebook": nb})
    for nb, (where, text) in NOTEBOOKS.items():
        if not stored.get(nb):
            rows.append({"where": where, "claim": text, "task": "", "verdict": "not measured", "decided by": "",
                         "n": None, "notebook": nb})
    return rows


def _walk(claim: Claim, path: tuple[str, ...] = ()):
    """(path of sub-claims, finding) depth first; the top claim's own text is not part of the path."""
    for p in claim.parts:
        if isinstance(p, Claim):
            yield from _walk(p, path + (p.claim,))
        else:
            yield path, p


def evidence_rows(stored: dict) -> list[dict]:
    """Every quantity behind every verdict, one per row: value, 95 % interval, claimed side, verdict."""
    rows = []
    for nb, where, _, task, claim in _claims(stored):
        for path, f in _walk(claim):
            rows.append({"where": where, "task": task, "part": " / ".join(path) or "-", "quantity": f.quantity,
                         "value": number(f.value), "95 % interval": f"[{number(f.lo)}, {number(f.hi)}]",
                         "claimed": f.side, "n": f.n, "verdict": f.verdict})
    return rows


def _label(where: str, task: str, several: bool, f: Finding, width: int = 56) -> str:
    """``Table 2 (roster / roster-moe): NFE Prophet † / …``: the claim's place (its task where its notebook checks
    several) and its decisive quantity, cut to ``width`` characters."""
    head = f"{where} ({task})" if several else where
    text = f"{head}: {f.quantity}"
    return text if len(text) <= width else text[:width - 1] + "…"


def forest(stored: dict, width: float = 9.0):
    """The forest plot, one row per claim (and task): the quantity that decided its verdict
    (:meth:`~tspd.book.claims.stats.Claim.decisive`), its interval as a bar and its value as a dot in the verdict's
    colour, the claimed bound as a black tick (a band: a grey span); one panel per unit (:data:`UNITS`), the
    panels' heights by their rows. Every quantity of every claim is in :func:`evidence_rows`."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    groups: dict[str, list[tuple[str, Finding]]] = {u: [] for u in UNITS}
    found = [(nb, where, task, claim.decisive()) for nb, where, _, task, claim in _claims(stored)]
    for nb, where, task, f in found:
        if f is not None:
            several = sum(n == nb for n, *_ in found) > 1
            groups[unit(f)].append((_label(where, task, several, f), f))
    used = [u for u in UNITS if groups[u]]
    if not used:
        fig, ax = plt.subplots(figsize=(width, 1.5))
        ax.text(0.5, 0.5, "no stored verdicts yet", ha="center", va="center")
        ax.axis("off")
        return fig
    heights = [len(groups[u]) + 1.5 for u in used]
    fig, axes = plt.subplots(len(used), 1, figsize=(width, 0.28 * sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, u in zip(axes[:, 0], used):
        rows = groups[u]
        for i, (_, f) in enumerate(rows):
            y = len(rows) - 1 - i
            colour = COLOURS[f.verdict]
            if f.band is not None:
                ax.fill_betweenx([y - 0.4, y + 0.4], *f.band, color="0.85", zorder=0)
            else:
                ax.plot([f.bound, f.bound], [y - 0.4, y + 0.4], color="k", lw=1.5, zorder=1)
            shown = (lambda v: min(max(v, RATIO_SHOWN[0]), RATIO_SHOWN[1])) if u == "ratio" else (lambda v: v)
            ax.plot([shown(f.lo), shown(f.hi)], [y, y], color=colour, lw=3, solid_capstyle="butt", zorder=2)
            beyond = u == "ratio" and f.value > RATIO_SHOWN[1]    # off the axis (∞: a zero denominator): an arrow
            ax.plot([shown(f.value)], [y], ">" if beyond else "o", color=colour, ms=5, zorder=3)
        ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)], fontsize=8)
        ax.set_ylim(-0.8, len(rows) - 0.2)
        if u == "ratio":
            _ratio_axis(ax)
        ax.grid(axis="x", color="0.92", zorder=-1)
        ax.set_title(UNIT_TITLES[u], fontsize=9, loc="left")
    handles = [Line2D([], [], color=c, lw=2.5, marker="o", ms=4, label=v) for v, c in COLOURS.items()]
    handles += [Line2D([], [], color="k", lw=1.5, label="claimed bound (the claim: the interval beyond it)")]
    axes[0, 0].legend(handles=handles, fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.06), ncol=4, frameon=False)
    fig.tight_layout()
    return fig


def _ratio_axis(ax) -> None:
    """A log axis labelled 0.2, 0.5, 1, 2, 5 (no minor labels)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if lo <= t <= hi] or [1]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


__all__ = ["COLOURS", "UNITS", "unit", "interval_text", "verdict_rows", "evidence_rows", "forest"]
