"""The spec's [reported] table: what a bug report said, kept with the experiment.

`fslab reproduce` reads a report and writes a spec; the facts it read (the
reporter's figures, the reporter's hypothesis, what this host cannot
reproduce, what fslab had to assume) go into [reported]. The runner stores the
validated spec with every campaign (campaigns.spec_json), so whatever answers
the report later (a reply draft) finds them beside the results, each with the
report line it came from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

NameKind = Literal["workqueue", "lock", "function", "commit", "macro", "name"]
Qualifier = Literal["", "less than", "more than", "about"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReportedFigure(_Strict):
    """A figure the reporter measured: the expected result of the reproduction."""

    metric: str = ""  # the fslab metric it corresponds to (fio.write.iops, dd.bw_bytes_s), or ""
    value: float  # in that metric's unit: IO/s, B/s, a share 0..1, or a percent change
    unit: str = ""  # "IO/s", "B/s", "share", "%"
    text: str  # as the report wrote it: "22K", "602 kB/s"
    qualifier: Qualifier = ""
    context: str = ""  # what the report says it measured it on: "xfs", "v6.2 (patched)"
    config: str = ""  # the configuration of this spec it corresponds to, "" if none
    kernel: str = ""  # the kernel the report ran it on, "" if not said
    line: int


class ReportedName(_Strict):
    """A thing the reporter's hypothesis names: a workqueue, a lock, a function, a commit."""

    kind: NameKind
    name: str


class ReportedHypothesis(_Strict):
    """The reporter's own explanation, as written, with the names it blames."""

    statement: str
    names: list[ReportedName] = []
    line: int


class ReportedFact(_Strict):
    """A fact of the report this host cannot reproduce (yet), and why."""

    fact: str  # "kernel", "cpus", "memory", "device limit", "patch"
    value: str
    reason: str
    line: int


class ReportedQuestion(_Strict):
    """Something the report leaves unknown or ambiguous, and what fslab assumed."""

    item: str
    question: str
    assumed: str
    line: int = 0  # 0: the report says nothing about it


class ReportedSpec(_Strict):
    """Everything fslab read from the report that the runner does not act on."""

    source: str = ""  # the report's file name as given ("-" for stdin)
    title: str = ""
    workload: str = ""  # the workload as the report gave it
    workload_line: int = 0
    kernels: list[str] = []
    cpus: int | None = None
    memory: str = ""
    device: str = ""
    # the reporter's own value of each axis fslab swept around it (the top of a numjobs
    # ladder, "" for a fresh filesystem): where the reporter's figures are matched
    point: dict[str, int | str] = {}
    expected: list[ReportedFigure] = []
    hypotheses: list[ReportedHypothesis] = []
    unreproduced: list[ReportedFact] = []
    questions: list[ReportedQuestion] = []
