"""Decision rules on tiny-leaning's first N test problems (issue 82's exploration, 2026-12-08; the record: README.md).

Usage, from the repository root: python results/training/leaning-rules/explore.py N "RULE;RULE;..." [RULE]
A RULE is a kind and its settings, e.g. "prodconf,g=0.4" or "cap,cap=1,g=0.5" or "fast,ce"; the optional third
argument prints the wrong answers of one rule on the first 32 problems beside Fast-dLLM 0.9's. The kinds are the
branches of Rule.decide; "prodconf" became tspd.decoding.controllers.joint.
"""
import sys, time, torch
from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.controllers.base import Decision, valid_scores, rank_in_row
from tspd.decoding.loop import generate
from tspd.models.loading import load_model
from tspd.tasks.generated import generated_task

torch.set_num_threads(2)
N = int(sys.argv[1]); rules = sys.argv[2].split(";")
model = load_model("tiny-leaning"); task = generated_task("leaning")
probs = task.load_split("test", N)

class Rule(TSPD):
    def __init__(self, kind, thr=0.9, cap=1, g=0.5, name="tspd-own", hold=1, cmin=0.3):
        super().__init__(name=name, gate=min(g, 0.99)); self.kind, self.thr, self.cap = kind, thr, cap
        self.hold, self.cmin, self.g = hold, cmin, g
    def decide(self, view):
        p = self.gate_probs(view); m = view.masked
        best = valid_scores(view.conf, m)
        fast = (best >= self.thr).scatter_(-1, best.argmax(-1, keepdim=True), True) & m
        if self.kind == "cap":      # Fast's commits + at most cap more, highest gate prob >= g
            extra = m & ~fast & (p >= self.gate)
            extra &= rank_in_row(p, extra) < self.cap
            return Decision(commit=fast | extra, within_masked=True)
        if self.kind == "prod":     # Fast's commits + longest prefix by gate prob with prod >= g
            cand = m & ~fast
            s = valid_scores(p, cand)
            sp, order = s.sort(-1, descending=True)
            cum = torch.where(sp > 0, sp, torch.zeros_like(sp)).clamp_min(1e-12).log().cumsum(-1)
            ok = (cum >= torch.log(torch.tensor(self.gate))) & (sp > float("-inf"))
            ok = ok.long().cumprod(-1).bool()
            extra = torch.zeros_like(m).scatter_(-1, order, ok)
            return Decision(commit=fast | (extra & cand), within_masked=True)
        elig = m
        if self.kind == "prodconf":
            p = view.conf
        if self.kind == "prodveto":
            elig = m & (p >= 0.5); p = view.conf
        if self.kind == "prodboost":
            p = torch.maximum(p, view.conf)
        if self.kind in ("prodonly", "prodconf", "prodveto", "prodboost"):
            s = valid_scores(p, elig)
            sp, order = s.sort(-1, descending=True)
            cum = sp.clamp_min(1e-12).log().cumsum(-1)
            ok = (cum >= torch.log(torch.tensor(self.gate))) & (sp > float("-inf"))
            ok = ok.long().cumprod(-1).bool()
            return Decision(commit=torch.zeros_like(m).scatter_(-1, order, ok) & m, within_masked=True)
        if self.kind == "eb":      # EB-Sampler: lowest-entropy first while sum H - max H <= gamma (= g)
            H = valid_scores(-view.entropy.float(), m)
            sh, order = H.sort(-1, descending=True)      # -H descending = H ascending
            sh = -sh
            fin = torch.isfinite(sh)
            cum = torch.where(fin, sh, torch.zeros_like(sh)).cumsum(-1)
            mx = torch.where(fin, sh, torch.zeros_like(sh)).cummax(-1).values
            ok = ((cum - mx) <= self.g) & fin
            ok = ok.long().cumprod(-1).bool()
            return Decision(commit=torch.zeros_like(m).scatter_(-1, order, ok) & m, within_masked=True)
        if self.kind in ("capc", "hand"):   # Fast + at most cap more, ranked by conf, among p >= g (capc) / stable (hand)
            ok = (p >= self.gate) if self.kind == "capc" else (self.run >= self.hold) & (view.conf >= self.cmin)
            extra = m & ~fast & ok
            extra &= rank_in_row(view.conf, extra) < self.cap
            return Decision(commit=fast | extra, within_masked=True)
        raise ValueError(self.kind)
    def start_block(self, block):
        super().start_block(block); self.prev = None
    def gate_probs(self, view):
        if getattr(self, "prev", None) is None or self.prev.shape != view.x0.shape:
            self.run = torch.zeros_like(view.x0)
        else:
            self.run = torch.where(view.x0 == self.prev, self.run + 1, torch.zeros_like(self.run))
        self.prev = view.x0.clone()
        return super().gate_probs(view)

def run(label, dec, ctrl=None):
    t = time.time(); right = fw = 0
    for s in range(0, N, 32):
        chunk = probs[s:s+32]
        out = generate(model, [task.prompt(p) for p in chunk], dec, controller=ctrl() if ctrl else None)
        right += sum(bool(task.right(p, x)) for p, x in zip(chunk, out.texts)); fw += sum(out.nfe_per_sample)
    print(f"{label:40s} {right}/{N} fwd {fw/N:.1f}  ({time.time()-t:.0f}s)", flush=True)
    return fw / N

base = DecodeConfig.of(controller="tspd", ce=True).resolved(model)
for r in filter(None, rules):
    kind, *a = r.split(",")
    if kind == "fast":
        run(r, DecodeConfig.of(controller="fast-dllm", ce=a[0] == "ce", threshold=0.9).resolved(model))
        continue
    kw = dict(x.split("=") for x in a)
    ce = kw.pop("ce", "1") == "1"
    kw = {k: (int(v) if k in ("cap", "hold") else (v if k == "name" else float(v))) for k, v in kw.items()}
    run(r, base.replace(ce=ce), lambda: Rule(kind, **kw))

if len(sys.argv) > 3:
    kind, *a = sys.argv[3].split(",")
    kw = dict(x.split("=") for x in a); kw = {k: float(v) if k == "g" else v for k, v in kw.items()}
    out = generate(model, [task.prompt(p) for p in probs[:32]], base, controller=Rule(kind, **kw))
    ref = generate(model, [task.prompt(p) for p in probs[:32]], DecodeConfig.of(controller="fast-dllm", ce=True, threshold=0.9).resolved(model))
    for p, x, y in zip(probs, out.texts, ref.texts):
        if not task.right(p, x):
            print("Q:", task.prompt(p)[-300:]); print("RULE:", x[:400]); print("FAST:", y[:400]); print()
