"""The report's machine in a written spec: [vm] where a guest can be it, [reported] for the rest.

The report's kernel and CPU count run in a qemu guest where fslab can boot
them (fslab.reproduce.pending); what neither this host nor a guest can give
(a kernel, CPUs, memory, a device limit, a patch) is a warning and a fact
kept under [reported], beside the reporter's figures, hypotheses and the
questions asked, for the reply. fslab stores [reported] and does not act on it.
"""

from __future__ import annotations

import tomlkit
from tomlkit.items import Table

from fslab.base.format import format_size
from fslab.guest.debian import OFFERED_SERIES
from fslab.reproduce import pending
from fslab.reproduce.configwrite import Config
from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import DdFact, FioFact
from fslab.reproduce.text import without_prompt
from fslab.reproduce.tomlitems import toml_tree, wrap
from fslab.spec.reported import (
    ReportedFact,
    ReportedFigure,
    ReportedHypothesis,
    ReportedName,
    ReportedQuestion,
    ReportedSpec,
)


def _vm_section(draft: Draft) -> dict[str, str | int] | None:
    return pending.vm_section(draft.facts, draft.host.nr_cpu_ids) if draft.guests else None


def vm_table(draft: Draft) -> Table | None:
    section = _vm_section(draft)
    if section is None:
        return None
    vm = tomlkit.table()
    for line in wrap(
        "every point runs in a qemu guest (docs/guests.md): "
        + _vm_why(draft, section)
        + "; `fslab kernels fetch` the kernel first"
    ):
        vm.add(tomlkit.comment(line))
    for key, value in section.items():
        vm[key] = value
    return vm


def _vm_why(draft: Draft, section: dict[str, str | int]) -> str:
    facts = draft.facts
    reasons = []
    kernel = next(
        (k for k in facts.kernels if pending.kernel_series(k.version) == section["kernel"]),
        None,
    )
    if kernel is not None:
        reasons.append(
            f"the report's kernel {kernel.version} (line {kernel.source.number}) as "
            f"Debian's {section['kernel']}"
        )
    if "possible_cpus" in section and (cpu := facts.reporter_cpus) is not None:
        reasons.append(
            f"its {cpu.count} CPUs (line {cpu.source.number}) as the guest's possible "
            f"CPUs (nr_cpu_ids), {section['cpus']} of them online"
        )
    return " and ".join(reasons)


def unreproducible(draft: Draft) -> None:
    facts, host = draft.facts, draft.host
    vm = _vm_section(draft)
    runs = (
        f"this spec runs {vm['kernel']} in a guest"
        if vm
        else f"this host runs {host.kernel_release}"
    )
    for kernel in facts.kernels:
        if vm is None or pending.kernel_series(kernel.version) != vm["kernel"]:
            _cannot(
                draft,
                "kernel",
                kernel.version,
                kernel.source.number,
                f"{runs}; fslab's guests boot Debian's {', '.join(OFFERED_SERIES)} "
                "(or your own build: vm.kernel = PATH)",
            )
    cpu = facts.reporter_cpus
    if cpu is not None and vm is None and cpu.count != host.online_cpus:
        _cannot(
            draft,
            "cpus",
            str(cpu.count),
            cpu.source.number,
            f"this host has {host.online_cpus} CPUs (nr_cpu_ids {host.nr_cpu_ids})",
        )
    for memory in facts.memory[:1]:
        if vm is None or memory.size_bytes > host.memory_bytes:
            _cannot(
                draft,
                "memory",
                memory.text,
                memory.source.number,
                f"this host has {format_size(host.memory_bytes)}"
                + (", the most a guest can get" if vm else ""),
            )
    for device, why in draft.limits.refused:
        _cannot(
            draft,
            "device limit",
            device.text,
            device.source.number,
            f"{why}; the RAM-backed image is not throttled to it",
        )
    for patch in facts.patches:
        _cannot(
            draft,
            "patch",
            f"{patch.subject or 'a patch'} ({', '.join(patch.files)})",
            patch.source.number,
            "testing it needs a guest kernel built with it",
        )


def _cannot(draft: Draft, fact: str, value: str, line: int, reason: str) -> None:
    draft.unreproduced.append(ReportedFact(fact=fact, value=value, reason=reason, line=line))
    draft.warnings.append(f"line {line}: {fact} {value}: {reason}")


def reported_table(draft: Draft, source_name: str, configs: list[Config]) -> Table:
    facts = draft.facts
    workload = facts.fio[0] if facts.fio else None
    dd = facts.dd[0] if facts.dd else None
    tool = facts.tools[0] if facts.tools and not workload else None
    text = workload.text if workload else (without_prompt(dd.source.text) if dd else "")
    reported = ReportedSpec(
        source=source_name,
        title=facts.title,
        workload=tool.text if tool else text,
        workload_line=tool.source.number if tool else _source_line(workload or dd),
        kernels=[k.version for k in facts.kernels],
        cpus=facts.reporter_cpus.count if facts.reporter_cpus else None,
        memory=facts.memory[0].text if facts.memory else "",
        device=next((d.text for d in facts.devices if d.size_bytes), ""),
        point=draft.reported_point,
        expected=[_figure(f, configs) for f in facts.figures],
        hypotheses=[
            ReportedHypothesis(
                statement=h.statement,
                line=h.source.number,
                names=[ReportedName(kind=n.kind, name=n.name) for n in h.names],
            )
            for h in facts.hypotheses
        ],
        unreproduced=draft.unreproduced,
        questions=[
            ReportedQuestion(
                item=q.item,
                question=q.question,
                assumed=q.assumed,
                line=q.source.number if q.source else 0,
            )
            for q in draft.questions
        ],
    )
    table = tomlkit.table()
    for line in wrap(
        "what the report said, for the reply: the reporter's figures "
        "(expected), hypothesis, and what this host cannot reproduce; fslab "
        "stores it with the campaign and does not act on it"
    ):
        table.add(tomlkit.comment(line))
    for key, value in reported.model_dump(exclude_defaults=True).items():
        multiline = isinstance(value, str) and "\n" in value
        table[key] = tomlkit.string(value, multiline=True) if multiline else toml_tree(value)
    return table


def _figure(figure, configs: list[Config]) -> ReportedFigure:
    reporter = configs[0]
    by_type = {c.type: c.label for c in reversed(configs) if "remedy" not in c.description}
    config = by_type.get(figure.filesystem, "") if figure.filesystem else reporter.label
    return ReportedFigure(
        metric=figure.metric,
        value=float(f"{figure.value:.6g}"),
        unit=figure.unit,
        text=figure.text,
        qualifier=figure.qualifier,
        context=figure.context,
        config=config,
        kernel=figure.kernel,
        line=figure.source.number,
    )


def _source_line(fact: FioFact | DdFact | None) -> int:
    """The report line a workload was read from; 0 when none was found."""
    return fact.source.number if fact else 0
