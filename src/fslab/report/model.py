"""A campaign's report as data, built once and read by the text, HTML and JSON renderers.

Why one model: the three formats must never disagree. Every number, every
choice (which point is the worst, which configuration is the baseline) and
every "missing, because ..." note is decided here; renderers only lay it out.
Each section carries `notes`: what it could not show and why (failed
points, no sweep, collectors off, dd without latency histograms), so a
report never crashes on a thin campaign and never stays silent about a gap.

The focus points come from analyze.falloff, the one rule for best and worst
point: the configuration with the deepest falloff, its worst point and its
best point, so "best vs worst" contrasts one configuration across its sweep
(what changed as it fell off), not two filesystems, and names the same
points as the diagnosis.

Headline figures come from the headline repetitions (clean or inline); the
collector evidence shown for a focus point (profiles, contention) comes from
its evidence run (`CampaignData.evidence_row`), and every report states how
much that run was perturbed by the instruments.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.plotted import (
    BarGroup,
    MetricPair,
    WchanRow,
    WorkqueueRow,
    headline_bars,
    jbd2_pairs,
    latency_distribution,
    wchan_rows,
    workqueue_rows,
)
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.analyze.campaign.summary import (
    SetAsideRun,
    SummaryRow,
    describe_outliers,
    describe_warmups,
    outlier_runs,
    summarize,
    warmup_runs,
    watermark_relevant,
)
from fslab.analyze.curve.falloff import campaign_falloffs, focus_config
from fslab.analyze.curve.point_profile import NoProfile, ProfileKind, load_profile
from fslab.analyze.curve.scaling import CurveFit, ScaleReport, fit_campaign
from fslab.analyze.history.series import Series, build_series, select_campaigns
from fslab.analyze.versus.comparisons import Comparison, config_comparisons, with_profile_shares
from fslab.analyze.versus.guests import TCG_CAVEAT, guest_label, runs_under_tcg
from fslab.base.errors import FslabError
from fslab.base.hostfacts import HostFacts
from fslab.base.roles import mode_of_roles
from fslab.base.timing import CampaignTiming
from fslab.base.units import format_bytes
from fslab.base.vocab import PERCENTILES, metric_label, point_key, point_label
from fslab.collect.registry import ALL_COLLECTORS
from fslab.diagnose.diagnosis import ConfigDiagnosis, diagnose_campaign
from fslab.report.diagnosis_text import describe_diagnosis
from fslab.spec.model import FilesystemSpec
from fslab.stacks.profile import DiffRow, HotChain, Profile, diff
from fslab.store.db import PointRow, Store
from fslab.store.facts import (
    CampaignOverrides,
    DeviceFacts,
    DeviceLimitFacts,
    FilesystemFacts,
    PointFacts,
)
from fslab.target.limits import DeviceLimits, throttle_file

PROFILE_KINDS: tuple[ProfileKind, ...] = ("oncpu", "offcpu")
CHAINS = 3  # perf-style chains are 15-20 lines each: the top three tell the story
DIFF_ROWS = 12
COLLECTOR_FAMILIES = frozenset().union(*(c.families() for c in ALL_COLLECTORS.values()))


# ------------------------------------------------------------------ the tree


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
    workload: dict[str, Any]
    workload_text: list[str]
    sweep: dict[str, list[Any]]
    run: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    guests: list[str] = field(default_factory=list)  # analyze.guests labels; [] on the host


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


# ------------------------------------------------------------------ building


def build_report(store: Store, campaign_id: int) -> Report:
    """Everything the renderers show, read from the store once."""
    data = load_campaign(store, campaign_id)
    worst, best = focus_points(data)
    evidence = (evidence_run(data, worst), evidence_run(data, best))
    return Report(
        campaign=_campaign_info(data),
        setup=_setup(store, data),
        reproduce=_reproduce(store, data, worst),
        results=_results(data),
        scaling=_scaling(data),
        latency=_latency(store, data, worst, best),
        comparisons=_comparisons(data),
        profiles=_profiles(store, data, worst, best, evidence),
        contention=_contention(store, data, worst, best, evidence),
        diagnosis=_diagnosis(store, data, worst),
        series=_series(store, data),
    )


def _series(store: Store, data: CampaignData) -> Series | None:
    """Every stored campaign of this one's name, with change points; None if it is alone."""
    campaigns = select_campaigns(store, name=data.campaign.name)
    if len(campaigns) < 2:
        return None
    return build_series(store, campaigns, data.campaign.name)


