"""Reading and writing a record's JSON the one way every record module does, and the package's one reader
(and appender) of JSON-lines files."""
from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path
from typing import Callable

from tspd.provenance import REPO_ROOT


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())


def write_json(path: str | Path, data, indent: int = 1) -> Path:
    """``data`` as indented JSON and a final newline (the layout of every committed record)."""
    return write_text_atomic(path, json.dumps(data, indent=indent) + "\n")


def write_rows_json(path: str | Path, record: dict) -> Path:
    """A record with per-problem ``rows``, written atomically: its head indented, each row on one line (a record
    written batch by batch stays readable in a diff, and a kill leaves the previous batch's file)."""
    head = {k: v for k, v in record.items() if k != "rows"}
    rows = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in record.get("rows", []))
    return write_text_atomic(path, json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + rows + "\n ]\n}\n")


def write_atomic(path: str | Path, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` into a temporary file beside ``path``, then moved onto it: a reader (another test process, a
    notebook) sees the old file or the new one, never half of one, and an interrupted run leaves no torn file. A
    missing parent directory is made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    tmp.replace(path)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """``text`` into ``path`` by :func:`write_atomic`."""
    return write_atomic(path, lambda tmp: tmp.write_text(text))


def shown(path: str | Path) -> Path:
    """``path`` relative to the repository where it lies inside it (as pages cite a record)."""
    path = Path(path)
    return path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path


def read_log(path: str | Path) -> list[dict]:
    """Rows of a ``train-lm`` log (``train_log.csv`` / ``eval_log.csv``) as floats (None for an empty cell: a probe
    with no instance, or a column an older run did not write)."""
    with open(path, newline="") as f:
        return [{k: float(v) if v not in ("", None) else None for k, v in row.items()} for row in csv.DictReader(f)]


def read_jsonl(path: str | Path, *, partial_ok: bool = False, missing_ok: bool = False, error=ValueError,
               bad: str = "not valid JSON ({msg})", check=None) -> list:
    """The rows of a JSON-lines file (``.jsonl``, or gzipped ``.jsonl.gz``), the one reader of the package.

    Blank lines are skipped; a line that is not JSON is ``error(f"{path}:{line}: {bad}")`` (one line, ``{msg}``
    the parser's complaint), and so is a row for which ``check(row)`` returns a complaint. ``missing_ok``: no
    file reads as no rows. ``partial_ok``: a last line without its newline (a write cut by a kill) is dropped
    and cut from the file, so the next append starts on a line of its own; without it such a line is read
    like any other (a hand-written file may lack its final newline)."""
    path = Path(path)
    if missing_ok and not path.exists():
        return []
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    elif partial_ok and data and not data.endswith(b"\n"):
        end = data.rfind(b"\n") + 1
        with open(path, "r+b") as f:
            f.truncate(end)
        data = data[:end]
    rows = []
    for i, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise error(f"{path}:{i}: {bad.format(msg=e.msg)}") from None
        complaint = check(row) if check else None
        if complaint:
            raise error(f"{path}:{i}: {complaint}")
        rows.append(row)
    return rows


def append_jsonl(path: str | Path, rows, *, fsync: bool = False, ensure_ascii: bool = False) -> None:
    """``rows`` as complete lines at the end of the JSON-lines file ``path`` (made with its folder if new);
    ``fsync``: flushed to the disk before returning."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in rows)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def measure_by_batch(path: str | Path, meta: dict, same: tuple[str, ...], problems: list, batch: int, measure,
                     summarize, desc: str, log=print) -> dict:
    """A per-problem record at ``path`` (``meta`` + ``rows`` + ``summarize(rows)``) measured ``batch`` problems at a
    time by ``measure(chunk) -> rows`` and written after each batch (:func:`write_rows_json`), so an interrupted run
    resumes: a stored record whose ``same`` keys equal ``meta``'s keeps its rows (complete: returned as stored, its
    provenance untouched; partial: the revision and device of the rows added are appended to its own, and the command
    is the one that completed it, which asks for every row); one whose
    ``same`` keys differ is measured again, and the log says which changed."""
    from tqdm.auto import tqdm
    path, rows = Path(path), []
    old = read_json(path) if path.is_file() else None
    if old:
        changed = [k for k in same if old.get(k) != meta[k]]
        if changed:
            log(f"{shown(path)}: its {len(old['rows'])} stored rows are measured again ({', '.join(changed)} changed)")
        elif len(old["rows"]) >= len(problems):
            return old
        else:
            rows = old["rows"]   # the command stays the new one: it asks for every row (a record extended to more)
            meta = dict(meta)
            for key, added in (("git", "rows added at"), ("device", "rows added on")):
                meta[key] = old[key] if old[key] == meta[key] else f"{old[key]}; {added} {meta[key]}"
    record = None                                 # (a summary of no rows may not exist: never asked for one)
    bar = tqdm(total=len(problems), initial=len(rows), desc=desc, unit="problem")
    for i in range(len(rows), len(problems), batch):
        chunk = problems[i:i + batch]
        rows = rows + measure(chunk)
        record = {**meta, "rows": rows, **summarize(rows)}
        write_rows_json(path, record)
        bar.update(len(chunk))
    bar.close()
    return record if record is not None else {**meta, "rows": rows, **summarize(rows)}
