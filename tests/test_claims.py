"""Verdicts read off intervals (tspd.book.claims): above, below, straddling, bands, joined claims; the
bootstraps; the trace measurements of Figures 1-2; and the stored verdicts of the notebooks."""
from __future__ import annotations

import numpy as np
import pytest

from tspd.book import claims


@pytest.mark.parametrize("lo,hi,bound,above,expected", [
    (1.2, 2.0, 1.0, True, claims.HOLDS),       # clearly above a claimed lower bound
    (0.2, 0.8, 1.0, True, claims.FAILS),       # clearly below it
    (0.8, 1.3, 1.0, True, claims.OPEN),        # straddles it
    (-3.0, -1.5, -1.0, False, claims.HOLDS),   # claimed below: wholly below
    (-0.5, 0.5, -1.0, False, claims.FAILS),
    (-1.5, -0.5, -1.0, False, claims.OPEN),
])
def test_verdict_from_synthetic_intervals(lo, hi, bound, above, expected):
    assert claims.verdict(lo, hi, bound, above) == expected


def test_verdict_rejects_an_empty_interval():
    with pytest.raises(ValueError):
        claims.verdict(2.0, 1.0, 0.0)


def test_paired_bootstrap_separates_a_real_gap_from_noise():
    rng = np.random.default_rng(1)
    b = rng.random(400) < 0.6
    better = b | (rng.random(400) < 0.5)            # a fixes half of b's failures: about +20 points
    value, lo, hi = claims.paired_bootstrap(better, b, claims.accuracy_gap)
    assert 15 < value < 25 and 10 < lo < value < hi
    assert claims.verdict(lo, hi, 0.0) == claims.HOLDS
    same = b.copy()
    right, wrong = np.flatnonzero(b)[:3], np.flatnonzero(~b)[:3]
    same[right], same[wrong] = False, True            # 3 flips each way on 400: no real difference
    value, lo, hi = claims.paired_bootstrap(same, b, claims.accuracy_gap)
    assert value == 0.0 and claims.verdict(lo, hi, 0.0) == claims.OPEN


def test_forward_ratio_and_finding_row():
    nfe_fast, nfe_slow = np.full(50, 16.0), np.full(50, 64.0)
    f = claims.compare("NFE ratio", nfe_fast, nfe_slow, claims.mean_ratio, bound=1.0)
    assert f.value == pytest.approx(4.0) and f.lo == pytest.approx(4.0) and f.verdict == claims.HOLDS
    assert "4.00 [4.00, 4.00] (claimed > 1; n 50)" in f.text()
    assert claims.Finding.from_dict(f.to_dict()) == f
    with pytest.raises(ValueError):
        claims.paired_bootstrap([1, 2], [1, 2, 3], claims.mean_ratio)


def test_too_few_problems_give_no_verdict():
    same = np.zeros(claims.MIN_N - 1)
    f = claims.compare("gap", same, same, claims.accuracy_gap, bound=-1.0)
    assert (f.lo, f.hi) == (0.0, 0.0) and f.verdict == claims.OPEN      # a zero-width interval proves nothing
    enough = np.zeros(claims.MIN_N)
    assert claims.compare("gap", enough, enough, claims.accuracy_gap, bound=-1.0).verdict == claims.HOLDS


@pytest.mark.parametrize("lo,hi,expected", [
    (-1.0, 1.5, claims.HOLDS),      # inside the band
    (2.5, 4.0, claims.FAILS),       # wholly above it
    (-5.0, -3.0, claims.FAILS),     # wholly below it
    (1.0, 3.0, claims.OPEN),        # straddles its edge
])
def test_band_verdict(lo, hi, expected):
    assert claims.band_verdict(lo, hi, -2.0, 2.0) == expected
    f = claims.Finding("gap", (lo + hi) / 2, lo, hi, 100, band=(-2.0, 2.0))
    assert f.verdict == expected and claims.Finding.from_dict(f.to_dict()) == f


