"""The status page's zoo table: a row per model with a regime record, its figures from that record, LLaDA's last."""
from tspd.book import dashboard
from tspd.measures.regime import targets
from tspd.measures import regime as regime_file


def test_a_row_per_model_with_a_regime_record_and_llada_last():
    rows = dashboard.zoo_rows()
    assert rows[-1][0].startswith("LLaDA-8B-Instruct") and "theirs" in rows[-1][0]
    assert rows[-1][3] == "4.5 / 12.8 / 48.6"                       # Fast-dLLM paper, Fig. 5 (theirs)
    names = [r[0].split("`")[1] for r in rows[:-1]]
    assert "tiny-roster" in names and all(len(r) == len(dashboard.COLUMNS) for r in rows)


def test_a_rows_figures_are_its_records():
    row = next(r for r in dashboard.zoo_rows() if r[0].startswith("`tiny-roster`"))
    found = targets(regime_file.load("tiny-roster").data)
    met, point = sum(t["met"] for t in found), sum(t["point_met"] and not t["met"] for t in found)
    assert row[5] == f"{met} / {point} of {len(found)}"
    fixed2 = next(t for t in found if t["target"] == "fixed2_loss")
    assert row[3].split(" / ")[0] == f"{fixed2['value']:.1f}"
