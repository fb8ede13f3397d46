"""The host's steal taken out of comparisons across campaigns (analyze.slowdown), on a real
recording whose runs carry their steal: bench/spaced/steal8k (made by
bench/spaced/record.sh with base8k and cost8k1k, exported by bench/spaced/export.py;
outside bench/spaced/data because its spec is spaced8k's, whose older runs predate the
steal fact). `fslab series` takes it out by the same rule; bisection: test_steal_bisect."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.history.baselines import campaign_model, compare_with_noise, fit_model
from fslab.analyze.history.series import series_of
from fslab.analyze.noise.slowdown import STEAL, fit_slowdown, take_out_slowdown
from fslab.analyze.versus.comparisons import samples
from fslab.cli import app
from fslab.report.model import build_report
from fslab.report.plots import series_plot
from fslab.store.db import Store
from tests.spaced_support import imported, spaced_exports, without_steal

STEAL8K = Path(__file__).parent.parent / "bench" / "spaced" / "steal8k"
HEADLINE = "fio.write.iops"


def _exports(*, keep_steal: bool = True) -> list[dict]:
    out = spaced_exports(STEAL8K)
    return out if keep_steal else without_steal(out)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("steal") / "steal.db"
    with imported(path, _exports()):
        return path


@pytest.fixture(scope="module")
def store(db):
    with Store(db) as s:
        yield s


def _base(store: Store) -> list:
    return [load_campaign(store, c.id) for c in store.campaigns() if c.name.endswith("-base")]


def test_the_recordings_runs_slow_down_with_steal_within_campaigns(store) -> None:
    fit = fit_slowdown(_base(store))
    assert fit is not None and fit.metric == HEADLINE
    (term,) = fit.terms  # the recording predates the speed probe: steal alone
    assert term == fit.term(STEAL)
    assert -0.04 < term.slope < -0.01  # 1% to 4% of the IOPS a point of steal
    assert term.r < -0.5 and term.p_value < 1e-4


def test_taking_steal_out_narrows_the_drift_between_campaigns(store) -> None:
    base = _base(store)
    adjusted, fit = take_out_slowdown(base)
    assert fit is not None
    ((_, raw),) = fit_model(base, [HEADLINE], host="", fingerprint="").points.items()
    ((_, zero),) = fit_model(adjusted, [HEADLINE], host="", fingerprint="").points.items()
    assert zero.within_cv_pct < 0.8 * raw.within_cv_pct
    assert zero.between_var + zero.within_var < raw.between_var + raw.within_var


def test_a_comparison_says_it_took_steal_out_and_judges_at_zero_steal(store) -> None:
    base = _base(store)
    a, b = base[0], base[-1]
    (comparison,) = compare_with_noise(store, a.id, b.id)
    (note,) = [n for n in comparison.notes if n.startswith("steal taken out: write IOPS")]
    assert "a point of the host's steal within campaigns" in note
    model = campaign_model(store, a, b, [HEADLINE])
    assert model.slowdown is not None
    judged = [model.b.metrics[p.id][HEADLINE] for p in model.b.ok_points()]
    raw = [b.metrics[p.id][HEADLINE] for p in b.ok_points()]
    steal = [p.facts.host_cpu.steal_pct for p in b.ok_points()]
    assert all(j >= r for j, r in zip(judged, raw, strict=True))  # at zero steal: faster
    assert [j > r for j, r in zip(judged, raw, strict=True)] == [s > 0 for s in steal]


def test_runs_without_their_steal_leave_everything_as_it_was(tmp_path) -> None:
    with imported(tmp_path / "old.db", _exports(keep_steal=False)) as old:
        base = _base(old)
        assert take_out_slowdown(base)[1] is None
        (comparison,) = compare_with_noise(old, base[0].id, base[-1].id)
        assert not any(n.startswith("steal taken out") for n in comparison.notes)


def _series(db: Path, *args: str) -> str:
    """`fslab series spaced8k-base` on the recording (the base campaigns, oldest first)."""
    result = CliRunner().invoke(app, ["series", "spaced8k-base", "--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return result.output


def _medians(campaigns: list[CampaignData]) -> list[float]:
    """Each campaign's median headline (one point each here), in the order given."""
    return [
        statistics.median(values[HEADLINE])
        for data in campaigns
        for values in samples(data, [HEADLINE]).values()
    ]


def _shown(data: dict) -> list[float]:
    return [point["median"] for entry in data["campaigns"] for point in entry["points"]]


def _rows(text: str, campaigns: list[CampaignData]) -> list[str]:
    """The last cell of each campaign's row of the text table (its median)."""
    ids = {str(d.id) for d in campaigns}
    rows = [line.split() for line in text.splitlines()]
    return [words[-1] for words in rows if words and words[0] in ids]


def test_series_shows_the_headline_at_zero_steal_and_says_so(db, store) -> None:
    base = _base(store)
    adjusted, fit = take_out_slowdown(base)
    assert fit is not None
    data = json.loads(_series(db, "--json"))
    assert data["slowdown"] == fit.to_dict()
    assert _shown(data) == pytest.approx(_medians(adjusted))
    assert _shown(data) != pytest.approx(_medians(base))  # the recording's steal moves them
    # the change points are those of the series at zero steal (none in this recording)
    assert data["change_points"] == [] and series_of(adjusted, "base").changes == {}
    text = _series(db)
    assert " ".join(fit.describe().split()) in " ".join(text.split())
    assert all(len(line) <= 80 for line in text.splitlines())
    at_zero = [format_value(HEADLINE, v) for v in _medians(adjusted)]
    assert _rows(text, base) == at_zero
    assert at_zero != [format_value(HEADLINE, v) for v in _medians(base)]


def _series_svg(store: Store, campaign: CampaignData) -> str:
    """The report's series plot (its labels are text in the SVG)."""
    svg = series_plot(build_report(store, campaign.id))
    assert svg is not None
    return svg


def test_the_series_plot_says_its_medians_are_at_zero_steal(store) -> None:
    assert "IOPS at zero steal per campaign" in _series_svg(store, _base(store)[0])


def test_a_series_of_runs_without_their_steal_is_as_it_was(tmp_path) -> None:
    db = tmp_path / "old.db"
    with imported(db, _exports(keep_steal=False)) as old:
        base = _base(old)
        assert "steal" not in _series_svg(old, base[0])
    data = json.loads(_series(db, "--json"))
    assert data["slowdown"] is None
    assert _shown(data) == pytest.approx(_medians(base))
    text = _series(db)
    assert "steal" not in text
    assert _rows(text, base) == [format_value(HEADLINE, v) for v in _medians(base)]