def _f(verdict):
    lo, hi = {claims.HOLDS: (2.0, 3.0), claims.FAILS: (-3.0, -2.0), claims.OPEN: (-1.0, 1.0)}[verdict]
    return claims.Finding("q", (lo + hi) / 2, lo, hi, 100, 0.0)


H, F, U = claims.HOLDS, claims.FAILS, claims.OPEN   # holds, fails, undecided


@pytest.mark.parametrize("rule,parts,expected", [
    ("all", [H, H], H), ("all", [H, U], U), ("all", [H, F], F),
    ("any", [F, H], H), ("any", [F, U], U), ("any", [F, F], F),
    ("better", [H, U], H), ("better", [H, F], U), ("better", [F, U], F), ("better", [U, U], U),
])
def test_joined_claims(rule, parts, expected):
    c = claims.Claim("c", "Table 0", [_f(v) for v in parts], rule)
    assert c.verdict == expected
    nested = claims.Claim("outer", "Table 0", [c, _f(H)])
    assert nested.verdict == expected
    back = claims.Claim.from_dict(nested.to_dict())
    assert back.verdict == nested.verdict and back.lines() == nested.lines()
    with pytest.raises(ValueError):
        claims.Claim("c", "Table 0", [], "most")


def test_cluster_bootstrap_resamples_whole_clusters():
    # 40 prompts; every token of a prompt has the same value, so the interval reflects 40 units, not 4000
    clusters = [np.full(100, float(i % 2)) for i in range(40)]
    value, lo, hi = claims.cluster_bootstrap(clusters, lambda cl: float(np.concatenate(cl).mean()))
    assert value == pytest.approx(0.5) and lo < 0.4 and hi > 0.6      # +-0.16 at n=40, not +-0.016
    with pytest.raises(ValueError):
        claims.cluster_bootstrap([], lambda cl: 0.0)


def _traces(flip_unstable: bool):
    """A synthetic trace set: 2 prompts x 1 block of 2 positions x 6 steps. Position 0 has a jumpy
    confidence, position 1 a flat one; the jumpy one is wrong (flips) until the last step iff asked."""
    import torch
    S, Lb = 6, 2
    conf = torch.tensor([[0.5, 0.55], [0.9, 0.55], [0.5, 0.55], [0.9, 0.56], [0.5, 0.56], [0.9, 0.57]])
    labels = torch.ones(S, Lb, dtype=torch.bool)
    if flip_unstable:
        labels[:-1, 0] = False
    masked = torch.ones(S, Lb, dtype=torch.bool)
    one = dict(features=conf[..., None], labels=labels, masked=masked)
    return {"channels": ["conf"], "offsets": torch.tensor([0, S, 2 * S]),
            "features": torch.cat([one["features"]] * 2), "labels": torch.cat([labels] * 2),
            "masked": torch.cat([masked] * 2), "prompt_index": torch.tensor([0, 1]), "block": torch.tensor([0, 0])}


def test_flip_states_and_gap():
    from tspd.book.claims import traces
    st = traces.flip_states(_traces(True), window=3)
    assert len(st.conf) == 2 * 2 * 4 and set(st.prompt.tolist()) == {0, 1}
    assert st.flip[st.spread > 0.05].mean() > 0.5 and st.flip[st.spread <= 0.05].sum() == 0
    gap = traces.flip_gap(st, unstable_std=0.05, bins=1)     # one bin: every state compared
    assert gap.value > 50 and gap.n == 2
    assert traces.flip_gap(traces.flip_states(_traces(False), 3), 0.05, 1).value == 0.0


def test_stabilisation_and_spearman():
    from tspd.book.claims import traces
    st = traces.stabilisation(_traces(True))
    assert st.stab.tolist() == [5, 0, 5, 0]          # position 0 settles at its last step, position 1 at once
    assert (st.stab <= st.commit).all()
    assert traces.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert traces.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert traces.spearman([1, 1, 2, 2], [1, 2, 1, 2]) == pytest.approx(0.0)


