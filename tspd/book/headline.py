"""The README's headline results, one Markdown table filled from the records (``<!-- headline -->``).

Each row names the record that holds it: the controller table (the book's model, every held-out problem),
the claims' verdicts, the GPU step measurements. Accuracies carry n and a 95 % Wilson interval.
"""
from __future__ import annotations

from tspd import markdown
from tspd.decoding.names import display_name
from tspd.records import bench_step, controller_table
from tspd.records.files import shown

DECODINGS = (("vanilla", False, "none"), ("fast-dllm", False, "none"), ("tspd", True, "none"), ("tspd", True, "dual"))


def _decoding_rows(table: controller_table.ControllerTable) -> list[list[str]]:
    rows, out = table.by_setting(), []
    for setting in DECODINGS:
        if setting not in rows:
            continue
        r = rows[setting]
        lo, hi = r["accuracy_95"]
        out.append([f"`{table.model}`, {display_name(*setting)}",
                    f"{100 * r['accuracy']:.1f} % of {r['n']} ({100 * lo:.1f}-{100 * hi:.1f} %), "
                    f"{r['nfe']:.1f} forwards a problem", f"`{shown(controller_table.PATH)}`"])
    return out


def _claims_row() -> list[str]:
    from tspd.book import claims
    from tspd.book.claims.store import CLAIMS_DIR
    rows = claims.page_rows(claims.load_all())
    tally = claims.tally(rows)
    return ["the paper's claims, checked on the embedded models",
            f"{tally[claims.HOLDS]} hold, {tally[claims.FAILS]} do not hold, {tally[claims.OPEN]} inconclusive "
            f"of {len(rows)}", f"`{shown(CLAIMS_DIR)}/`"]


def _gpu_rows() -> list[list[str]]:
    out = []
    for card in bench_step.CARDS:
        try:
            rec = bench_step.load(card)
        except FileNotFoundError:
            continue
        row = rec.batch(1)
        out.append([f"fast path on the {rec.device}, LLaDA-8B's shape: dual-cache step / full forward",
                    f"{1e3 * row['dual_step_fast']['seconds']:.2f} ms / "
                    f"{1e3 * bench_step.best_full_forward(row)['seconds']:.2f} ms",
                    f"`{shown(bench_step.DIRECTORY) / rec.name}`"])
    return out


def headline_table(table: controller_table.ControllerTable | None = None) -> str:
    """The table as Markdown."""
    table = table or controller_table.load()
    rows = _decoding_rows(table) + [_claims_row()] + _gpu_rows()
    return "\n".join(markdown.table(["", "measured", "record"], rows))


__all__ = ["headline_table"]
