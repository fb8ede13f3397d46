"""Profile math on small folded profiles, and the views on a real capture."""

from __future__ import annotations

import io

import pytest

from fslab.stacks.fold import fold_perf_script
from fslab.stacks.profile import (
    CHAIN_WIDTH_COLS,
    Profile,
    diff,
    folded_diff_text,
    format_chains,
    format_diff,
)

# 20 samples: fio writes and fsyncs, a recursive kworker, the idle loop.
SMALL = """\
fio;entry;vfs_write;ext4_write;memcpy 6
fio;entry;vfs_write;ext4_write 2
fio;entry;fsync;jbd2_wait 2
kworker/*;kthread;rec;rec;rec 4
swapper;do_idle;halt 6
"""

# A VM-style profile: time spent with interrupts off shows up as self time of
# the irq-restore leaf, split over callers; the real work is under `hot`.
IRQ = """\
fio;entry;a;_raw_spin_unlock_irqrestore 3
fio;entry;b;_raw_spin_unlock_irqrestore 3
fio;entry;c;_raw_spin_unlock_irqrestore 3
fio;entry;hot;work;_raw_spin_unlock_irqrestore 1
fio;entry;hot;work 7
swapper;do_idle;halt 83
"""


@pytest.fixture
def small() -> Profile:
    return Profile.from_folded(SMALL)


def test_totals_and_round_trip(small: Profile) -> None:
    assert small.total == 20
    assert Profile.from_counts(small.to_counts()) == small


def test_inclusive_vs_self(small: Profile) -> None:
    inclusive, self_ = small.inclusive_shares(), small.self_shares()
    assert inclusive["entry"] == pytest.approx(10 / 20)
    assert inclusive["ext4_write"] == pytest.approx(8 / 20)
    assert self_["ext4_write"] == pytest.approx(2 / 20)
    assert self_["memcpy"] == inclusive["memcpy"] == pytest.approx(6 / 20)
    assert "entry" not in self_
    assert "fio" not in inclusive  # comms are not functions
    assert sum(small.self_samples().values()) == small.total


def test_recursion_counted_once_per_sample(small: Profile) -> None:
    assert small.inclusive_samples()["rec"] == 4
    assert small.self_samples()["rec"] == 4


def test_top_orders_by_share_then_name(small: Profile) -> None:
    assert [f.name for f in small.top(3)] == ["entry", "ext4_write", "vfs_write"]
    assert [f.name for f in small.top(2, by="self")] == ["halt", "memcpy"]
    assert small.top(1)[0].share == pytest.approx(0.5)
    with pytest.raises(ValueError):
        small.top(3, by="leaf")  # type: ignore[arg-type]


def test_top_leaves_out_unknown_unless_asked() -> None:
    profile = Profile.from_folded("python;[unknown];eval 5\npython;[unknown] 3\nfio;write 1\n")
    assert [f.name for f in profile.top(3)] == ["eval", "write"]
    assert profile.top(1, include_unknown=True)[0].name == "[unknown]"
    assert profile.top(1, by="self", include_unknown=True)[0].share == pytest.approx(5 / 9)


def test_callers_of(small: Profile) -> None:
    assert [(c.name, c.samples) for c in small.callers_of("ext4_write")] == [("vfs_write", 8)]
    # recursion: rec's callers are kthread, not rec itself
    assert [(c.name, c.samples) for c in small.callers_of("rec")] == [("kthread", 4)]
    # an outermost function is called by its comm
    assert [c.name for c in small.callers_of("entry")] == ["fio"]


def test_idle_and_busy(small: Profile) -> None:
    assert small.idle_share() == pytest.approx(6 / 20)
    busy = small.busy()
    assert busy.total == 14
    assert "swapper" not in busy.comm_samples()


def test_hottest_chain_ends_where_the_time_spreads(small: Profile) -> None:
    chains = small.hottest_chains(n=5, min_share=0.25)
    assert len(chains) == 1
    chain = chains[0]
    assert (chain.comm, chain.frames) == ("fio", ("entry", "vfs_write", "ext4_write", "memcpy"))
    assert chain.samples == 6 and chain.share == pytest.approx(0.3)
    assert chain.path_samples == (10, 8, 8, 6)
    assert chain.func_fraction == pytest.approx(1.0)
    with_idle = small.hottest_chains(n=5, min_share=0.25, include_idle=True)
    assert {c.func for c in with_idle} == {"memcpy", "halt"}


def test_chains_never_overlap(small: Profile) -> None:
    chains = small.hottest_chains(n=100, min_share=0.05, include_idle=True)
    assert sum(c.samples for c in chains) <= small.total
    paths = [(c.comm, *c.frames) for c in chains]
    for p in paths:
        for q in paths:
            assert p == q or p[: len(q)] != q


def test_irq_restore_leaf_does_not_lead_the_chains() -> None:
    """Self time ranks the irq-restore leaf first; chains point at the caller."""
    profile = Profile.from_folded(IRQ)
    assert profile.top(1, by="self")[0].name == "halt"
    busy_self = [f.name for f in profile.busy().top(2, by="self")]
    assert busy_self[0] == "_raw_spin_unlock_irqrestore"
    chains = profile.hottest_chains(n=3, min_share=0.05)
    assert chains[0].frames == ("entry", "hot", "work")
    assert chains[0].samples == 8


