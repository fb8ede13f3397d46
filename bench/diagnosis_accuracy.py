#!/usr/bin/env python3
"""How often does `fslab diagnose` name the true mechanism? The recorded corpus, scored.

Every case of tests/data/corpus/manifest.json (one configuration of a real
recorded campaign, with the mechanism that truly explains its falloff, or
"none" when nothing falls off) is diagnosed from its export. Prints the
confusion table (true mechanism by row, the one ranked first by column) and,
per case, the first-to-second margin: how far ahead the first candidate is.

Held out: a case whose manifest entry lists `frames` is diagnosed a second
time with its true mechanism's rule taken out of the rule base. Its mechanism
is then outside the base, and the diagnosis must say so (no rule first) and
name one of those frames among the two that grew most: the honest unknown on
a real case, checked for every rule that has such a case.

    .venv/bin/python bench/diagnosis_accuracy.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.diagnose.diagnosis import ConfigDiagnosis, diagnose_campaign
from fslab.diagnose.mechanisms import load_rules
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"
NONE = "none"
UNKNOWN = "unknown"  # a mechanism the rule base does not hold: the honest unknown is right


@dataclass
class CaseResult:
    file: str
    config: str
    truth: str
    diagnosis: ConfigDiagnosis
    frames: tuple[str, ...] = ()  # for an unknown: frames its first grown frames must include
    held_out: str = ""  # the rule taken out of the base for this diagnosis

    @property
    def predicted(self) -> str:
        d = self.diagnosis
        if d.top is None and d.unknown is not None and d.falloff and d.falloff.has_falloff:
            return UNKNOWN
        return d.top or NONE

    @property
    def correct(self) -> bool:
        if self.truth != UNKNOWN:
            return self.predicted == self.truth
        grown = (
            {f.chain[-1] if f.chain else f.frame for f in self.diagnosis.unknown.frames[:2]}
            if self.diagnosis.unknown
            else set()
        )
        return self.predicted == UNKNOWN and bool(grown & set(self.frames))


def manifest(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    return json.loads((corpus / "manifest.json").read_text())["cases"]


def diagnose_file(
    path: Path, workdir: Path, held_out: str | None = None
) -> dict[str, ConfigDiagnosis]:
    """Import one export into a fresh store and diagnose every configuration (with the
    rule `held_out` taken out of the rule base)."""
    store = Store(workdir / f"{path.stem}-{held_out or 'all'}.db")
    campaign_id = import_campaign(store, json.loads(path.read_text()))
    rules = [r for r in load_rules() if r.id != held_out]
    return {d.config: d for d in diagnose_campaign(store, campaign_id, rules)}


def run_held_out(corpus: Path = CORPUS) -> list[CaseResult]:
    """Each case with `frames` and a rule for truth, diagnosed without that rule: the
    honest unknown is right (CaseResult's truth is UNKNOWN, held_out names the rule)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="fslab-held-out-") as tmp:
        for case in manifest(corpus):
            if not case.get("frames") or case["truth"] in (NONE, UNKNOWN):
                continue
            found = diagnose_file(corpus / case["file"], Path(tmp), held_out=case["truth"])
            diagnosis, frames = found[case["config"]], tuple(case["frames"])
            results.append(
                CaseResult(case["file"], case["config"], UNKNOWN, diagnosis, frames, case["truth"])
            )
    return results


def run_corpus(corpus: Path = CORPUS) -> list[CaseResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="fslab-corpus-") as tmp:
        cache: dict[str, dict[str, ConfigDiagnosis]] = {}
        for case in manifest(corpus):
            if case["file"] not in cache:
                cache[case["file"]] = diagnose_file(corpus / case["file"], Path(tmp))
            diagnosis = cache[case["file"]][case["config"]]
            frames = tuple(case.get("frames", ())) if case["truth"] == UNKNOWN else ()
            results.append(
                CaseResult(case["file"], case["config"], case["truth"], diagnosis, frames)
            )
    return results


def confusion_table(results: list[CaseResult]) -> list[str]:
    labels = sorted({r.truth for r in results} | {r.predicted for r in results})
    short = {label: label[:12] for label in labels}
    width = max(len(label) for label in labels) + 2
    head = "true \\ ranked first".ljust(width) + " ".join(f"{short[c]:>12}" for c in labels)
    lines = [head]
    for truth in labels:
        if not any(r.truth == truth for r in results):
            continue
        counts = [sum(1 for r in results if r.truth == truth and r.predicted == c) for c in labels]
        lines.append(truth.ljust(width) + " ".join(f"{n:>12}" for n in counts))
    return lines


def margin_lines(results: list[CaseResult]) -> list[str]:
    """Per case: the first and second candidates with their scores, and the margin."""
    lines = [f"{'case':<30} {'true':<22} {'first':<28} {'second':<28} {'margin':>6}"]
    for r in results:
        d = r.diagnosis
        ranked = d.judged if d.top else []
        first = f"{ranked[0].mechanism} {ranked[0].score:.2f}" if ranked else r.predicted
        second = f"{ranked[1].mechanism} {ranked[1].score:.2f}" if len(ranked) > 1 else "-"
        margin = f"{d.margin:.2f}" if d.margin is not None else "-"
        case = f"{r.file.removesuffix('.json')}:{r.config}"
        lines.append(f"{case:<30} {r.truth:<22} {first:<28} {second:<28} {margin:>6}")
    return lines


def unknown_lines(results: list[CaseResult]) -> list[str]:
    """Per case where the rules explain under 40% of the change: what grew that they do not
    own, the frame first, with its subsystem."""
    lines = []
    for r in results:
        unknown = r.diagnosis.unknown
        if unknown is None:
            continue
        case = f"{r.file.removesuffix('.json')}:{r.config}"
        lines.append(f"{case}: the rules explain {unknown.explained:.0%} of the change")
        for f in unknown.frames:
            place = f.subsystem or "unplaced"
            lines.append(f"    {f.kind:<6} {f.frame:<40} {f.good:>4.0%} -> {f.bad:>4.0%}  {place}")
    return lines or ["(none: the rules explain at least 40% of every change)"]


def held_out_lines(results: list[CaseResult]) -> list[str]:
    """Per held-out case: the rule taken out, what ranked first, the frames named."""
    lines = [f"{'case':<30} {'rule held out':<28} {'first':<10} frames that grew most"]
    for r in results:
        unknown = r.diagnosis.unknown
        grown = ", ".join(f.frame for f in unknown.frames[:2]) if unknown else "-"
        mark = "" if r.correct else "  WRONG"
        case = f"{r.file.removesuffix('.json')}:{r.config}"
        lines.append(f"{case:<30} {r.held_out:<28} {r.predicted:<10} {grown}{mark}")
    return lines


def main() -> int:
    results = run_corpus()
    held = run_held_out()
    right = sum(r.correct for r in results)
    print(f"diagnosis accuracy on the recorded corpus: {right}/{len(results)} ranked first right")
    print()
    print("\n".join(confusion_table(results)))
    print()
    print("\n".join(margin_lines(results)))
    print()
    print("unknowns (the honest unknown's frames):")
    print("\n".join(unknown_lines(results)))
    print()
    honest = sum(r.correct for r in held)
    print(f"held out (its rule taken out of the base): {honest}/{len(held)} honest unknowns")
    print("\n".join(held_out_lines(held)))
    return 0 if right == len(results) and honest == len(held) else 1


if __name__ == "__main__":
    sys.exit(main())
