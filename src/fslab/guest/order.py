"""Which points share a boot, and in which order the boots come.

With one guest configuration, one boot serves every point. With several
(kernels, CPU counts), each repetition boots each guest once and runs that
repetition's points in it, and the guests' order turns round from one
repetition to the next (A B, B A, A B ...): the host's slow drift (thermal,
page cache, other tenants) then falls on every guest alike instead of
favouring whichever always runs first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fslab.base.roles import is_warmup
from fslab.spec.points import Point
from fslab.spec.vm import GuestConfig


@dataclass(frozen=True)
class BootGroup:
    """One boot: the guest, and the points it runs, in run order."""

    guest: GuestConfig
    points: tuple[Point, ...]


def boot_groups(
    points: Sequence[Point], guest_of: Callable[[Point], GuestConfig]
) -> list[BootGroup]:
    """Points grouped into boots; see the module docstring for the order."""
    guests = list(dict.fromkeys(guest_of(p) for p in points))
    if len(guests) <= 1:
        return [BootGroup(guests[0], tuple(points))] if guests else []
    repeats = list(dict.fromkeys(p.repeat for p in points))
    groups = []
    for ordinal, repeat in enumerate(repeats):
        in_repeat = [p for p in points if p.repeat == repeat]
        # the order turns round on the measured runs; a warm-up (run at the heaviest
        # point) joins its guest's boot without deciding which guest comes first
        measured = [p for p in in_repeat if not is_warmup(p.role)] or in_repeat
        order = list(dict.fromkeys(guest_of(p) for p in measured))
        order += [g for g in dict.fromkeys(guest_of(p) for p in in_repeat) if g not in order]
        if ordinal % 2 == 1:
            order.reverse()
        for guest in order:
            groups.append(BootGroup(guest, tuple(p for p in in_repeat if guest_of(p) == guest)))
    return groups