def _ref(data: CampaignData, point: PointRow) -> PointRef:
    headline = data.metrics.get(point.id, {}).get(data.headline) if data.headline else None
    return PointRef(
        point.id, point.seq, point.config, dict(point.sweep), point.repeat, point.role, headline
    )


def evidence_run(data: CampaignData, ref: PointRef | None) -> EvidenceRun | None:
    """The run a focus point's evidence is read from, and the sentence that says so."""
    if ref is None:
        return None
    key = point_key(ref.sweep)
    row = data.evidence_row(ref.config, key)
    perturbation = data.perturbation(ref.config, key)
    pct = perturbation.pct if perturbation else None
    if row is not None and row.role == "evidence":
        statement = (
            perturbation.describe()
            if perturbation
            else "evidence run (no clean repetition succeeded to compare it with)"
        )
        return EvidenceRun(_ref(data, row), statement, pct)
    if row is not None:
        return EvidenceRun(
            _ref(data, row),
            f"inline: the collectors ran in every repetition, so the headline was measured "
            f"under them (perturbation not measured); evidence from repetition {row.repeat}, "
            "the one closest to the median",
            None,
        )
    failed = [
        p
        for p in data.points
        if p.role == "evidence"
        and p.status == "failed"
        and p.config == ref.config
        and point_key(p.sweep) == key
    ]
    if failed:
        return EvidenceRun(None, f"the evidence run failed: {failed[-1].error}", None)
    return EvidenceRun(None, "no instrumented run at this point (collectors off)", None)


def focus_points(data: CampaignData) -> tuple[PointRef | None, PointRef | None]:
    """(worst, best) of the focus configuration, as analyze.falloff decides them.

    The focus configuration is the one with the deepest falloff (else the
    first); its worst and best sweep points are the falloff model's, each
    shown through the headline repetition that stands for it
    (CampaignData.typical_row), so every section names the same points as the
    diagnosis; their collector evidence is their sweep point's evidence run.
    """
    focus = focus_config(campaign_falloffs(data))
    if focus is None:
        return None, None
    worst = data.typical_row(focus.config, focus.worst.key)
    best = data.typical_row(focus.config, focus.best.key) if focus.best != focus.worst else None
    return (_ref(data, worst) if worst else None), (_ref(data, best) if best else None)


def _campaign_info(data: CampaignData) -> CampaignInfo:
    c = data.campaign
    counts = {s: sum(1 for p in data.points if p.status == s) for s in ("ok", "failed", "pending")}
    mode = str(c.overrides.collect or mode_of_roles(p.role for p in data.points))
    timings = [t for p in data.points if (t := p.facts.point_timing)]
    return CampaignInfo(
        id=c.id,
        name=c.name,
        description=c.spec.description,
        status=c.status,
        started_at=c.started_at,
        ended_at=c.ended_at,
        fslab_version=c.fslab_version,
        overrides=c.overrides,
        points_total=len(data.points),
        points_ok=counts["ok"],
        points_failed=counts["failed"],
        points_pending=counts["pending"],
        points_evidence=sum(1 for p in data.points if p.role == "evidence"),
        collect_mode=mode,
        collect_text=COLLECT_TEXT.get(mode, mode),
        timing=CampaignTiming.total(timings) if timings else None,
    )