def test_extrapolable_share():
    import torch
    from tspd.book.claims import traces
    crossed = torch.ones(40, 8, dtype=torch.bool)
    earlier = torch.zeros(40, 8, dtype=torch.bool)
    earlier[:, :2] = True
    f = traces.extrapolable(earlier, crossed)
    assert f.value == pytest.approx(25.0) and f.verdict == claims.HOLDS and f.n == 40


class _Run:
    def __init__(self, key, correct, nfe, seconds=None, gen_tokens=32):
        self.key = key
        self.samples = [{"id": i, "correct": c, "nfe": n, "seconds": s, "gen_tokens": gen_tokens} for i, (c, n, s) in
                        enumerate(zip(correct, nfe, seconds or [1.0] * len(nfe)))]


def test_run_claims_on_synthetic_runs():
    from tspd.book.claims import runs as rc
    n = 60
    runs = {"Vanilla": _Run("v", [1] * n, [64] * n, [2.0] * n), "Ours": _Run("o", [1] * n, [16] * n, [0.5] * n),
            "F-dLLM": _Run("f", [1] * n, [32] * n, [1.0] * n)}
    c = rc.main_results(runs, rivals=[("F-dLLM", "Ours")])
    assert c.verdict == claims.HOLDS
    aup = c.parts[-1].parts[0]                       # TPF 2 x 100 % against TPF 1 x 100 %
    assert aup.quantity == "AUP Ours / AUP F-dLLM" and aup.value == pytest.approx(2.0) and aup.verdict == claims.HOLDS
    assert {p.where for p in rc.main_results(runs, rivals=[("F-dLLM", "Ours")], where="Table 2").parts[1:]} == {"Table 2"}
    runs["Ours"] = _Run("o", [0] * 10 + [1] * (n - 10), [16] * n, [0.5] * n)   # 17 points below vanilla
    assert rc.main_results(runs, rivals=[("F-dLLM", "Ours")]).verdict == claims.FAILS
    assert rc.ce_speeds_up({"A": runs["F-dLLM"], "A & CE": runs["Vanilla"]}, ["A"]).verdict == claims.FAILS
    runs["short"] = _Run("s", [1] * n, [64] * (n - 1))
    with pytest.raises(ValueError, match="different problems"):
        rc.fewer_forwards(runs, "Vanilla", "short")


def test_stored_verdicts_round_trip(tmp_path, capsys):
    from tspd.book.claims import store
    c = claims.Claim("c", "Table 7", [_f(H), _f(U)])
    store.report("table07_feature_ablation", {"arith": c}, claims_dir=tmp_path)
    printed = capsys.readouterr().out
    assert "[inconclusive] Table 7: c" in printed
    first = (tmp_path / "table07_feature_ablation.json").read_text()
    store.report("table07_feature_ablation", {"arith": c}, claims_dir=tmp_path)
    assert (tmp_path / "table07_feature_ablation.json").read_text() == first       # byte for byte
    stored = store.load_all(tmp_path)
    rows = store.page_rows(stored)
    assert len(rows) == len(store.NOTEBOOKS) and store.tally(rows)["not measured"] == len(store.NOTEBOOKS) - 1
    assert [r["verdict"] for r in rows if r["notebook"] == "table07_feature_ablation"] == [claims.OPEN]
    store.report("table02_other_backbones", {}, claims_dir=tmp_path)       # nothing of its kind measured
    assert capsys.readouterr().out.endswith("nothing judged: no run of the kind this claim is about (the page: not measured)\n")
    assert store.tally(store.page_rows(store.load_all(tmp_path)))["not measured"] == len(store.NOTEBOOKS) - 1
    with pytest.raises(ValueError, match="unknown claim notebook"):
        store.report("table99", {"arith": c}, claims_dir=tmp_path)


def test_a_verdict_read_back_is_the_verdict_printed_at_a_bound():
    """An interval end a float's error away from the bound is the bound (as the stored file keeps it)."""
    from tspd.book.claims.stats import Finding
    f = Finding("gap", -3.5, -6.5, -1.0000000001, 200, bound=-1.0, above=True)
    assert f.hi == -1.0 and f.verdict == Finding.from_dict(f.to_dict()).verdict == claims.OPEN


