"""The README's headline results, one Markdown table filled from the records (``<!-- headline -->``).

Each row names the record that holds it: the controller table (the book's model, every held-out problem),
the claims' verdicts, the GPU step measurements. Accuracies carry n and a 95 % Wilson interval.
"""
from __future__ import annotations

from tspd import markdown
from tspd.bench import step as bench_step
from tspd.decoding.names import display_name
from tspd.book import controller_table
from tspd.records.files import shown

DECODINGS = (("vanilla", False, "none"), ("fast-dllm", False, "none"), ("tspd", True, "none"), ("tspd", True, "dual"))


def _decoding_rows(table: controller_table.ControllerTable) -> list[list[str]]:
    rows, out = table.by_setting(), []
    for controller, ce, cache in DECODINGS:
        if (controller, ce, cache) not in rows:
            continue
        r = rows[(controller, ce, cache)]
        lo, hi = r["accuracy_95"]
        out.append([display_name(controller, ce), cache, f"{100 * r['accuracy']:.1f}", f"{100 * lo:.1f}-{100 * hi:.1f}",
                    f"{r['nfe']:.1f}"])
    return out


def _claims_row() -> list[str]:
    from tspd.book import claims
    from tspd.book.claims.store import CLAIMS_DIR
    rows = claims.page_rows(claims.load_all())
    tally = claims.tally(rows)
    return ["the paper's claims, on the embedded models",
            f"{tally[claims.HOLDS]} hold, {tally[claims.FAILS]} fail, {tally[claims.OPEN]} open of {len(rows)}",
            f"`{shown(CLAIMS_DIR)}/`"]


def _gpu_rows() -> list[list[str]]:
    out = []
    for card in bench_step.CARDS:
        try:
            rec = bench_step.load(card)
        except FileNotFoundError:
            continue
        row = rec.batch(1)
        out.append([f"{rec.device}, LLaDA-8B's shape: dual-cache step / full forward",
                    f"{1e3 * row['dual_step_fast']['seconds']:.2f} ms / "
                    f"{1e3 * bench_step.best_full_forward(row)['seconds']:.2f} ms",
                    f"`{shown(bench_step.DIRECTORY) / rec.name}`"])
    return out


def headline_table(table: controller_table.ControllerTable | None = None) -> str:
    """Two small tables as Markdown: the book's model under the decoders, each accuracy with its 95 % Wilson
    interval (the record named in the line above it), then the claims' tally and the GPU step times."""
    table = table or controller_table.load()
    n = {r["n"] for r in table.by_setting().values()}
    decoders = markdown.table(["decoder", "cache", "accuracy, %", "95 % interval", "forwards a problem"],
                              _decoding_rows(table))
    rest = markdown.table(["", "measured", "record"], [_claims_row()] + _gpu_rows())
    return "\n".join([f"`{table.model}`, {' / '.join(map(str, sorted(n)))} held-out problems "
                      f"(`{shown(controller_table.PATH)}`):", "", *decoders, "", *rest])


__all__ = ["headline_table"]
