"""The joint bound with a gate (issue 82's screen, 2026-12-08; the record: README.md beside this file).

Usage, from the repository root: python results/training/leaning-rules/gated.py MODEL N "KIND,NET,GATE,BOUND;..."
KIND "veto": the joint bound over the tokens the gate NET (controllers/NET.*) passes at GATE; "rider": every token
at >= 0.9 (Fast-dLLM's) and the joint bound over those and the ones the gate passes; "fastjoint": every token at
>= 0.9 and the joint bound over all (no gate).
"""
import sys, time, torch
from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.controllers.joint import joint_prefix
from tspd.decoding.controllers.base import Decision
from tspd.decoding.loop import generate
from tspd.models.loading import load_model, Checkpoint, task_spec
from tspd.tasks.generated import generated_task

torch.set_num_threads(2)
name, N = sys.argv[1], int(sys.argv[2])
model = load_model(name); task = generated_task(task_spec(Checkpoint.open(name))["name"])
probs = task.load_split("test", N)

class Veto(TSPD):
    def __init__(self, bound, kind="veto", **kw):
        super().__init__(**kw); self.bound, self.kind = bound, kind
    def decide(self, view):
        p = self.gate_probs(view)
        if self.kind == "veto":
            ok = view.masked & (p >= self.gate)
            return Decision(commit=joint_prefix(view.conf, ok, self.bound) & ok, within_masked=True)
        sure = view.masked & (view.conf >= 0.9)
        ok = view.masked & ((view.conf >= 0.9) | (p >= self.gate)) if self.kind == "rider" else view.masked
        return Decision(commit=(joint_prefix(view.conf, ok, self.bound) & ok) | sure, within_masked=True)

base = DecodeConfig.of(controller="tspd", ce=True).resolved(model)
for spec in sys.argv[3].split(";"):
    kind, net, g, b = spec.split(",")
    t = time.time(); right = fw = 0
    for s in range(0, N, 32):
        chunk = probs[s:s+32]
        out = generate(model, [task.prompt(p) for p in chunk], base, controller=Veto(float(b), kind, name=net, gate=float(g)))
        right += sum(bool(task.right(p, x)) for p, x in zip(chunk, out.texts)); fw += sum(out.nfe_per_sample)
    print(f"{name} {spec:22s} {right}/{N} fwd {fw/N:.2f} ({time.time()-t:.0f}s)", flush=True)