COLLECT_TEXT = {
    "separate": "headline figures from clean repetitions (no collector); collector "
    "evidence from one extra instrumented run per sweep point, whose own headline is "
    "shown next to the clean median as its perturbation",
    "inline": "collectors ran in every repetition (--collect=inline): headline figures "
    "were measured under the instruments, and how much they moved them was not measured",
    "off": "no collector ran: headline figures only, no kernel evidence",
}


# --- setup ----------------------------------------------------------------------


def _setup(store: Store, data: CampaignData) -> Setup:
    spec = data.campaign.spec
    notes = []
    host = data.campaign.host
    if not host.to_dict():
        notes.append("no host facts were stored with this campaign")
    configs = data.configs()
    fs_specs = {fs.label: fs for fs in spec.filesystems}
    filesystems = [_filesystem(store, data, c, fs_specs.get(c)) for c in configs]
    workload = spec.workload.model_dump(mode="json", exclude_unset=True)
    guests = [p.facts.guest for p in data.points if p.facts.guest is not None]
    if runs_under_tcg(guests):
        notes.append(TCG_CAVEAT)
    return Setup(
        host=host,
        device=data.campaign.device,
        device_text=_device_text(data.campaign.device, _device_limits(data)),
        filesystems=filesystems,
        workload=workload,
        workload_text=_workload_text(workload),
        sweep={k: list(v) for k, v in spec.sweep.items()},
        run=spec.run.model_dump(mode="json", exclude_unset=True),
        notes=notes,
        guests=list(dict.fromkeys(guest_label(g) for g in guests)),
    )


def _device_limits(data: CampaignData) -> str:
    """target.limits as applied (the point facts), in words; empty without limits."""
    applied = next((p.facts.device_limits for p in data.points if p.facts.device_limits), None)
    if not applied:
        return ""
    return f"limited to {_applied(applied).describe()} ({applied.how})"


def _applied(applied: DeviceLimitFacts) -> DeviceLimits:
    return DeviceLimits(applied.read_iops, applied.write_iops, applied.read_bps, applied.write_bps)


def _device_text(device: DeviceFacts | None, limits: str = "") -> str:
    text = _device_base_text(device)
    return f"{text}; {limits}" if limits else text


def _device_base_text(device: DeviceFacts | None) -> str:
    if device is None or not device.stored():
        return "not recorded"
    size = device.size_bytes
    size_text = f"{_gib(size)} " if size else ""
    if device.kind == "ram":
        return f"{size_text}sparse loop image in {device.image_dir or '/dev/shm'} (RAM)"
    if device.kind == "file":
        return f"{size_text}sparse loop image in {device.image_dir or '?'}"
    path = device.path or "?"
    return f"block device {path} {size_text}".strip()


def _gib(n: float) -> str:
    return format_bytes(n)  # one spelling of sizes in every section


def _workload_text(workload: dict[str, Any]) -> list[str]:
    kind = workload.get("kind")
    if kind == "fio":
        if workload.get("command_line"):
            return [
                " ".join(str(workload["command_line"]).split()),
                "(as written in the spec: fslab sets --directory, the swept options, "
                "--runtime and --ramp_time per point; the commands below are what ran)",
            ]
        if workload.get("job_file"):
            return [f"fio job file {workload['job_file']}"]
        options = workload.get("options") or {}
        return ["fio " + " ".join(f"--{k}={v}" for k, v in options.items())]
    if kind == "dd":
        keys = ("bs", "count", "conv", "oflag")
        words = [f"{k}={workload[k]}" for k in keys if workload.get(k)]
        mode = workload.get("mode", "once")
        extra = " (repeated, write + delete, for the runtime)" if mode == "sustained" else ""
        return [f"dd if=/dev/zero of=MNT/fslab-dd.out {' '.join(words)}{extra}"]
    return [json.dumps(workload)]