def _verdict_cell(name: str):
    import nbformat
    from tspd.provenance import REPO_ROOT
    nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return code[-1]


@pytest.mark.parametrize("name", sorted(claims.NOTEBOOKS))
def test_each_claim_notebook_ends_with_its_verdict_and_its_stored_file_agrees(name):
    """The verdict cell is the notebook's last code cell; results/claims/<name>.json (what the page reads)
    says exactly what that cell printed when the notebook was executed (nbval checks the cell itself)."""
    from tspd.book.claims import store
    cell = _verdict_cell(name)
    assert f'claims.report("{name}"' in cell.source
    stored = store.load(name)
    assert stored is not None, f"results/claims/{name}.json is missing: execute notebooks/{name}.ipynb"
    printed = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    assert printed == "\n".join(store.lines(name, stored)) + "\n"


def test_a_notebook_run_with_its_own_results_dir_keeps_its_verdicts_beside_it(tmp_path):
    """A run on another model (papermill -p results_dir ...) never rewrites the repository's record."""
    import nbformat
    from tspd.book.claims import store
    from tspd.provenance import REPO_ROOT
    assert store.beside("") is None and store.beside(tmp_path / "runs") == tmp_path / "claims"
    for name in sorted(claims.NOTEBOOKS):
        nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        params = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        kept = "claims_dir=claims.beside(results_dir)" if "results_dir" in params else "claims_dir=claims_dir or None"
        assert kept in _verdict_cell(name).source, name


def test_the_status_page_shows_the_measured_tally():
    """The status page's claims table counts the claims page's verdicts as they are stored, not as they were hoped."""
    import re
    from tspd.book import spans
    from tspd.provenance import REPO_ROOT
    tally = claims.tally(claims.page_rows(claims.load_all()))
    status = (REPO_ROOT / "book" / "status.md").read_text()
    table = dict(spans.named_spans(status)).get("claims-summary")
    assert table, "book/status.md: the table of the paper's claims is missing"
    counts = dict(re.findall(r"^\| ([a-z ]+) \| (\d+) \|", table, re.M))
    assert [int(counts[v]) for v in (claims.HOLDS, claims.FAILS, claims.OPEN)] == \
        [tally[claims.HOLDS], tally[claims.FAILS], tally[claims.OPEN]]


def test_the_deciding_quantity_is_the_first_part_with_the_claims_verdict():
    held, failed, open_ = _f(H), _f(F), _f(U)
    assert claims.Claim("c", "T", [held, failed, open_]).decisive() is failed          # all: the failing part
    assert claims.Claim("c", "T", [open_, held], rule="any").decisive() is held         # any: the holding part
    assert claims.Claim("c", "T", [held, open_]).decisive() is open_                    # all, open: the open part
    assert claims.Claim("c", "T", [held, failed], rule="better").decisive() is failed   # a trade-off: what failed
    assert claims.Claim("c", "T", [claims.Claim("s", "T", [held, failed])]).decisive() is failed   # depth first
    assert claims.Claim("c", "T", []).decisive() is None


