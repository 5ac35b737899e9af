"""What a model that had learned its data exactly would show: Section 3's measures on a Bayes oracle.

The dynamics record (:mod:`tspd.measures.dynamics`) reads a trained model's vanilla traces. Here the same decoding
(one token a step: the most confident masked position of the current block, block by block, the paper's window)
runs on the *exact posterior* of a task's generative process in place of a network, and the same measures
(:func:`tspd.measures.dynamics.block_measures`) read its traces. So a task design can be judged before any
training: what middle does its data hold for a model that has learned it perfectly?

An answer is a :class:`Layout`: a list of slots, each either certain (the template, EOS) or a place in a
:class:`Group`, a small joint distribution over some of the answer's tokens (a line's chores, its hours, its
style's markers) given as rows ``(probability, values)``. A masked slot's confidence is the largest marginal of its
group given the values already written; its argmax the value with that marginal. The committed value is the
argmax (vanilla's greedy decoding) or, with ``sample``, a draw from the marginal: a calibrated model's sampling,
under which a token's confidence is a martingale and P(flip | confidence) cannot depend on the trace's history
(Fig. 1's gap is then 0 up to noise).

:func:`styled_layout` is the ``styled`` task's exact process (:mod:`tspd.tasks.styled`); :func:`roster_layout` the
``roster`` task's; :func:`shifted_layout` the ``leaning`` task with some forms two tokens long, whose lines hold
each token at a place that depends on where the long forms sit (an :class:`Aligned` group: the alignment a latent
of its own); :func:`phrasings_layout` a generic family (each line one of M phrasings drawn with skewed odds,
every token a function of the phrasing), the most favourable to moved traces found while designing issue 67's task.

The record: ``python -m tspd oracle-dynamics`` (:mod:`tspd.commands.oracle_dynamics`) keeps every design's summary in
:data:`ORACLE`. Its tables: :func:`oracle_table` (the regime page: each design beside the trained models' dynamics
records) and :func:`shifted_table` (the status page: the two-token-form designs against the dynamics targets).
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from math import prod

import numpy as np
import torch

from tspd import markdown
from tspd.measures.dynamics import (TARGETS, BlockMeasures, DynamicsConfig, block_measures, interval_cell,
                                    prompt_measures, summary)
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, shown


@dataclass(frozen=True)
class Group:
    """A joint distribution over a few answer slots: rows of (probability, one value per slot)."""
    rows: tuple

    def posterior(self, known: dict[int, int]) -> tuple[float, list[dict[int, float]]]:
        """The probability that the slots hold the values ``known`` ({slot: value}), and each slot's distribution
        given them (:meth:`marginals`), from one pass over the rows."""
        rows = [(p, v) for p, v in self.rows if p > 0 and all(v[i] == x for i, x in known.items())]
        z = sum(p for p, _ in rows)
        out = [{} for _ in self.rows[0][1]]
        for p, values in rows:
            for i, x in enumerate(values):
                out[i][x] = out[i].get(x, 0.0) + p / z
        return z, out

    def marginals(self, known: dict[int, int]) -> list[dict[int, float]]:
        """Each slot's distribution given the values ``known`` ({slot: value}) already written."""
        return self.posterior(known)[1]


def permutations(n: int) -> Group:
    """``n`` slots holding 0 .. n-1 in any order, equally likely (a roster line's chores)."""
    perms = list(itertools.permutations(range(n)))
    return Group(tuple((1 / len(perms), p) for p in perms))


def sums(n: int, values: tuple[int, ...], total: int) -> Group:
    """``n`` slots from ``values`` adding up to ``total``, every such tuple equally likely (a styled line's hours)."""
    ok = [v for v in itertools.product(values, repeat=n) if sum(v) == total]
    return Group(tuple((1 / len(ok), v) for v in ok))


def styles(n: int, p_plain: float, p_first: float) -> Group:
    """``n`` binary markers (0: first form): all 0 on a plain line (odds ``p_plain``), else each 0 with ``p_first``."""
    rows = [(p_plain * (sum(v) == 0) + (1 - p_plain) * prod(p_first if x == 0 else 1 - p_first for x in v), v)
            for v in itertools.product((0, 1), repeat=n)]
    return Group(tuple(rows))


