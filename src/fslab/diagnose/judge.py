"""Each piece of a mechanism's evidence judged, with its numbers in words.

A rule's metric signals are judged as changes from the good point to the bad
one (a metric as high at the good point explains nothing); its requirements
and counter-arguments at the bad point: a recorded fact, a metric against a
bound, or a serialising workqueue (one item at a time, busy, with items
waiting behind it), which no single metric can express.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import format_ns, format_plain, format_share
from fslab.diagnose.evidence import PointEvidence
from fslab.diagnose.mechanisms import Condition, MetricSignal


@dataclass
class Finding:
    """One judged piece of evidence, with its numbers in words."""

    text: str
    holds: bool | None  # None: not measured, so not judged
    good: float | None = None
    bad: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "holds": self.holds, "good": self.good, "bad": self.bad}


def _largest(metrics: Mapping[str, float], pattern: str) -> tuple[str, float] | None:
    found = [(k, v) for k, v in metrics.items() if fnmatch.fnmatchcase(k, pattern)]
    return max(found, key=lambda kv: kv[1]) if found else None


def judge_metric(signal_def: MetricSignal, good: PointEvidence, bad: PointEvidence) -> Finding:
    """A metric judged as a change from the good point to the bad one."""
    at_bad = _largest(bad.metrics, signal_def.metric)
    if at_bad is None:
        return Finding(f"{signal_def.what}: {signal_def.metric} not measured", None)
    name, b = at_bad
    g = good.metrics.get(name)
    family = name.split(".")[0] + "."
    if g is None and any(k.startswith(family) for k in good.metrics):
        g = 0.0  # its collector ran at the good point and never saw it
    if g is None:
        return Finding(f"{signal_def.what}: {name} not measured at {good.label}", None)
    floor = signal_def.floor
    if signal_def.grows:
        holds = b > floor and b >= signal_def.factor * g
        need = f"needs x{format_plain(signal_def.factor)}"
    else:
        holds = b * signal_def.factor <= g and g > floor
        need = f"needs /{format_plain(signal_def.factor)}"
    text = f"{signal_def.what}: {format_value(name, g)} -> {format_value(name, b)} ({name}; {need})"
    return Finding(text, holds, g, b)


def judge_condition(c: Condition, bad: PointEvidence) -> Finding:
    """A requirement or counter-argument at the bad point."""
    if c.kind == "fact":
        value = bad.facts.get(c.fact)
        if value is None:
            return Finding(f"{c.what}: {c.fact} not recorded", None)
        holds = c.contains in str(value) if c.contains else value == c.equals
        return Finding(f"{c.what}: {c.fact} = {value!r}", holds)
    if c.kind == "metric":
        found = _largest(bad.metrics, c.metric)
        if found is None:
            return Finding(f"{c.what}: {c.metric} not measured", None)
        name, value = found
        holds = value >= c.value if c.op == ">=" else value <= c.value
        return Finding(
            f"{c.what}: {name} = {format_value(name, value)} ({c.op} {c.value:g})",
            holds,
            None,
            value,
        )
    return _judge_workqueue(c, bad)


def _judge_workqueue(c: Condition, bad: PointEvidence) -> Finding:
    """A serialising worker: one item at a time, busy, with items waiting behind it."""
    names = sorted(
        {k.split(".")[1] for k in bad.metrics if k.startswith("wq.") and k.count(".") >= 2}
    )
    if c.workqueue:
        names = [n for n in names if n == c.workqueue]
    rows = []
    for name in names:
        m = bad.metrics
        peak = m.get(f"wq.{name}.peak_concurrency")
        util = m.get(f"wq.{name}.utilisation")
        delay = m.get(f"wq.{name}.queue_delay_ns_p99")
        if peak is None or util is None or delay is None:
            continue
        rows.append((name, peak, util, delay))
    if not rows:
        return Finding(f"{c.what}: no workqueue measured at {bad.label}", None)
    serial = [r for r in rows if r[1] <= c.max_peak_concurrency and r[3] >= c.min_queue_delay_ns]
    if not serial:
        name, peak, util, delay = max(rows, key=lambda r: r[3])
        text = (
            f"no workqueue ran one item at a time with items waiting: the longest queue, "
            f"{name}, reached {peak:g} in flight, queue p99 {format_ns(delay)}"
        )
        return Finding(text, False, None, util)
    name, peak, util, delay = max(serial, key=lambda r: r[3])
    holds = util >= c.min_utilisation
    at_once = "one item" if peak <= 1 else f"at most {peak:g} items"
    text = (
        f"{name} ran {at_once} at a time with queue p99 {format_ns(delay)}, "
        f"{'and' if holds else 'but'} was busy {format_share(util)} of the time"
    )
    if not holds:
        text += f" (a serialising worker is busy >= {format_share(c.min_utilisation)})"
    return Finding(text, holds, None, util)