def test_the_page_draws_and_tables_one_row_per_claim_and_lists_every_quantity(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from tspd.book.claims import page, store
    ratio = claims.Finding("NFE a / NFE b", 1.5, 1.2, 1.9, 200, 1.0)
    points = claims.Finding("accuracy a - b (points)", -3.0, -5.0, -1.5, 200, -1.0)
    band = claims.Finding("NFE c / NFE d", 1.0, 0.95, 1.05, 200, band=(0.9, 1.1))
    other = claims.Finding("Spearman(x, y)", 0.3, 0.2, 0.4, 48)
    store.report("table07_feature_ablation", {"arith": claims.Claim("c", "Table 7", [ratio, points, band, other])},
                 claims_dir=tmp_path)
    stored = store.load_all(tmp_path)
    assert [page.unit(f) for f in (ratio, points, band, other)] == ["ratio", "points", "ratio", "other"]
    rows = page.verdict_rows(stored)
    assert len(rows) == len(store.NOTEBOOKS)
    mine = next(r for r in rows if r["notebook"] == "table07_feature_ablation")
    assert mine["verdict"] == claims.FAILS and mine["decided by"].startswith("accuracy a - b (points): -3.00 [-5.00, -1.50]")
    evidence = page.evidence_rows(stored)
    assert [e["quantity"] for e in evidence] == [f.quantity for f in (ratio, points, band, other)]
    assert evidence[2]["claimed"] == "in [0.9, 1.1]" and evidence[2]["verdict"] == claims.HOLDS
    store.report("table02_other_backbones", {"roster / a": claims.Claim("c", "Table 2", [other]),
                                             "roster / b": claims.Claim("c", "Table 2", [ratio])}, claims_dir=tmp_path)
    fig = page.forest(store.load_all(tmp_path))
    labels = sorted(t.get_text() for ax in fig.axes for t in ax.get_yticklabels())
    assert labels == ["Table 2 (roster / a): Spearman(x, y)", "Table 2 (roster / b): NFE a / NFE b",
                      "Table 7: accuracy a - b (points)"]   # the decisive quantity of each claim


def test_the_spearman_bootstrap_is_the_cluster_bootstrap_of_spearman():
    """Figure 2's interval, computed from counts for every resample at once, equals the generic bootstrap's."""
    import torch
    from tspd.book.claims import traces
    g = torch.Generator().manual_seed(3)
    groups = [(torch.randint(0, 6, (n,), generator=g), torch.randint(0, 9, (n,), generator=g))
              for n in (5, 9, 1, 7, 12, 3)]
    groups.append((torch.tensor([2, 2]), torch.tensor([4, 4])))     # a prompt whose pairs all tie

    def stat(clusters):
        return traces.spearman(torch.cat([c[0] for c in clusters]), torch.cat([c[1] for c in clusters]))

    want = claims.cluster_bootstrap(groups, stat, n_boot=300, seed=1)
    assert traces.spearman_bootstrap(groups, n_boot=300, seed=1) == pytest.approx(want, rel=1e-9, abs=1e-12)
    with pytest.raises(ValueError, match="undefined"):
        traces.spearman_bootstrap([(torch.tensor([1, 1]), torch.tensor([2, 3]))], n_boot=10)


def test_an_aup_against_a_zero_aup_is_infinite_on_the_page_not_a_huge_number(tmp_path):
    """A rival whose every point is 0 % accurate has AUP 0: the ratio's floored denominator gives ~1e14, which the
    pages print as ∞ and the forest plot draws at its right edge as an arrow."""
    import matplotlib
    matplotlib.use("Agg")
    from tspd.book.claims import page, runs, store
    from tspd.book.claims.stats import number

    class Run:
        def __init__(self, correct, nfe):
            self.samples = [{"id": i, "correct": c, "gen_tokens": 40, "nfe": nfe} for i, c in enumerate(correct)]
            self.key = ""

    ours, rival = Run([1, 0] * 20, 10), Run([0] * 40, 1)
    f = runs.higher_aup({"Ours": [ours], "Rival": [rival]}, "Ours", "Rival", n_boot=50)
    assert f.value > 1e6 and f.verdict == claims.HOLDS
    assert number(f.value) == "∞" and number(2.345) == "2.35" and number(-3.0) == "-3.00"
    store.report("table01_main_results", {"arith": claims.Claim("c", "Table 1", [f])}, claims_dir=tmp_path)
    stored = store.load_all(tmp_path)
    assert page.evidence_rows(stored)[0]["value"] == "∞" and ": ∞ [∞, ∞] (claimed > 1" in f.text()
    fig = page.forest(stored)
    xs = [x for ax in fig.axes for line in ax.lines if line.get_marker() == ">" for x in line.get_xdata()]
    assert xs == [page.RATIO_SHOWN[1]]