@dataclass(frozen=True)
class Aligned:
    """A line whose places hold other tokens depending on where its long forms sit (a form of two tokens shifts
    every later place of the line by one): ``alignments``, rows of (probability, places), each place a token code
    (certain under that alignment) or ``(group, index, codes)``, a place of ``groups[group]`` whose value ``v``
    writes the token ``codes[v]``. Its places' distributions mix the alignments by how well each explains the
    tokens already written (the same interface as :class:`Group`, over token codes)."""
    alignments: tuple
    groups: dict

    def _assignment(self, places, known: dict[int, int]) -> dict | None:
        """What ``known`` ({place: token}) says of each group's slots under one alignment; None where it rules it out."""
        out = {g: {} for g in self.groups}
        for k, token in known.items():
            place = places[k]
            if isinstance(place, int):
                if place != token:
                    return None
                continue
            g, i, codes = place
            if token not in codes:
                return None
            out[g][i] = codes.index(token)
        return out

    def marginals(self, known: dict[int, int]) -> list[dict[int, float]]:
        """Each place's distribution over token codes given the tokens ``known`` ({place: token}) written."""
        weighted = []
        for p, places in self.alignments:
            assign = self._assignment(places, known)
            if assign is None:
                continue
            post = {g: self.groups[g].posterior(a) for g, a in assign.items()}
            w = p * prod(z for z, _ in post.values())
            if w > 0:
                weighted.append((w, places, {g: marg for g, (_, marg) in post.items()}))
        z = sum(w for w, _, _ in weighted)
        out = [{} for _ in self.alignments[0][1]]
        for w, places, marg in weighted:
            for k, place in enumerate(places):
                dist = {place: 1.0} if isinstance(place, int) else \
                    {place[2][v]: q for v, q in marg[place[0]][place[1]].items()}
                for x, q in dist.items():
                    out[k][x] = out[k].get(x, 0.0) + w / z * q
        return out


@dataclass
class Layout:
    """An answer: ``slots`` (None: a certain token; ``(group, index)``: a place in ``groups[group]``); its first
    ``answer`` positions are answer tokens (the rest EOS)."""
    slots: list
    groups: dict
    answer: int


def styled_layout(problem: dict, header: int, tail: int, odds: tuple[float, float] | None = None) -> Layout:
    """The ``styled`` task's process for ``problem``: per line ``header`` certain tokens (``On day k they``), the
    verb, each chore (a permutation), its joiner, its hours (2 or 3, adding up to the total), the separators, the
    full stop and the newline; ``tail`` certain tokens end the answer (``#### D``). ``odds``: (P_PLAIN,
    P_MIXED_FIRST) in place of the task's, to try other styles on the same problems."""
    from tspd.tasks import styled
    n = len(problem["chores"])
    p_plain, p_first = odds or (styled.P_PLAIN, styled.P_MIXED_FIRST)
    slots, groups = [], {}
    for d in range(problem["days"]):
        m, c, h = f"m{d}", f"c{d}", f"h{d}"
        groups[m] = styles(2 * n, p_plain, p_first)
        groups[c], groups[h] = permutations(n), sums(n, styled.HOURS, problem["total"])
        marker = iter(range(2 * n))
        slots += [None] * header + [(m, next(marker))]
        for i in range(n):
            slots += [(c, i), (m, next(marker)), (h, i)] + ([(m, next(marker))] if i < n - 1 else [])
        slots += [None, None]
    slots += [None] * tail
    return Layout(slots, groups, len(slots))


def roster_layout(problem: dict, header: int, tail: int) -> Layout:
    """The ``roster`` task's process: per line ``header`` certain tokens, each chore (a permutation) and its
    separator (certain), the full stop and the newline."""
    n = len(problem["chores"])
    slots, groups = [], {}
    for d in range(problem["days"]):
        groups[f"c{d}"] = permutations(n)
        slots += [None] * (header + 1) + [t for i in range(n) for t in ((f"c{d}", i), None)] + [None]
    slots += [None] * tail
    return Layout(slots, groups, len(slots))


