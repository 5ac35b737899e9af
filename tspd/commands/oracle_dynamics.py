"""``python -m tspd oracle-dynamics``: Section 3's measures on the exact posterior of our tasks' generative processes
(:mod:`tspd.measures.oracle`): the middle a model that had learned the data perfectly would show, kept in one record
beside the trained models' (``results/training/oracle/oracle.json`` by default)."""
from __future__ import annotations

import argparse

from tspd.measures.dynamics import DynamicsConfig, targets
from tspd.measures.oracle import designs, measure
from tspd.provenance import git_revision, invoked
from tspd.tasks import styled
from tspd.records.files import write_json
from tspd.validate import UsageError

FIRST_ROWS = 5   # per design, the rows kept for the test that reruns them


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=100, help="answers per design (the tasks' first test problems)")
    p.add_argument("--tokenizer-of", default="tiny-styled",
                   help="a checkpoint whose tokenizer counts the template's tokens (the roster tasks' BPE)")
    p.add_argument("--out", default="results/training/oracle/oracle.json", help="the record's JSON")


def main(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from tspd.models.loading import load_tokenizer
    if args.n < 1:
        raise UsageError(f"--n must be >= 1, got {args.n}")
    tok = load_tokenizer(args.tokenizer_of)
    header, tail = len(tok.encode("On day 1 they")), len(tok.encode("#### 5"))
    cfg = DynamicsConfig(n=args.n)
    record = {"command": invoked("oracle-dynamics"), "git": git_revision() or "unknown", "device": "cpu (no model)",
              "n": args.n, "tokenizer_of": args.tokenizer_of, "header": header, "tail": tail, "designs": {}}
    for name, (layouts, seed, what) in tqdm(designs(args.n, header, tail).items(), desc="oracle designs"):
        got = measure(layouts, styled.GEN_LENGTH, styled.BLOCK_LENGTH, cfg, seed)   # roster's window too
        record["designs"][name] = {"what": what, "sample_seed": seed, "summary": got["summary"],
                                   "targets": targets(got["summary"]), "first_rows": got["rows"][:FIRST_ROWS]}
        line = ", ".join(f"{t['target']} {t['value']:.1f}" for t in record["designs"][name]["targets"])
        print(f"{name}: certain {got['summary']['certain_first']['value']:.1f}, {line}", flush=True)
    write_json(args.out, record)
    print(f"wrote {args.out}")
    return 0