def _filesystem(
    store: Store, data: CampaignData, config: str, fs_spec: FilesystemSpec | None
) -> FilesystemSetup:
    points = [p for p in data.points if p.config == config]
    fs_type = points[0].fs_type if points else fs_spec.type if fs_spec else "?"
    with_facts = next((p for p in points if p.facts.filesystem), None)
    commands = next((store.commands(p.id) for p in points if store.commands(p.id)), [])
    mkfs = next((argv for argv in commands if argv and argv[0].startswith("mkfs")), None)
    mount = next((argv for argv in commands if argv and argv[0] == "mount"), None)
    notes = []
    facts = with_facts.facts if with_facts else PointFacts()
    fs_facts = facts.filesystem or FilesystemFacts()
    if all(p.status == "pending" for p in points):
        notes.append("no point has run yet")
    elif not any(p.status == "ok" for p in points):
        reasons = sorted({p.error for p in points if p.status == "failed" and p.error})
        why = f": {reasons[0]}" if reasons else ""
        notes.append(f"no point succeeded{why}")
    if with_facts is None and any(p.status != "pending" for p in points):
        notes.append("nothing was read back from the filesystem (no point got that far)")
    journal = fs_facts.journal_size_bytes
    kind = "journal"
    if journal is None and fs_facts.log_size_bytes is not None:
        journal, kind = fs_facts.log_size_bytes, "log"
    features = fs_facts.features
    if isinstance(features, dict):
        features = [f"{k}={v}" for k, v in features.items()]
    return FilesystemSetup(
        config=config,
        fs_type=fs_type,
        description=fs_spec.description if fs_spec else "",
        mkfs_options=list(fs_spec.mkfs_options) if fs_spec else [],
        mount_options=list(fs_spec.mount_options) if fs_spec else [],
        mkfs_argv=mkfs,
        mount_argv=mount,
        mount_options_effective=facts.mount_options_effective,
        journal_bytes=journal,
        journal_kind=kind,
        block_size_bytes=fs_facts.block_size_bytes,
        features=list(features),
        notes=notes,
    )


# --- reproduce ------------------------------------------------------------------


def _reproduce(store: Store, data: CampaignData, worst: PointRef | None) -> Reproduce:
    if worst is not None:
        point = data.point(worst.point_id)
        why = "the worst point of the campaign"
    else:
        ran = [p for p in data.points if store.commands(p.id)]
        if not ran:
            return Reproduce(None, "", [], ["no point ran a command yet"])
        point = ran[0]
        why = f"no point succeeded; the first that ran ({point.status})"
    records = store.command_records(point.id)
    steps: list[Step] = _image_steps(data, [argv for argv, _, _ in records])
    mountpoint = None
    for argv, rc, _ in records:
        steps.append(Step(None, argv, rc))
        if argv and argv[0] == "mount":
            mountpoint = argv[-1]
            steps += _fill_steps(point, mountpoint) + _limit_steps(point)
        if argv and argv[0] == "dd":
            iterations = data.metrics.get(point.id, {}).get("dd.iterations")
            if iterations and iterations > 1:
                steps.append(
                    Step(
                        f"fslab ran this dd {iterations:.0f} times, deleting the file between "
                        "runs (sustained mode), and reports total bytes over dd's own times",
                        None,
                    )
                )
    notes = []
    if not records:
        notes.append("this point stored no commands")
    return Reproduce(_ref(data, point), why, steps, notes)


def _image_steps(data: CampaignData, commands: list[list[str]]) -> list[Step]:
    """fslab creates the loop image itself (no command is stored): the shell equivalent.

    The image is the file `losetup --find --show` attached (mkfs ran on it just before).
    """
    device = data.campaign.device or DeviceFacts()
    size = device.size_bytes
    attach = next((a for a in commands if a[:1] == ["losetup"] and "--find" in a), None)
    if attach is None or not size or device.kind not in ("ram", "file"):
        return []
    return [
        Step(
            f"fslab created the sparse {_gib(size)} image itself; by hand:",
            ["truncate", "-s", str(size), attach[-1]],
        )
    ]


