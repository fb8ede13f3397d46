"""On-CPU profiles as counted stacks, and the views that explain them.

A profile is "comm-rooted": each stack's first frame is the (normalised) thread
name, then the outermost function down to the leaf. Shares are fractions of all
samples, idle included, as `perf report` prints them.

Ranking goes by inclusive share ("fraction of samples whose stack contains f"),
not by self share: in a VM, perf attributes the time spent with interrupts off
to the function that turns them back on (`_raw_spin_unlock_irqrestore`), so a
leaf's self time often belongs to its callers. Hot chains follow the same rule:
a chain ends at the deepest function that still holds `min_share` of samples on
that exact caller path, so scattered irq-restore leaves fold into the caller
that really spent the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fslab.base.format import format_change_pct, format_share
from fslab.stacks.fold import UNKNOWN_FRAME, parse_folded

IDLE_COMMS = frozenset({"swapper"})
IDLE_FRAMES = frozenset({"do_idle", "cpu_startup_entry", "cpu_idle_poll"})
CHAIN_WIDTH_COLS = 80

Stack = tuple[str, ...]
RankBy = Literal["inclusive", "self"]


@dataclass(frozen=True)
class FuncShare:
    """One function (or comm, or caller) with its sample count and share."""

    name: str
    samples: int
    share: float  # samples / profile total


@dataclass(frozen=True)
class HotChain:
    """A caller path from a comm down to a hot function, root first."""

    comm: str
    frames: Stack  # outermost function first, the hot function last
    samples: int  # samples on this exact path (inclusive of the hot function)
    share: float  # samples / profile total
    self_samples: int  # of those, samples where the hot function is the leaf
    path_samples: tuple[int, ...]  # inclusive samples at each frame, root first
    func_fraction: float  # samples / all samples containing the hot function

    @property
    def func(self) -> str:
        return self.frames[-1] if self.frames else self.comm


@dataclass(frozen=True)
class DiffRow:
    """How one function, comm or chain changed between two profiles."""

    kind: Literal["function", "comm", "chain"]
    name: str  # a function or comm; for a chain, "comm;root;...;hot"
    samples_a: int
    samples_b: int
    share_a: float
    share_b: float

    @property
    def delta(self) -> float:
        """Change in inclusive share, b - a (a fraction: 0.05 = 5 points)."""
        return self.share_b - self.share_a


@dataclass
class _Node:
    samples: int = 0
    self_samples: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass
class Profile:
    """Counted comm-rooted stacks; `total` is the number of samples."""

    stacks: dict[Stack, int]
    total: int

    # --- construction -------------------------------------------------------

    @classmethod
    def from_counts(cls, folded: dict[str, int]) -> Profile:
        """From {"comm;f1;...;leaf": count} (what fold_perf_script returns)."""
        stacks: dict[Stack, int] = {}
        for line, count in folded.items():
            if count <= 0:
                continue
            key = tuple(line.split(";"))
            stacks[key] = stacks.get(key, 0) + count
        return cls(stacks=stacks, total=sum(stacks.values()))

    @classmethod
    def from_folded(cls, text: str) -> Profile:
        """From folded text, one `comm;f1;...;leaf count` line each."""
        return cls.from_counts(parse_folded(text))

    def to_counts(self) -> dict[str, int]:
        return {";".join(stack): count for stack, count in self.stacks.items()}

    def busy(self) -> Profile:
        """The same profile without idle samples, for comparing busy time only."""
        kept = {s: c for s, c in self.stacks.items() if not is_idle_stack(s)}
        return Profile(stacks=kept, total=sum(kept.values()))

    # --- per-function shares ------------------------------------------------

    def _share(self, samples: int) -> float:
        return samples / self.total if self.total else 0.0

    def comm_samples(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            counts[stack[0]] = counts.get(stack[0], 0) + count
        return counts

    def self_samples(self) -> dict[str, int]:
        """Samples per leaf function (stacks with no function are not counted)."""
        counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            if len(stack) > 1:
                counts[stack[-1]] = counts.get(stack[-1], 0) + count
        return counts

    def inclusive_samples(self) -> dict[str, int]:
        """Samples whose stack contains each function, once per sample."""
        counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            for func in set(stack[1:]):
                counts[func] = counts.get(func, 0) + count
        return counts

    def self_shares(self) -> dict[str, float]:
        return {k: self._share(v) for k, v in self.self_samples().items()}

    def inclusive_shares(self) -> dict[str, float]:
        return {k: self._share(v) for k, v in self.inclusive_samples().items()}

    def idle_share(self) -> float:
        idle = sum(c for s, c in self.stacks.items() if is_idle_stack(s))
        return self._share(idle)

    def top(
        self, n: int = 20, by: RankBy = "inclusive", *, include_unknown: bool = False
    ) -> list[FuncShare]:
        """The n functions with the largest inclusive (or self) share.

        `[unknown]` (user code perf could not symbolise) is left out unless
        asked for: it names no function, only a failed unwind.
        """
        if by not in ("inclusive", "self"):
            raise ValueError(f"by must be 'inclusive' or 'self', not {by!r}")
        counts = self.inclusive_samples() if by == "inclusive" else self.self_samples()
        if not include_unknown:
            counts.pop(UNKNOWN_FRAME, None)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        return [FuncShare(name, samples, self._share(samples)) for name, samples in ranked]

    def callers_of(self, func: str) -> list[FuncShare]:
        """Direct callers of `func` (a comm when it is outermost), once per sample."""
        counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            callers = {
                stack[i - 1]
                for i in range(1, len(stack))
                if stack[i] == func and stack[i - 1] != func
            }
            for caller in callers:
                counts[caller] = counts.get(caller, 0) + count
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [FuncShare(name, samples, self._share(samples)) for name, samples in ranked]

    # --- call tree and chains -----------------------------------------------

    def call_tree(self) -> _Node:
        """Root node whose children are comms, then functions, root first."""
        root = _Node()
        for stack, count in self.stacks.items():
            root.samples += count
            node = root
            for frame in stack:
                child = node.children.get(frame)
                if child is None:
                    child = node.children[frame] = _Node()
                child.samples += count
                node = child
            node.self_samples += count
        return root

    def path_samples(self, path: Stack, tree: _Node | None = None) -> int:
        """Samples whose stack starts with `path` (comm first)."""
        node: _Node = tree or self.call_tree()
        for frame in path:
            child = node.children.get(frame)
            if child is None:
                return 0
            node = child
        return node.samples

    def hottest_chains(
        self, n: int = 5, min_share: float = 0.01, *, include_idle: bool = False
    ) -> list[HotChain]:
        """The n heaviest caller paths that each still hold `min_share` of samples.

        A chain ends at the deepest frame of its path with at least `min_share`
        of all samples; below it the time spreads into smaller pieces. Chains
        never overlap, so their shares add up.
        """
        if not self.total:
            return []
        threshold = max(1, min_share * self.total)
        inclusive = self.inclusive_samples()
        found: list[HotChain] = []
        for comm, node in self.call_tree().children.items():
            if node.samples < threshold or (comm in IDLE_COMMS and not include_idle):
                continue
            self._collect_chains(comm, node, threshold, inclusive, found)
        found.sort(key=lambda c: (-c.samples, c.comm, c.frames))
        return found[:n]

    def _collect_chains(
        self,
        comm: str,
        comm_node: _Node,
        threshold: float,
        inclusive: dict[str, int],
        out: list[HotChain],
    ) -> None:
        """Depth-first to every deepest frame that still holds `threshold`."""
        todo: list[list[tuple[str, _Node]]] = [[(comm, comm_node)]]
        while todo:
            path = todo.pop()
            heavy = [(f, c) for f, c in path[-1][1].children.items() if c.samples >= threshold]
            if heavy:
                todo.extend([*path, item] for item in heavy)
            elif len(path) > 1:  # a comm alone says nothing about code
                out.append(self._chain(comm, path, inclusive))

    def _chain(
        self, comm: str, path: list[tuple[str, _Node]], inclusive: dict[str, int]
    ) -> HotChain:
        frames = tuple(name for name, _ in path[1:])
        end = path[-1][1]
        func_total = inclusive.get(frames[-1], end.samples) if frames else end.samples
        return HotChain(
            comm=comm,
            frames=frames,
            samples=end.samples,
            share=self._share(end.samples),
            self_samples=end.self_samples,
            path_samples=tuple(node.samples for _, node in path[1:]),
            func_fraction=end.samples / func_total if func_total else 0.0,
        )

    def format_chains(self, chains: list[HotChain] | None = None, n: int = 5) -> str:
        """Chains as a callee-first listing like `perf report --stdio -g`."""
        chains = self.hottest_chains(n) if chains is None else chains
        return format_chains(chains, self.total)


def is_idle_stack(stack: Stack) -> bool:
    """True for samples of the idle loop (swapper, or do_idle on the stack)."""
    return stack[0] in IDLE_COMMS or not IDLE_FRAMES.isdisjoint(stack)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def _share(fraction: float) -> str:
    """A share in a 7-column field, so the chains' and the diff's columns line up."""
    return format_share(fraction, 2).rjust(7)


def format_chain(chain: HotChain, total: int, rank: int | None = None) -> list[str]:
    """One chain: the hot function, then its callers down to the comm.

    The left column is the inclusive share of each frame on this path, so the
    caller where the time joins the chain stands out.
    """
    label = f"#{rank} " if rank is not None else ""
    self_share = chain.self_samples / total if total else 0.0
    lines = [
        _fit(f"{label}{_share(chain.share)}  [{chain.comm}]  {chain.func}", CHAIN_WIDTH_COLS),
        _fit(
            f"    self {format_share(self_share, 2)}; this path has "
            f"{format_share(chain.func_fraction, 1)} of {chain.func}",
            CHAIN_WIDTH_COLS,
        ),
        "         |",
    ]
    pairs = zip(reversed(chain.frames), reversed(chain.path_samples), strict=True)
    for i, (name, count) in enumerate(pairs):
        arrow = "--- " if i == 0 else "    "
        share = _share(count / total if total else 0.0)
        lines.append(_fit(f"{share}  {arrow}{name}", CHAIN_WIDTH_COLS))
    return lines


def format_chains(chains: list[HotChain], total: int) -> str:
    """Several chains, blank-line separated, every line at most 80 columns."""
    if not chains:
        return "no call chain holds enough samples\n"
    blocks = ["\n".join(format_chain(c, total, rank=i + 1)) for i, c in enumerate(chains)]
    return "\n\n".join(blocks) + "\n"


# --- comparing two profiles --------------------------------------------------


def _rows(
    kind: Literal["function", "comm", "chain"],
    counts_a: dict[str, int],
    counts_b: dict[str, int],
    a: Profile,
    b: Profile,
) -> list[DiffRow]:
    return [
        DiffRow(
            kind=kind,
            name=name,
            samples_a=counts_a.get(name, 0),
            samples_b=counts_b.get(name, 0),
            share_a=a._share(counts_a.get(name, 0)),
            share_b=b._share(counts_b.get(name, 0)),
        )
        for name in set(counts_a) | set(counts_b)
    ]


def _chain_rows(a: Profile, b: Profile, min_share: float) -> list[DiffRow]:
    paths = {
        (c.comm, *c.frames)
        for p in (a, b)
        for c in p.hottest_chains(n=1_000, min_share=min_share, include_idle=True)
    }
    tree_a, tree_b = a.call_tree(), b.call_tree()
    counts_a = {";".join(p): a.path_samples(p, tree_a) for p in paths}
    counts_b = {";".join(p): b.path_samples(p, tree_b) for p in paths}
    return _rows("chain", counts_a, counts_b, a, b)


def diff(
    a: Profile,
    b: Profile,
    *,
    limit: int | None = 50,
    min_abs_delta: float = 0.0,
    chain_min_share: float = 0.01,
    kinds: tuple[str, ...] = ("function", "comm", "chain"),
) -> list[DiffRow]:
    """Functions, comms and hot chains ranked by |change in inclusive share|.

    Chains are the hot chains of either profile, each measured in both, so a
    path that vanished in `b` shows up with a negative change.
    """
    rows: list[DiffRow] = []
    if "function" in kinds:
        rows += _rows("function", a.inclusive_samples(), b.inclusive_samples(), a, b)
    if "comm" in kinds:
        rows += _rows("comm", a.comm_samples(), b.comm_samples(), a, b)
    if "chain" in kinds:
        rows += _chain_rows(a, b, chain_min_share)
    rows = [r for r in rows if abs(r.delta) >= min_abs_delta]
    rows.sort(key=lambda r: (-abs(r.delta), r.kind, r.name))
    return rows if limit is None else rows[:limit]


def format_diff(rows: list[DiffRow], width: int = CHAIN_WIDTH_COLS) -> str:
    """Diff rows as a table: change, share in a and b, kind, name."""
    lines = [f"{'change':>8} {'a':>7} {'b':>7}  {'kind':<8} name"]
    for r in rows:
        name = r.name if r.kind != "chain" else _short_chain(r.name)
        change = format_change_pct(100 * r.delta, 2)
        line = f"{change:>8} {_share(r.share_a)} {_share(r.share_b)}  {r.kind:<8} {name}"
        lines.append(_fit(line, width))
    return "\n".join(lines) + "\n"


def _short_chain(folded: str) -> str:
    """`comm;...;caller;hot` as `comm: hot <- caller <- ...` (leaf first)."""
    parts = folded.split(";")
    return f"{parts[0]}: " + " <- ".join(reversed(parts[1:]))


def folded_diff_text(a: Profile, b: Profile) -> str:
    """Three columns, `stack count_a count_b`, the format difffolded writes."""
    counts_a, counts_b = a.to_counts(), b.to_counts()
    lines = [
        f"{stack} {counts_a.get(stack, 0)} {counts_b.get(stack, 0)}\n"
        for stack in sorted(set(counts_a) | set(counts_b))
    ]
    return "".join(lines)
