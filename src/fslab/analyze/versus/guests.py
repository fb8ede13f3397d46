"""What a point's guest was, in words: the one wording reports and comparisons use.

A guest point stores the guest's facts (store.facts.GuestFacts, from
fslab.guest.session.GuestSession.facts): the kernel release and its source,
nr_cpu_ids, online CPUs, the accelerator.
Under TCG the CPU is emulated, so figures compare only within one run.
"""

from __future__ import annotations

from collections.abc import Iterable

from fslab.store.facts import GuestFacts

TCG_CAVEAT = "TCG: emulated CPU; compare only within this run, not with host figures"


def guest_label(guest: GuestFacts) -> str:
    """'6.1.0-57-amd64, nr_cpu_ids 1728, 2 online, tcg'."""
    parts = [guest.kernel_release or "?"]
    if guest.nr_cpu_ids is not None:
        parts.append(f"nr_cpu_ids {guest.nr_cpu_ids}")
    if guest.online_cpus is not None:
        parts.append(f"{guest.online_cpus} online")
    if guest.accel:
        parts.append(guest.accel)
    return ", ".join(parts)


def guest_summary(guests: Iterable[GuestFacts]) -> str:
    """The distinct guests some points ran in, '; '-joined; '' for host points."""
    labels = list(dict.fromkeys(guest_label(g) for g in guests))
    return "; ".join(labels)


def runs_under_tcg(guests: Iterable[GuestFacts]) -> bool:
    return any(g.accel == "tcg" for g in guests)