def shell_layout(problem: dict, tail: int, odds: tuple[float, float] | None = None) -> Layout:
    """The ``leaning_shell`` task's process (:mod:`tspd.tasks.leaning_shell`): each item's index (one token a digit)
    and cup certain (a perfect model has composed every swap), its joiner and separator places in its run's style
    group (:data:`tspd.tasks.shell.STYLE_ITEMS` items a run), the newline and ``tail`` tokens (``#### c``) certain."""
    from tspd.tasks import leaning_shell, shell
    odds = odds or (leaning_shell.P_PLAIN, leaning_shell.P_MIXED_FIRST)
    n, run = len(problem["cups"]), shell.STYLE_ITEMS
    slots, groups = [], {}
    for i in range(n):
        g, k = f"s{i // run}", 2 * (i % run)
        if i % run == 0:
            items = min(run, n - i)
            groups[g] = styles(2 * items - (i + items == n), *odds)   # the last item has no separator
        slots += [None] * len(str(i + 1)) + [(g, k), None] + ([(g, k + 1)] if i < n - 1 else [None])
    slots += [None] * tail
    return Layout(slots, groups, len(slots))


# token codes of a shifted line's places (any distinct integers: the measures compare them, nothing reads them)
MARKS = {"will": 0, "each": 1, ",": 2, ";": 3, "and": 4, " ": 5, ":": 6, ".": 7, "\n": 8, "for": 9}
CHORE, HOUR = 100, 200   # a chore's code is CHORE + its index, an hour's HOUR + its value


def shifted_layout(problem: dict, header: int, tail: int, odds: tuple[float, float] | None = None, longs: int = 1,
                   long_form: tuple[str, ...] = (":", " "), anywhere: bool = False) -> Layout:
    """The ``leaning`` task's lines (:func:`styled_layout` at its odds unless ``odds`` are given) with ``longs`` of each
    line's markers written in a two-token ``long_form`` (``cook: 2``), their places drawn at random among the
    items' joiners (or, ``anywhere``, among all the line's markers): a line keeps one length (the day count stays
    positional) but every place after a long form is shifted, and where the shift sits is a latent that each
    written token tells something of."""
    from tspd.tasks import leaning, styled
    n = len(problem["chores"])
    p_plain, p_first = odds or (leaning.P_PLAIN, leaning.P_MIXED_FIRST)
    kinds = ["verb"] + [k for i in range(n) for k in ["item"] + (["sep" if i < n - 2 else "last"] if i < n - 1 else [])]
    forms = {kind: tuple(MARKS[f.strip() or f] for f in pair) for kind, pair in styled.FORMS.items()}
    places_at = range(2 * n) if anywhere else [k for k, kind in enumerate(kinds) if kind == "item"]
    combos = list(itertools.combinations(places_at, longs))
    chores, hours = tuple(CHORE + i for i in range(n)), tuple(HOUR + h for h in range(max(styled.HOURS) + 1))
    slots, groups = [], {}
    for d in range(problem["days"]):
        alignments = []
        for long in combos:
            def mark(k: int) -> list:
                return [MARKS[t] for t in long_form] if k in long else [("m", k, forms[kinds[k]])]
            body, k = mark(0), 1
            for i in range(n):
                body += [("c", i, chores)] + mark(k) + [("h", i, hours)] + (mark(k + 1) if i < n - 1 else [])
                k += 2
            alignments.append((1 / len(combos), tuple(body + [MARKS["."], MARKS["\n"]])))
        line = Aligned(tuple(alignments), {"m": styles(2 * n, p_plain, p_first), "c": permutations(n),
                                           "h": sums(n, styled.HOURS, problem["total"])})
        groups[d] = line
        slots += [None] * header + [(d, k) for k in range(len(alignments[0][1]))]
    slots += [None] * tail
    return Layout(slots, groups, len(slots))


def phrasings_layout(rng: random.Random, lines: int = 8, header: int = 2, span: int = 28, phrasings: int = 32,
                     skew: float = 0.9) -> Layout:
    """A generic family: per line ``header`` certain tokens, then ``span`` binary tokens, each a fixed random function
    of the line's phrasing, one of ``phrasings`` drawn with odds ``skew ** rank``; a certain newline."""
    slots, groups = [], {}
    odds = [skew ** r for r in range(phrasings)]
    for d in range(lines):
        table = [tuple(rng.randrange(2) for _ in range(span)) for _ in range(phrasings)]
        groups[d] = Group(tuple((o / sum(odds), row) for o, row in zip(odds, table)))
        slots += [None] * header + [(d, i) for i in range(span)] + [None]
    return Layout(slots, groups, len(slots))