def _fill_steps(point: PointRow, mountpoint: str) -> list[Step]:
    fill = point.facts.fill
    if fill is None or not fill.bytes_filled:
        return []
    size = fill.bytes_filled
    return [
        Step(
            f"fslab then pre-filled the filesystem with fallocate(2), leaving "
            f"{_gib(fill.free_bytes_after or 0)} free; one file does the same:",
            ["fallocate", "-l", str(size), f"{mountpoint}/fslab-fill-0"],
        )
    ]


def _limit_steps(point: PointRow) -> list[Step]:
    """target.limits as set before the workload (fslab writes the throttle files itself)."""
    applied = point.facts.device_limits
    if applied is None or not applied.blkio_root:
        return []
    limits = _applied(applied)
    comment = (
        f"fslab then capped the device at {limits.describe()} for the workload, at the "
        "root blkio cgroup (the same with 0 clears it afterwards):"
    )
    return [
        Step(
            comment if i == 0 else None,
            [
                "sh",
                "-c",
                'echo "$0" > "$1"',
                f"{applied.devno} {value}",
                str(throttle_file(kind, Path(applied.blkio_root))),
            ],
        )
        for i, (kind, value) in enumerate(limits.items())
    ]


# --- results --------------------------------------------------------------------


def _latency_family(data: CampaignData) -> str | None:
    if data.latency is None:
        return None
    return data.latency.rsplit("_", 1)[0]


def _results(data: CampaignData) -> Results:
    rows = summarize(data.points, data.metrics)
    family = _latency_family(data)
    out_rows = [_result_row(data, row, family) for row in rows]
    notes = []
    if data.headline is None:
        notes.append("no successful point has a throughput metric: nothing to tabulate")
    if data.latency is None and data.headline == "dd.bw_bytes_s":
        notes.append("dd reports only a rate: no latency percentiles")
    pending = sum(1 for p in data.points if p.status == "pending")
    if pending:
        notes.append(f"{pending} point(s) not run yet: fslab run --resume {data.id}")
    warmups = warmup_runs(data.points, data.metrics, data.headline)
    outliers = outlier_runs(data.points, data.metrics, data.headline)
    set_aside = [
        line
        for line in (
            describe_warmups(warmups, data.headline),
            describe_outliers(outliers, data.headline),
        )
        if line
    ]
    return Results(
        headline=data.headline,
        headline_label=metric_label(data.headline),
        latency=data.latency,
        latency_label=metric_label(data.latency),
        latency_family=family,
        axes=data.axes(),
        rows=out_rows,
        failures=_failures(data),
        pending=pending,
        watermark_relevant=watermark_relevant(rows),
        notes=notes,
        warmups=warmups,
        outliers=outliers,
        set_aside=set_aside,
    )


def _result_row(data: CampaignData, row: SummaryRow, family: str | None) -> ResultRow:
    key = point_key(row.sweep)
    percentiles: dict[str, float | None] = {}
    for q in PERCENTILES:
        values = data.values(f"{family}_{q}", row.config).get(key, []) if family else []
        percentiles[q] = statistics.median(values) if values else None
    return ResultRow(
        config=row.config,
        sweep=dict(row.sweep),
        n_ok=row.n_ok,
        n_failed=row.n_failed,
        median=row.median,
        minimum=row.minimum,
        maximum=row.maximum,
        values=list(row.values),
        latency_p99=row.latency_median,
        percentiles=percentiles,
        evidence=row.evidence,
        perturbation_pct=row.perturbation_pct,
        evidence_failed=row.evidence_failed,
        free_bytes_start=row.facts.free_bytes_start,
        watermark_bytes=row.facts.ext4_watermark_bytes,
        below_watermark=row.facts.below_ext4_watermark,
        filled=row.facts.filled,
    )


def _failures(data: CampaignData) -> list[FailedPoint]:
    failed = []
    for p in data.points:
        if p.status != "failed":
            continue
        tail = [line for line in (p.stderr or "").strip().splitlines() if line.strip()][-5:]
        failed.append(FailedPoint(p.seq, p.config, dict(p.sweep), p.error or "", tail))
    return failed