def test_format_chains_fits_80_columns() -> None:
    long_name = "std::vector<unsigned long, std::allocator<unsigned long> >::" + "x" * 150
    profile = Profile.from_folded(f"fio;entry;{long_name};memcpy 9\nfio;entry;other 1\n")
    text = format_chains(profile.hottest_chains(n=3, min_share=0.1), profile.total)
    assert "memcpy" in text and "--- memcpy" in text
    for line in text.splitlines():
        assert len(line) <= CHAIN_WIDTH_COLS, line


def test_format_chains_callee_first(small: Profile) -> None:
    lines = small.format_chains(small.hottest_chains(min_share=0.25)).splitlines()
    names = [ln.split()[-1] for ln in lines[3:]]
    assert names == ["memcpy", "ext4_write", "vfs_write", "entry"]
    assert lines[3].lstrip().startswith("30.00%")


def test_chains_on_real_capture(data_dir) -> None:
    text = (data_dir / "perf_script_fio_fsync.txt").read_text()
    profile = Profile.from_counts(fold_perf_script(io.StringIO(text)))
    chains = profile.hottest_chains(n=10, min_share=0.01)
    assert chains and all(c.share >= 0.01 for c in chains)
    assert chains == sorted(chains, key=lambda c: -c.samples)
    for line in format_chains(chains, profile.total).splitlines():
        assert len(line) <= CHAIN_WIDTH_COLS


def test_diff_ranks_by_change_in_inclusive_share() -> None:
    a = Profile.from_folded("fio;entry;ext4_write;memcpy 8\nfio;entry;fsync;jbd2_wait 2\n")
    b = Profile.from_folded(
        "fio;entry;ext4_write;memcpy 4\nfio;entry;fsync;jbd2_wait 12\nkworker/*;conv 4\n"
    )
    rows = diff(a, b, limit=None)
    top = rows[0]  # memcpy's path fell from 80% to 20%: the biggest change
    assert top.delta == pytest.approx(0.2 - 0.8)
    assert top.name in {"ext4_write", "memcpy", "fio;entry;ext4_write;memcpy"}
    by_name = {(r.kind, r.name): r for r in rows}
    assert by_name[("function", "jbd2_wait")].delta == pytest.approx(0.6 - 0.2)
    assert by_name[("chain", "fio;entry;fsync;jbd2_wait")].delta == pytest.approx(0.4)
    memcpy = by_name[("function", "memcpy")]
    assert memcpy.delta == pytest.approx(0.2 - 0.8) and memcpy.samples_b == 4
    assert by_name[("comm", "kworker/*")].delta == pytest.approx(0.2)
    assert by_name[("chain", "fio;entry;ext4_write;memcpy")].share_a == pytest.approx(0.8)
    assert by_name[("function", "entry")].delta == pytest.approx(-0.2)
    deltas = [abs(r.delta) for r in rows]
    assert deltas == sorted(deltas, reverse=True)
    assert all(abs(r.delta) >= 0.3 for r in diff(a, b, min_abs_delta=0.3))
    assert {r.kind for r in diff(a, b, kinds=("function",))} == {"function"}
    for line in format_diff(rows).splitlines():
        assert len(line) <= CHAIN_WIDTH_COLS


def test_folded_diff_text_three_columns() -> None:
    a = Profile.from_folded("x;f 3\nx;g 1\n")
    b = Profile.from_folded("x;g 5\ny;h 2\n")
    assert folded_diff_text(a, b) == "x;f 3 0\nx;g 1 5\ny;h 0 2\n"


def test_empty_profile_is_harmless() -> None:
    empty = Profile.from_folded("")
    assert empty.total == 0
    assert empty.top() == [] and empty.hottest_chains() == []
    assert empty.inclusive_shares() == {} and empty.idle_share() == 0.0


def test_collector_metrics_from_real_capture(data_dir) -> None:
    from fslab.collect.perf import profile_metrics

    text = (data_dir / "perf_script_fio_fsync.txt").read_text()
    profile = Profile.from_counts(fold_perf_script(io.StringIO(text)))
    metrics = profile_metrics(profile, top_n=30)
    assert metrics["profile.samples"] == profile.total
    assert 0.0 <= metrics["profile.idle_share"] <= 1.0
    for kind in ("inclusive", "self"):
        keys = [k for k in metrics if k.startswith(f"profile.{kind}.")]
        assert len(keys) == 30
        assert f"profile.{kind}.[unknown]" not in metrics
        assert all(0.0 < metrics[k] <= 1.0 for k in keys)
    assert "profile.inclusive.do_fsync" in metrics  # an fsync workload
    for key, value in metrics.items():
        if key.startswith("profile.self."):
            func = key.removeprefix("profile.self.")
            assert profile.inclusive_shares()[func] >= value
