"""What fslab read from a report, one line per fact with the report line it came from."""

from __future__ import annotations

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import format_change_pct, format_share, format_size
from fslab.reproduce.facts import FigureFact, ReportFacts
from fslab.reproduce.pending import limit_text


def describe_facts(facts: ReportFacts) -> list[str]:
    rows: list[tuple[int, str, str]] = []
    for job in facts.fio:
        summary = " ".join(
            f"{k}={v}" if v is not None else k for k, v in list(job.options.items())[:6]
        )
        rows.append((job.source.number, "workload", f"fio {job.form}: {summary} ..."))
    for run in facts.dd:
        rows.append(
            (
                run.source.number,
                "workload",
                "dd "
                + " ".join("=".join(o) for o in run.operands)
                + (f" on {run.filesystem}" if run.filesystem else ""),
            )
        )
    for other in facts.other_tools:
        rows.append((other.source.number, "not run", f"{other.tool}: {other.why}"))
    for fs in facts.filesystems:
        options = " ".join(fs.mkfs_options) or ",".join(fs.mount_options)
        rows.append(
            (fs.source.number, "filesystem", f"{fs.type or '?'} ({fs.how}) {options}".strip())
        )
    rows += [(k.source.number, "kernel", k.version) for k in facts.kernels]
    rows += [(c.source.number, "cpus", f"{c.count} ({c.text})") for c in facts.cpus]
    rows += [(m.source.number, "memory", m.text) for m in facts.memory]
    for device in facts.devices:
        what = device.text
        if device.size_bytes and format_size(device.size_bytes) != device.text:
            what = f"{device.text} ({format_size(device.size_bytes)})"
        if limit := limit_text(device):
            what = f"limit {limit} ({device.text})"
        rows.append((device.source.number, "device", what))
    rows += [(f.source.number, "figure", _figure(f)) for f in facts.figures]
    for hypothesis in facts.hypotheses:
        names = ", ".join(f"{n.kind} {n.name}" for n in hypothesis.names) or "(no names)"
        rows.append((hypothesis.source.number, "hypothesis", names))
    rows += [(lv.source.number, "lever", f'{lv.lever}: "{lv.text}"') for lv in facts.levers]
    rows += [(p.source.number, "patch", ", ".join(p.files)) for p in facts.patches]
    lines = [f"  line {number:<4} {kind:<10} {text}" for number, kind, text in sorted(rows)]
    return lines


def _figure(figure: FigureFact) -> str:
    value = format_value(figure.metric or "share", figure.value)
    if figure.unit == "share":
        value = format_share(figure.value, 2)
    elif figure.unit == "%":
        value = format_change_pct(figure.value, None)
    where = ", ".join(
        dict.fromkeys(x for x in (figure.filesystem, figure.kernel, figure.context) if x)
    )
    qualifier = f"{figure.qualifier} " if figure.qualifier else ""
    return f'{qualifier}{value} {figure.metric or ""} "{figure.text}"' + (
        f" [{where}]" if where else ""
    )