# --- scaling and latency curves -----------------------------------------------------


def _scaling(data: CampaignData) -> Scaling:
    try:
        fitted: ScaleReport = fit_campaign(data)
    except FslabError as exc:
        return Scaling(None, data.headline, [], [], [f"no scaling fit: {exc}"])
    notes = [f"no scaling fit: {fitted.reason}"] if fitted.reason else []
    return Scaling(
        axis=fitted.axis,
        metric=fitted.metric,
        curves=fitted.curves,
        moves=[m.to_dict() for m in fitted.moves],
        notes=notes,
    )


def _latency(
    store: Store, data: CampaignData, worst: PointRef | None, best: PointRef | None
) -> Latency:
    family = _latency_family(data)
    notes: list[str] = []
    if family is None:
        why = (
            "dd reports only a rate, no latency"
            if data.headline == "dd.bw_bytes_s"
            else "no successful point has latency percentiles"
        )
        return Latency(None, "latency", [], [], [why])
    axis = data.concurrency_axis()
    curves: list[LatencyCurve] = []
    if axis is None:
        notes.append("no concurrency axis swept: latency is in the results table only")
    else:
        for config in data.configs():
            curves += _latency_curves(data, config, family, axis)
    cdfs = []
    for role, ref in (("worst", worst), ("best", best)):
        if ref is None:
            continue
        cdf, why = _cdf(store, ref, family, role)
        if cdf is not None:
            cdfs.append(cdf)
        else:
            notes.append(why)
    return Latency(family, metric_label(family), curves, cdfs, notes)


def _latency_curves(data: CampaignData, config: str, family: str, axis: str) -> list[LatencyCurve]:
    by_q = {q: data.curve(config, f"{family}_{q}", axis) for q in PERCENTILES}
    curves = []
    for rest, (ns, _) in by_q["p99"].items():
        values: dict[str, list[float | None]] = {}
        for q in PERCENTILES:
            q_ns, q_reps = by_q[q].get(rest, ([], []))
            lookup = {n: statistics.median(reps) for n, reps in zip(q_ns, q_reps, strict=True)}
            values[q] = [lookup.get(n) for n in ns]
        curves.append(LatencyCurve(config, dict(rest), axis, list(ns), values))
    return curves


def _cdf(store: Store, ref: PointRef, family: str, role: str) -> tuple[LatencyCdf | None, str]:
    text = store.artifact(ref.point_id, "fio.json")
    if text is None:
        return None, f"{role} point {ref.label}: no fio.json stored, so no latency distribution"
    try:
        dist = latency_distribution(text, family)
    except (FslabError, ValueError) as exc:
        return None, f"{role} point {ref.label}: {exc}"
    return LatencyCdf(role, ref, family, dist.samples, dist.values_ns, dist.cumulative), ""


# --- comparisons ------------------------------------------------------------------


def _comparisons(data: CampaignData) -> Comparisons:
    configs = data.configs()
    with_results = [c for c in configs if data.ok_points(c)]
    notes: list[str] = []
    metrics = [m for m in (data.headline, data.latency) if m]
    if len(configs) < 2:
        notes.append(f"one configuration ({', '.join(configs) or 'none'}): nothing to compare")
        return Comparisons(None, metrics, [], [], data.headline, 0, notes)
    if not with_results:
        notes.append("no configuration has a successful point: nothing to compare")
        return Comparisons(None, metrics, [], [], data.headline, 0, notes)
    baseline = configs[0]
    if baseline not in with_results:
        notes.append(
            f"the first configuration, {baseline}, has no successful point; "
            f"{with_results[0]} is the baseline instead"
        )
        baseline = with_results[0]
    items: list[Comparison] = []
    try:
        items = [
            c
            for c in with_profile_shares(data, config_comparisons(data, baseline), baseline)
            if c.candidate in with_results or c.table.rows
        ]
    except FslabError as exc:
        notes.append(f"no comparison: {exc}")
    for config in configs:
        if config != baseline and config not in with_results:
            notes.append(f"{config}: no successful point, not compared")
    reps = [min(r.n_baseline, r.n_candidate) for c in items for r in c.table.rows]
    min_reps = min(reps, default=0)
    if items and min_reps < MIN_REPS:
        notes.append(
            f"{min_reps} run(s) per point on a side: a verdict needs {MIN_REPS} or more "
            "(rerun with --set run.repeat=N); rows say 'needs more runs'"
        )
    return Comparisons(
        baseline, metrics, items, headline_bars(data, with_results), data.headline, min_reps, notes
    )