def decode(layout: Layout, gen_length: int, block_length: int, cfg: DynamicsConfig = DynamicsConfig(),
           sample: np.random.Generator | None = None) -> list[BlockMeasures]:
    """Vanilla decoding of ``layout`` by its exact posterior, one measured block at a time (the answer cut at
    ``gen_length``): each step commits the most confident masked slot of the block (the first on ties), its argmax
    (the smallest value on ties) or, with ``sample``, a draw from its marginal."""
    slots = (layout.slots + [None] * gen_length)[:gen_length]
    answer = torch.arange(gen_length) < layout.answer
    known = {g: {} for g in layout.groups}
    value, done = [0] * gen_length, [False] * gen_length
    out = []
    for lo in range(0, gen_length, block_length):
        block = range(lo, lo + block_length)
        confs, args, masks = [], [], []
        while not all(done[i] for i in block):
            touched = {slots[i][0] for i in block if slots[i] and not done[i]}
            marg = {g: layout.groups[g].marginals(known[g]) for g in touched}
            dists = [None if done[i] or slots[i] is None else marg[slots[i][0]][slots[i][1]] for i in block]
            best = [None if d is None else min(d, key=lambda x: (-d[x], x)) for d in dists]
            confs.append([1.0 if d is None else d[b] for d, b in zip(dists, best)])
            args.append([value[i] if d is None else b for i, d, b in zip(block, dists, best)])
            masks.append([not done[i] for i in block])
            j = min((k for k, m in enumerate(masks[-1]) if m), key=lambda k: (-confs[-1][k], k))
            i, d, chosen = block[j], dists[j], args[-1][j]
            if d is not None and sample is not None:
                xs = sorted(d)
                chosen = xs[sample.choice(len(xs), p=np.array([d[x] for x in xs]) / sum(d.values()))]
            value[i], done[i] = chosen, True
            if slots[i]:
                known[slots[i][0]][slots[i][1]] = chosen
        final = torch.tensor([value[i] for i in block])
        out.append(block_measures(torch.tensor(confs), torch.tensor(args) == final, torch.tensor(masks),
                                  answer[lo:lo + block_length], cfg))
    return out


def measure(layouts, gen_length: int, block_length: int, cfg: DynamicsConfig = DynamicsConfig(),
            sample_seed: int | None = None) -> dict:
    """The dynamics summary (:func:`tspd.measures.dynamics.summary`, intervals over answers) of decoding every
    layout, and its per-answer rows; ``sample_seed``: commits drawn from the posterior."""
    rng = None if sample_seed is None else np.random.default_rng(sample_seed)
    rows = [prompt_measures(decode(lay, gen_length, block_length, cfg, rng), cfg) for lay in layouts]
    return {"summary": summary(rows, cfg), "rows": rows}


# the leaning task with forms of two tokens (shifted_layout): name, its arguments, what it is
SHIFTED = (("leaning, one 'cook: 2' a line", dict(longs=1),
            "leaning's lines with one item a line joined by ': ' (two tokens), at a place drawn at random"),
           ("leaning, two 'cook: 2' a line", dict(longs=2), "the same with two such items a line"),
           ("leaning, one long marker a line", dict(longs=1, anywhere=True),
            "one of each line's markers (any: verb, joiner, separator) written as ': ' (two tokens)"),
           ("leaning, one 'cook for 2' a line, odds 0.3 / 0.3", dict(odds=(0.3, 0.3), long_form=("for", " ")),
            "one item a line joined by ' for ' (two tokens, neither a short form), styled odds 0.3 / 0.3"),
           ("one 'cook: 2' a line, no style", dict(odds=(1.0, 0.4)),
            "every marker in its first form but one item a line joined by ': ': the alignment alone"))
ODDS = ((0.3, 0.4), (0.2, 0.4), (0.5, 0.4), (0.3, 0.6))   # other (P_PLAIN, P_MIXED_FIRST) of styled tried


