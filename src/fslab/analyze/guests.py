"""What a point's guest was, in words: the one wording reports and comparisons use.

A guest point stores `facts["guest"]` (fslab.guest.session.GuestSession.facts):
the kernel release and its source, nr_cpu_ids, online CPUs, the accelerator.
Under TCG the CPU is emulated, so figures compare only within one run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TCG_CAVEAT = "TCG: emulated CPU; compare only within this run, not with host figures"


def guest_label(guest: Mapping[str, Any]) -> str:
    """'6.1.0-57-amd64, nr_cpu_ids 1728, 2 online, tcg'."""
    parts = [str(guest.get("kernel_release") or "?")]
    if guest.get("nr_cpu_ids") is not None:
        parts.append(f"nr_cpu_ids {guest['nr_cpu_ids']}")
    if guest.get("online_cpus") is not None:
        parts.append(f"{guest['online_cpus']} online")
    if guest.get("accel"):
        parts.append(str(guest["accel"]))
    return ", ".join(parts)


def guest_summary(guests: Iterable[Mapping[str, Any]]) -> str:
    """The distinct guests some points ran in, '; '-joined; '' for host points."""
    labels = list(dict.fromkeys(guest_label(g) for g in guests))
    return "; ".join(labels)


def runs_under_tcg(guests: Iterable[Mapping[str, Any]]) -> bool:
    return any(g.get("accel") == "tcg" for g in guests)
