"""A campaign's report as data: the types the text, HTML and JSON renderers read.

Why one model: the three formats must never disagree. Every number, every
choice (which point is the worst, which configuration is the baseline) and
every "missing, because ..." note is decided when the tree is built
(report.model.build_report); renderers only lay it out. Each section carries
`notes`: what it could not show and why (failed points, no sweep, collectors
off, dd without latency histograms), so a report never crashes on a thin
campaign and never stays silent about a gap.

The types live apart from their assembly so a renderer imports the shapes it
reads without the store and analysis the builders need. JSON follows the
fields (report.json_report): a field marked `metadata={"json": False}` stays
out of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.campaign.plotted import BarGroup, MetricPair, WchanRow, WorkqueueRow
from fslab.analyze.campaign.summary import SetAsideRun
from fslab.analyze.curve.point_profile import ProfileKind
from fslab.analyze.curve.scaling import CurveFit
from fslab.analyze.history.series import Series
from fslab.analyze.versus.comparisons import Comparison
from fslab.base.hostfacts import HostFacts
from fslab.base.timing import CampaignTiming
from fslab.base.vocab import point_label
from fslab.diagnose.diagnosis import ConfigDiagnosis
from fslab.stacks.profile import DiffRow, HotChain, Profile
from fslab.store.facts import CampaignOverrides, DeviceFacts
from fslab.workload.base import WorkloadSpec


@dataclass
class PointRef:
    """One stored point, as every section names it."""

    point_id: int
    seq: int
    config: str
    sweep: dict[str, Any]
    repeat: int
    role: str  # clean | evidence | inline
    headline: float | None

    @property
    def sweep_label(self) -> str:
        return point_label(self.sweep)

    @property
    def label(self) -> str:
        return f"{self.config} {self.sweep_label}" if self.sweep else self.config


@dataclass
class CampaignInfo:
    id: int
    name: str
    description: str
    status: str
    started_at: str
    ended_at: str | None
    fslab_version: str
    overrides: CampaignOverrides
    points_total: int
    points_ok: int
    points_failed: int
    points_pending: int
    points_evidence: int  # of points_total: evidence runs
    collect_mode: str  # separate | inline | off (fslab.base.roles)
    collect_text: str  # what that mode means for this campaign's figures
    timing: CampaignTiming | None  # where the wall time went (None: not recorded)


@dataclass
class FilesystemSetup:
    """One configuration as specified and as it was really built."""

    config: str
    fs_type: str
    description: str
    mkfs_options: list[str]
    mount_options: list[str]
    mkfs_argv: list[str] | None  # the mkfs command as run (effective)
    mount_argv: list[str] | None
    mount_options_effective: str | None  # as the kernel reported them after mount
    journal_bytes: int | None  # ext4 journal or XFS log
    journal_kind: str  # "journal" | "log"
    block_size_bytes: int | None
    features: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass
class Setup:
    host: HostFacts
    device: DeviceFacts | None
    device_text: str
    filesystems: list[FilesystemSetup]
    workload: WorkloadSpec  # as the spec gave it (JSON: the fields it set)
    workload_text: list[str]
    sweep: dict[str, list[Any]]
    run: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    guests: list[str] = field(default_factory=list)  # analyze.versus.guests labels; [] on the host


@dataclass
class Step:
    """One line of the reproduction recipe: a comment, a command, or both."""

    comment: str | None
    argv: list[str] | None
    returncode: int | None = None


@dataclass
class Reproduce:
    point: PointRef | None
    why: str
    steps: list[Step]
    notes: list[str] = field(default_factory=list)


@dataclass
class ResultRow:
    config: str
    sweep: dict[str, Any]
    n_ok: int
    n_failed: int
    median: float | None
    minimum: float | None
    maximum: float | None
    values: list[float]
    latency_p99: float | None
    percentiles: dict[str, float | None]  # median over repetitions of each percentile
    evidence: float | None  # the evidence run's headline
    perturbation_pct: float | None  # evidence run vs clean median, signed %
    evidence_failed: bool
    free_bytes_start: float | None
    watermark_bytes: float | None
    below_watermark: bool | None
    filled: bool


@dataclass
class FailedPoint:
    seq: int
    config: str
    sweep: dict[str, Any]
    error: str
    stderr_tail: list[str]


@dataclass
class Results:
    headline: str | None
    headline_label: str
    latency: str | None
    latency_label: str
    latency_family: str | None
    axes: list[str]
    rows: list[ResultRow]
    failures: list[FailedPoint]
    pending: int
    watermark_relevant: bool
    notes: list[str] = field(default_factory=list)
    warmups: list[SetAsideRun] = field(default_factory=list)  # discarded first runs
    outliers: list[SetAsideRun] = field(default_factory=list)  # runs far from their point's
    # the sentences about them, as every report prints them
    set_aside: list[str] = field(default_factory=list)


@dataclass
class Scaling:
    axis: str | None
    metric: str | None
    curves: list[CurveFit]
    moves: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class LatencyCurve:
    """Percentiles (median over repetitions) along the concurrency axis."""

    config: str
    rest: dict[str, Any]
    axis: str
    n: list[float]
    percentiles: dict[str, list[float | None]]


@dataclass
class LatencyCdf:
    """The latency distribution of one point: merged json+ bins of all its jobs."""

    role: str  # "best" | "worst"
    point: PointRef
    family: str
    samples: int
    values_ns: list[float]
    cumulative: list[float]  # fraction of samples <= values_ns[i]


@dataclass
class Latency:
    family: str | None
    label: str
    curves: list[LatencyCurve]
    cdfs: list[LatencyCdf]
    notes: list[str] = field(default_factory=list)


@dataclass
class Comparisons:
    baseline: str | None
    metrics: list[str]
    items: list[Comparison]
    bars: list[BarGroup]
    bar_metric: str | None
    min_reps: int
    notes: list[str] = field(default_factory=list)


@dataclass
class ProfileSection:
    """One kind of profile (on-CPU or off-CPU) at the worst point."""

    kind: ProfileKind
    title: str
    point: PointRef | None
    samples: int
    idle_share: float | None
    chains: list[HotChain]
    chains_text: str
    profile: Profile | None = field(default=None, metadata={"json": False})
    best_profile: Profile | None = field(default=None, metadata={"json": False})
    diff_rows: list[DiffRow] = field(default_factory=list)  # busy shares, best -> worst
    notes: list[str] = field(default_factory=list)


@dataclass
class EvidenceRun:
    """Where a focus point's collector evidence is read, and what the instruments cost."""

    point: PointRef | None  # the evidence run (or inline repetition); None: none ran
    statement: str  # "evidence run: 7.4K IOPS vs 9.1K clean, perturbation -19%"
    perturbation_pct: float | None  # evidence vs clean median, signed %


@dataclass
class Profiles:
    worst: PointRef | None
    best: PointRef | None
    why: str
    oncpu: ProfileSection
    offcpu: ProfileSection
    worst_evidence: EvidenceRun | None = None
    best_evidence: EvidenceRun | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Contention:
    best: PointRef | None
    worst: PointRef | None
    workqueues: list[WorkqueueRow]
    jbd2: list[MetricPair]
    wchans: list[WchanRow]
    blocked_threads_worst: float | None
    worst_evidence: EvidenceRun | None = None
    best_evidence: EvidenceRun | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class DiagnosisEntry:
    config: str
    lines: list[str]
    data: dict[str, Any]
    focus: bool  # the configuration the Profiles and Contention sections show
    diagnosis: ConfigDiagnosis | None = field(default=None, metadata={"json": False})


@dataclass
class Diagnosis:
    available: bool
    entries: list[DiagnosisEntry]
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    campaign: CampaignInfo
    setup: Setup
    reproduce: Reproduce
    results: Results
    scaling: Scaling
    latency: Latency
    comparisons: Comparisons
    profiles: Profiles
    contention: Contention
    diagnosis: Diagnosis
    series: Series | None = None  # the campaigns of this name over time (None: only this one)