# --- profiles ---------------------------------------------------------------------


def _profiles(
    store: Store,
    data: CampaignData,
    worst: PointRef | None,
    best: PointRef | None,
    evidence: tuple[EvidenceRun | None, EvidenceRun | None],
) -> Profiles:
    notes = []
    if worst is None:
        notes.append("no successful point with a throughput metric: no worst point to profile")
        empty = [_empty_profile(kind) for kind in PROFILE_KINDS]
        return Profiles(None, best, "", empty[0], empty[1], notes=notes)
    why = (
        f"{worst.config}, the configuration with the deepest falloff: its worst point "
        f"(lowest median {metric_label(data.headline)} at or past its peak) and its best"
    )
    if best is None:
        notes.append("a single sweep point: no best-vs-worst difference")
    worst_ev, best_ev = evidence
    sections = [
        _profile_section(store, data, kind, worst_ev, best_ev if best else None)
        for kind in PROFILE_KINDS
    ]
    return Profiles(worst, best, why, sections[0], sections[1], worst_ev, best_ev, notes)


def _empty_profile(kind: ProfileKind) -> ProfileSection:
    return ProfileSection(kind, _profile_title(kind), None, 0, None, [], "")


def _profile_title(kind: ProfileKind) -> str:
    return "on-CPU (perf)" if kind == "oncpu" else "off-CPU (blocked threads)"


def _profile_section(
    store: Store,
    data: CampaignData,
    kind: ProfileKind,
    worst_ev: EvidenceRun | None,
    best_ev: EvidenceRun | None,
) -> ProfileSection:
    """The profile of the worst point's evidence run, and its difference from the best's."""
    section = _empty_profile(kind)
    if worst_ev is None or worst_ev.point is None:
        section.notes.append(f"worst point: {worst_ev.statement if worst_ev else 'none'}")
        return section
    worst = worst_ev.point
    section.point = worst
    try:
        profile = load_profile(store, data, data.point(worst.point_id), kind)
    except NoProfile as exc:
        section.notes.append(str(exc))
        return section
    section.profile = profile
    section.samples = profile.total
    section.idle_share = profile.idle_share() if kind == "oncpu" else None
    section.chains = profile.hottest_chains(CHAINS)
    section.chains_text = profile.format_chains(section.chains)
    if best_ev is None:
        return section
    if best_ev.point is None:
        section.notes.append(f"best point: {best_ev.statement}")
        return section
    try:
        best_profile = load_profile(store, data, data.point(best_ev.point.point_id), kind)
    except NoProfile as exc:
        section.notes.append(f"best point: {exc}")
        return section
    section.best_profile = best_profile
    a, b = (best_profile.busy(), profile.busy()) if kind == "oncpu" else (best_profile, profile)
    rows = diff(a, b, limit=None, kinds=("function",))
    section.diff_rows = [r for r in rows if not _is_state_frame(r.name)][:DIFF_ROWS]
    return section


def _is_state_frame(name: str) -> bool:
    """Off-CPU stacks carry the thread state as a pseudo-frame ([D], [S]): not code."""
    return len(name) == 3 and name[0] == "[" and name[2] == "]"


