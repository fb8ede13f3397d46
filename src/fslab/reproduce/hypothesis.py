"""The reporter's hypothesis, the levers it names, and patches the report carries.

A hypothesis is a sentence that says what the reporter thinks is wrong ("the
issue is the contention on rsv_conversion_wq", "Analysis shows ..."); fslab
keeps it as written and lists the names in it and in the code the reporter
quotes next to it: workqueues, locks, functions, macros, commits. A lever is
something the report names that fslab can vary to test the hypothesis (a
bigger journal, the free space, the CPU count).
"""

from __future__ import annotations

import re

from fslab.reproduce.facts import HypothesisFact, Lever, LeverFact, NameFact, PatchFact
from fslab.reproduce.text import ReportText
from fslab.spec.reported import NameKind

_CUE_RE = re.compile(
    r"\b(my analy[sz]\w*|analysis shows|the issue is|the problem is|the bottleneck|bottleneck"
    r"|caused by|introduced? by commit|bisected|i suspect|i think|i believe|root cause"
    r"|contention on|from my understanding|is to blame|blame[sd]?|the conclusion)\b",
    re.I,
)
_COMMIT_RE = re.compile(r"(?:commit\s*\{?\s*|\bcommit:\s*)([0-9a-f]{7,40})\b", re.I)
# Both start at a word's start only, and check their underscore after the match: starting
# inside a word, or `\w*_\w+`, backtracked over every position of a long word, quadratic
# in its length (a word of 70,000 letters took 18 s).
_IDENT_RE = re.compile(r"(?<![\w/.-])([A-Za-z_][A-Za-z0-9_]*)(\s*\()?")
_QUOTED_WQ_RE = re.compile(
    r"""["'“]?(?<![a-z0-9-])([a-z0-9]+(?:-[a-z0-9]+)+)["'”]?\s+(?:work ?queue|wq)\b""", re.I
)
_C_LINE_RE = re.compile(r"^\s*(#define\b|if\s*\(|[A-Za-z_][\w>.-]*\s*=.*;|\w+\(.*\)\s*;)")
_LEVERS: tuple[tuple[str, Lever], ...] = (
    (
        r"\b(increase|bigger|larger|grow)\w*\s+(the\s+)?journal(\s+size)?|journal size",
        "bigger-journal",
    ),
    (
        r"FREECLUSTERS_WATERMARK|free[_ ]clusters|free space|nearly full|near(ly)? full",
        "free-space",
    ),
    (r"\b(number of (cores|cpus)|core count|cpu count|nr_cpu_ids|scale with core)", "cpu-count"),
)
_SKIP_NAMES = {"time_based", "group_reporting"}


def find_hypotheses(report: ReportText) -> list[HypothesisFact]:
    facts: list[HypothesisFact] = []
    covered = 0
    for number, line in report.numbered():
        if (
            number <= covered
            or not _CUE_RE.search(line)
            or line.lstrip().startswith(("+", "-", "@@"))
        ):
            continue
        paragraph, covered = _paragraph(report, number)
        statement = " ".join(s for s in _sentences(paragraph) if _CUE_RE.search(s))
        unique: dict[str, NameFact] = {}
        for name in [*_names(statement), *_code_names(report, number)]:
            unique.setdefault(name.name, name)
        facts.append(HypothesisFact(statement, report.line(number), tuple(unique.values())))
    return facts


def _paragraph(report: ReportText, number: int) -> tuple[str, int]:
    """The cue line and the lines its sentence wraps onto, and the last line taken."""
    parts = [report.lines[number - 1].strip()]
    for text in report.lines[number : number + 4]:
        if not text.strip() or re.search(r"[.?!:]\s*$", parts[-1]) or _C_LINE_RE.match(text):
            break
        parts.append(text.strip())
    return " ".join(parts), number + len(parts) - 1


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+(?=[A-Z])", text) if s.strip()]


def _names(text: str) -> list[NameFact]:
    names: list[NameFact] = []
    for match in _COMMIT_RE.finditer(text):
        names.append(NameFact("commit", match.group(1)))
    for match in _QUOTED_WQ_RE.finditer(text):
        names.append(NameFact("workqueue", match.group(1)))
    for match in _IDENT_RE.finditer(text):
        name = match.group(1)
        if "_" not in name[1:-1] or name in _SKIP_NAMES or re.fullmatch(r"[0-9a-f_]+", name):
            continue
        names.append(NameFact(_kind(name, bool(match.group(2)), text), name))
    unique: dict[str, NameFact] = {}
    for name in names:
        unique.setdefault(name.name, name)
    return list(unique.values())


def _kind(name: str, called: bool, text: str) -> NameKind:
    lowered = name.lower()
    if lowered.endswith(("_wq", "_workqueue")) or re.search(
        re.escape(name) + r"\s+work ?queue", text, re.I
    ):
        return "workqueue"
    if re.search(r"(?:^|_)(lock|mutex|sem|rwsem|spinlock)$", lowered):
        return "lock"
    if name.isupper():
        return "macro"
    if called:
        return "function"
    return "name"


def _code_names(report: ReportText, number: int) -> list[NameFact]:
    """Names in the C code the reporter quotes within a few lines after the hypothesis."""
    names: list[NameFact] = []
    for text in report.lines[number : number + 12]:
        if _C_LINE_RE.match(text) or text.strip().endswith(("<", ") {", "*/")):
            for name in _names(text):
                if name.kind in ("function", "macro", "lock", "workqueue"):
                    names.append(name)
    return names


def find_levers(report: ReportText) -> list[LeverFact]:
    levers: list[LeverFact] = []
    seen: set[str] = set()
    for number, line in report.numbered():
        if line.lstrip().startswith(("+", "-", "@@", "|")):
            continue
        for pattern, lever in _LEVERS:
            match = re.search(pattern, line, re.I)
            if match and lever not in seen:
                seen.add(lever)
                levers.append(LeverFact(lever, match.group(0), report.line(number)))
    return levers


def find_patches(report: ReportText) -> list[PatchFact]:
    patches: list[PatchFact] = []
    subject = ""
    for number, line in report.numbered():
        if line.startswith("Subject:"):
            subject = line.removeprefix("Subject:").strip()
        match = re.match(r"^diff --git a/(\S+)", line)
        if match:
            if (
                patches
                and patches[-1].subject == subject
                and number - patches[-1].source.number < 200
            ):
                last = patches[-1]
                patches[-1] = PatchFact((*last.files, match.group(1)), last.subject, last.source)
            else:
                patches.append(PatchFact((match.group(1),), subject, report.line(number)))
    return patches
