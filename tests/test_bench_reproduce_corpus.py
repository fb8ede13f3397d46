"""The corpus bench's one-line summary (bench/reproduce_corpus.py), the line the README
and the closing notes quote: it must count what the table shows."""

from __future__ import annotations

from bench.reproduce_corpus import _summary

EXPECTED = {
    "a.txt": {"sweep": {"axis": "numjobs"}, "direction": "down"},
    "b.txt": {"sweep": {"axis": "kernel"}, "direction": "down"},
    "c.txt": {"sweep": {"axis": "bs"}, "direction": "up"},
}


def test_the_static_summary_counts_reads_exits_and_kernel_variables():
    rows = [
        ("a.txt", "fio", "9/9", "yes: fio", "not run", "not run"),
        ("b.txt", "-", "5/9", "no (exit 2)", "not run", "not run"),
        ("c.txt", "dd", "8/9", "yes: dd", "not run", "not run"),
        ("d.txt", "fio", "-", "yes: fio", "not run", "not run"),
    ]
    assert _summary(rows, EXPECTED).strip() == (
        "4 reports; 3 with expectations: 1 read 9/9, 1 exit 2 saying why; 1 vary only the "
        "kernel or a commit"
    )


def test_the_run_summary_counts_the_directions_shown():
    rows = [
        ("a.txt", "fio", "9/9", "yes: fio", "yes (2.0 min)", "down: yes (x0.50, ...)"),
        ("b.txt", "fio", "9/9", "yes: fio", "yes (1.0 min)", "not here (kernels)"),
        ("c.txt", "dd", "9/9", "yes: dd", "failed (2: ...)", "-"),
    ]
    assert _summary(rows, EXPECTED).splitlines()[-1] == (
        "ran 3: 2 ran --quick, 1 showed the reported direction, 1 not here (kernels), 0 no sweep"
    )