# --- contention -------------------------------------------------------------------


def _contention(
    store: Store,
    data: CampaignData,
    worst: PointRef | None,
    best: PointRef | None,
    evidence: tuple[EvidenceRun | None, EvidenceRun | None],
) -> Contention:
    if worst is None:
        return Contention(
            best, None, [], [], [], None, notes=["no worst point: nothing to contrast"]
        )
    worst_ev, best_ev = evidence
    w_run = worst_ev.point if worst_ev else None
    b_run = best_ev.point if best_ev and best else None
    w = data.metrics.get(w_run.point_id, {}) if w_run else {}
    b = data.metrics.get(b_run.point_id, {}) if b_run else {}
    collectors = store.collectors(w_run.point_id) if w_run else {}
    workqueues = workqueue_rows(w, b)
    jbd2 = jbd2_pairs(w, b)
    wchans, blocked = wchan_rows(w, b)
    notes = []
    if w_run is None and worst_ev is not None:
        notes.append(f"worst point: {worst_ev.statement}: no workqueue, jbd2 or off-CPU evidence")
    elif not any(k.split(".")[0] in COLLECTOR_FAMILIES for k in w):
        notes.append(
            "no collector metrics at the worst point (run with --no-collect, or by an "
            "fslab without collectors): no workqueue, jbd2 or off-CPU evidence"
        )
    else:
        for found, prefix, collector in (
            (workqueues, "wq.", "workqueue"),
            (jbd2, "jbd2.", "jbd2"),
            (wchans, "offcpu.wchan.", "offcpu"),
        ):
            if not found:
                notes.append(_collector_gap(w, collectors, prefix, collector))
    return Contention(
        best=best,
        worst=worst,
        workqueues=workqueues,
        jbd2=jbd2,
        wchans=wchans,
        blocked_threads_worst=blocked,
        worst_evidence=worst_ev,
        best_evidence=best_ev if best else None,
        notes=[n for n in notes if n],
    )


def _collector_gap(
    metrics: dict[str, float], collectors: dict[str, tuple[str, str]], prefix: str, name: str
) -> str:
    """Why the worst point has no metric under `prefix`, from the collectors table."""
    if any(k.startswith(prefix) for k in metrics):
        return ""
    state, reason = collectors.get(name, ("not run", ""))
    if state != "ok":
        return f"{name}: the collector was {state}" + (f": {reason}" if reason else "")
    return f"{name}: {ALL_COLLECTORS[name].no_data}"


# --- diagnosis --------------------------------------------------------------------


def _diagnosis(store: Store, data: CampaignData, worst: PointRef | None) -> Diagnosis:
    """The diagnosis per configuration; a report never fails for it."""
    try:
        found = diagnose_campaign(store, data.id)
    except Exception as exc:  # the rest of the report stands without it
        return Diagnosis(False, [], [f"diagnosis unavailable: {type(exc).__name__}: {exc}"])
    focus = worst.config if worst is not None else None
    entries = [
        DiagnosisEntry(d.config, list(describe_diagnosis(d)), d.to_dict(), d.config == focus, d)
        for d in found
    ]
    notes = [] if entries else ["diagnosis found no configuration to diagnose"]
    return Diagnosis(True, entries, notes)


def rerun_argv(overrides: CampaignOverrides, report_source: str = "") -> list[str]:
    """The fslab command that runs the campaign's experiment again, from its stored
    overrides: `fslab reproduce REPORT --run` when it reproduces a report, else
    `fslab run SPEC`, with its --quick and --set."""
    if report_source and report_source != "-":
        argv = ["fslab", "reproduce", report_source, "--run"]
    else:
        argv = ["fslab", "run", overrides.source or "SPEC"]
    if overrides.quick:
        argv.append("--quick")
    for item in overrides.set:
        argv += ["--set", item]
    return argv


def finite(value: float | None) -> float | None:
    """None for missing, NaN and infinite values (JSON and plots cannot carry them)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)
