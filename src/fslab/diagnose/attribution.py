"""How much of the change between two points each mechanism's frames account for.

A profile (off-CPU: blocked thread-samples, to which the diagnosis adds the
share of threads running as one more class; on-CPU: busy CPU samples, idle
left out) is cut into disjoint classes: each stack belongs to the innermost
frame of it that some rule names (its wait, or its spin), and a stack no rule
names belongs to its leaf function. Between the good point G and the bad
point B each class's share moves; the total change is the sum of the
increases (the total variation distance between the two compositions):

    change = sum over classes c of max(0, share_B(c) - share_G(c))

and a mechanism m, owning classes C_m, explains

    E_kind(m) = max(0, share_B(C_m) - share_G(C_m)) / change

of it: 0 when its frames hold the same share at both points (evidence that
holds equally at the good point explains nothing), 1 when all the change
went to them. Shares, not thread counts, so that more threads waiting in
the same places (Little's law at a higher concurrency) is not a change.
The classes are disjoint, so the E of competing mechanisms add up to at
most 1: they are comparable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fslab.diagnose.mechanisms import Frame, ProfileKind
from fslab.stacks.profile import Profile

MIN_CHANGE = 0.05  # below this the two compositions are the same within sampling noise
STATE_FRAMES = frozenset({"[D]", "[S]", "[R]"})


def classify(profile: Profile, frames: Iterable[Frame]) -> dict[str, float]:
    """Shares of the profile by class: the innermost named frame's key, else 'leaf:<func>'."""
    named = list(frames)
    counts: dict[str, int] = {}
    for stack, count in profile.stacks.items():
        key = class_of(stack, named)
        counts[key] = counts.get(key, 0) + count
    total = sum(counts.values())
    return {key: n / total for key, n in counts.items()} if total else {}


def class_of(stack: tuple[str, ...], frames: list[Frame]) -> str:
    for index in range(len(stack) - 1, 0, -1):
        for frame in frames:
            if frame.matches_at(stack, index):
                return frame.key
    leaf = stack[-1] if len(stack) > 1 else stack[0]
    return f"leaf:{leaf}" if leaf not in STATE_FRAMES else "leaf:(no kernel stack)"


def share_of(classes: Mapping[str, float], frames: Iterable[Frame]) -> float:
    keys = {f.key for f in frames}
    return sum(v for k, v in classes.items() if k in keys)


@dataclass
class Shift:
    """One profile kind's composition at the good and the bad point."""

    kind: ProfileKind
    good: dict[str, float]
    bad: dict[str, float]

    @property
    def change(self) -> float:
        """Total variation distance between the compositions: the sum of the increases."""
        keys = set(self.good) | set(self.bad)
        return sum(max(0.0, self.bad.get(k, 0.0) - self.good.get(k, 0.0)) for k in keys)

    def shares(self, frames: Iterable[Frame]) -> tuple[float, float]:
        frames = list(frames)
        return share_of(self.good, frames), share_of(self.bad, frames)

    def explained(self, frames: Iterable[Frame]) -> float:
        """E_kind(m): this mechanism's share of the change (0..1)."""
        change = self.change
        if change < MIN_CHANGE:
            return 0.0
        good, bad = self.shares(frames)
        return min(1.0, max(0.0, bad - good) / change)

    def top_increases(self, limit: int = 3) -> list[tuple[str, float, float]]:
        """(class, good share, bad share) of the classes that grew most."""
        keys = set(self.good) | set(self.bad)
        rows = [(k, self.good.get(k, 0.0), self.bad.get(k, 0.0)) for k in keys]
        rows.sort(key=lambda r: (-(r[2] - r[1]), r[0]))
        return [r for r in rows if r[2] > r[1]][:limit]


def class_label(key: str) -> str:
    """A class key as text: 'folio_wait_bit under folio_wait_writeback', 'schedule'."""
    key = key.removeprefix("leaf:").removesuffix("$")
    frame, _, under = key.partition("<")
    return f"{frame} under {under}" if under else frame