def designs(n: int, header: int, tail: int) -> dict[str, tuple[list[Layout], int | None, str]]:
    """The record's designs on ``n`` answers each: name -> (layouts, sample seed or None for argmax, what it is)."""
    from tspd.tasks import leaning_shell, roster, styled
    st, ro, rng = styled.load_split("test", n), roster.load_split("test", n), random.Random(0)
    out = {"roster": ([roster_layout(p, header, tail) for p in ro], None, "the roster task (tiny-roster's)"),
           "styled": ([styled_layout(p, header, tail) for p in st], None, "the styled task (tiny-styled's)"),
           "styled, sampled": ([styled_layout(p, header, tail) for p in st], 0,
                               "the styled task, each commit drawn from its marginal (a calibrated sampler)")}
    for odds in ODDS:
        out[f"styled, odds {odds[0]} / {odds[1]}"] = ([styled_layout(p, header, tail, odds) for p in st], None,
                                                      "the styled task with other odds (P_PLAIN / P_MIXED_FIRST)")
    for name, kw, what in SHIFTED:
        out[name] = ([shifted_layout(p, header, tail, **kw) for p in st], None, what)
    out["leaning_shell"] = ([shell_layout(p, tail) for p in leaning_shell.load_split("test", n)], None,
                            "the leaning_shell task (its markers' styles; every cup certain)")
    out["phrasings"] = ([phrasings_layout(rng) for _ in range(n)], None,
                        "each line one of 32 phrasings (odds 0.9 ** rank), 28 binary tokens a function of it")
    return out


# --------------------------------------------------------------------------------------------------------------
# The record (python -m tspd oracle-dynamics) and its tables
# --------------------------------------------------------------------------------------------------------------
ORACLE = REPO_ROOT / "results" / "training" / "oracle" / "oracle.json"   # python -m tspd oracle-dynamics


def oracle_table(measured: dict[str, dict], path=ORACLE) -> list[dict]:
    """The oracle record's designs (what a perfectly learned model shows on each task's data) beside the trained
    models of ``measured`` (their dynamics records): a row each, the certain share and the four targets, value
    [95 % interval]."""
    record = read_json(path)
    rows = [(f"oracle: {name}", d["summary"], f"{record['n']} answers") for name, d in record["designs"].items()]
    rows += [(f"trained: {label}", r["summary"], f"{r['summary']['prompts']} problems") for label, r in measured.items()]
    cols = {"unsure": "right but unsure, %", "moved_middle": "moved, % of the middle", "flip_gap": "Fig. 1's gap, points",
            "rise_crossed": "rise >= 3 before 0.9, %"}
    out = [{"decoded": name, "n": n, "certain at first forward, %": interval_cell(s["certain_first"]),
            **{cols[k]: interval_cell(s[k]) for k in cols}} for name, s, n in rows]
    bound = {key: f">= {b:g}" for key, b, _ in TARGETS}
    return out + [{"decoded": "target", "n": "", "certain at first forward, %": "", **{cols[k]: bound[k] for k in cols}}]


def shifted_table(path=ORACLE) -> str:
    """The status page's table of the oracle's two-token-form designs (:data:`SHIFTED`): their moved traces and
    rises before 0.9 beside the ``leaning`` design's, against the dynamics targets."""
    from tspd.tasks import leaning
    record = read_json(path)
    bound = {key: b for key, b, _ in TARGETS}
    base = f"styled, odds {leaning.P_PLAIN} / {leaning.P_MIXED_FIRST}"
    names = [base] + [name for name, _, _ in SHIFTED if name in record["designs"]]
    rows = []
    for name in names:
        s = record["designs"][name]["summary"]
        both = all(s[k]["value"] >= bound[k] for k in ("moved_middle", "rise_crossed"))
        rows.append([f"`leaning` ({name})" if name == base else name, interval_cell(s["moved_middle"]),
                     interval_cell(s["rise_crossed"]), "yes" if both else "no"])
    header = [f"oracle design (n = {record['n']} answers each)", f"moved traces, % of the middle (target >= "
              f"{bound['moved_middle']:g})", f"rise before 0.9, % (target >= {bound['rise_crossed']:g})", "meets both"]
    return "\n".join(markdown.table(header, rows + [["record", f"`{shown(path)}`", "", ""]]))


__all__ = ["Group", "Aligned", "permutations", "sums", "styles", "Layout", "styled_layout", "roster_layout",
           "shifted_layout", "phrasings_layout", "decode", "measure", "ODDS", "SHIFTED", "designs", "ORACLE",
           "oracle_table", "shifted_table"]
