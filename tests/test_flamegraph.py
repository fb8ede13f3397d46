"""Flame graph SVGs and speedscope JSON exports."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from fslab.report.flamegraph import SVG_NS, diff_flamegraph_svg, flamegraph_svg
from fslab.report.speedscope import SCHEMA_URL, speedscope_json
from fslab.stacks.fold import fold_perf_script
from fslab.stacks.profile import Profile

NS = {"svg": SVG_NS}

# Required keys, from speedscope's file-format-schema.json (FileFormat.File,
# FileFormat.Frame, FileFormat.SampledProfile) and its ValueUnit enum.
FILE_REQUIRED = {"$schema", "profiles", "shared"}
SHARED_REQUIRED = {"frames"}
FRAME_REQUIRED = {"name"}
SAMPLED_REQUIRED = {"endValue", "name", "samples", "startValue", "type", "unit", "weights"}
VALUE_UNITS = {"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}


@pytest.fixture(scope="module")
def real_profile(request) -> Profile:
    path = request.config.rootpath / "tests" / "data" / "perf_script_fio_fsync.txt"
    return Profile.from_counts(fold_perf_script(io.StringIO(path.read_text())))


def _frames(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return root.findall(".//svg:g[@id='frames']/svg:g", NS)


def _assert_self_contained(svg: str) -> None:
    assert "http" not in svg.replace(SVG_NS, ""), "only the SVG namespace may be a URL"
    assert "href" not in svg
    assert "@import" not in svg and "url(" not in svg


def test_flamegraph_parses_with_one_title_per_frame(real_profile: Profile) -> None:
    svg = flamegraph_svg(real_profile, title="fio fsync <ext4>")
    frames = _frames(svg)
    assert len(frames) > 50
    for g in frames:
        assert len(g.findall("svg:title", NS)) == 1
        assert len(g.findall("svg:rect", NS)) == 1
    root = ET.fromstring(svg)
    all_titles = root.findall(".//svg:title", NS)
    assert len(all_titles) == len(frames)
    _assert_self_contained(svg)


def test_titles_carry_name_samples_and_share(real_profile: Profile) -> None:
    frames = _frames(flamegraph_svg(real_profile, title="t"))
    titles = [g.find("svg:title", NS).text or "" for g in frames]
    assert titles[0].startswith("all\n")
    assert f"{real_profile.total} samples, 100.00%" in titles[0]
    assert any(t.startswith("fio\n") for t in titles)
    assert all(re.search(r"\d+ samples, \d+\.\d\d%$", t) for t in titles)


def test_frame_widths_follow_samples() -> None:
    profile = Profile.from_folded("fio;a;b 3\nfio;a;c 1\n")
    frames = _frames(flamegraph_svg(profile, title="t", width_px=420))
    width = {
        (g.find("svg:title", NS).text or "").split("\n")[0]: float(
            g.find("svg:rect", NS).get("width", "0")
        )
        for g in frames
    }
    assert width["all"] == pytest.approx(400)  # 10 px of padding each side
    assert width["b"] == pytest.approx(3 * width["c"])
    assert width["a"] == pytest.approx(width["all"])


def test_markup_in_names_is_escaped() -> None:
    profile = Profile.from_folded("fio;std::map<int, a&b>::find 2\n")
    svg = flamegraph_svg(profile, title="a < b & c")
    titles = [g.find("svg:title", NS).text for g in _frames(svg)]
    assert any(t and t.startswith("std::map<int, a&b>::find") for t in titles)


def _fill_of(svg: str, name: str) -> tuple[int, int, int]:
    for g in _frames(svg):
        if (g.find("svg:title", NS).text or "").split("\n")[0] == name:
            fill = g.find("svg:rect", NS).get("fill", "")
            r, gr, b = (int(v) for v in re.findall(r"\d+", fill))
            return r, gr, b
    raise AssertionError(f"no frame {name}")


def test_diff_flamegraph_colours_growth_red_and_shrink_blue() -> None:
    a = Profile.from_folded("fio;entry;write;memcpy 8\nfio;entry;fsync;wait 2\n")
    b = Profile.from_folded("fio;entry;write;memcpy 2\nfio;entry;fsync;wait 8\n")
    svg = diff_flamegraph_svg(a, b, title="a vs b")
    _assert_self_contained(svg)
    red, blue, same = _fill_of(svg, "wait"), _fill_of(svg, "memcpy"), _fill_of(svg, "entry")
    assert red[0] == 255 and red[1] < 100 and red[2] < 100
    assert blue[2] == 255 and blue[0] < 100
    assert same[0] == same[1] == same[2]
    frames = _frames(svg)
    assert all(len(g.findall("svg:title", NS)) == 1 for g in frames)
    # sized by b: wait is 4 times as wide as memcpy
    widths = {
        (g.find("svg:title", NS).text or "").split("\n")[0]: float(
            g.find("svg:rect", NS).get("width", "0")
        )
        for g in frames
    }
    assert widths["wait"] == pytest.approx(4 * widths["memcpy"])


def test_diff_flamegraph_on_real_profiles(real_profile: Profile) -> None:
    svg = diff_flamegraph_svg(real_profile.busy(), real_profile, title="busy vs all")
    assert len(_frames(svg)) > 50


def test_speedscope_matches_schema(real_profile: Profile) -> None:
    doc = json.loads(speedscope_json(real_profile, "fio fsync"))
    assert doc.keys() >= FILE_REQUIRED
    assert doc["$schema"] == SCHEMA_URL
    assert doc["shared"].keys() >= SHARED_REQUIRED
    frames = doc["shared"]["frames"]
    assert all(f.keys() >= FRAME_REQUIRED and isinstance(f["name"], str) for f in frames)
    assert len({f["name"] for f in frames}) == len(frames)  # frames are shared, not repeated
    (profile,) = doc["profiles"]
    assert profile.keys() >= SAMPLED_REQUIRED
    assert profile["type"] == "sampled" and profile["unit"] in VALUE_UNITS
    assert len(profile["samples"]) == len(profile["weights"]) == len(real_profile.stacks)
    assert sum(profile["weights"]) == profile["endValue"] == real_profile.total
    comms = {f["name"] for f in frames if f["name"] in real_profile.comm_samples()}
    for stack in profile["samples"]:
        assert all(0 <= i < len(frames) for i in stack)
        assert frames[stack[0]]["name"] in comms  # root first


def test_speedscope_weights_in_seconds() -> None:
    profile = Profile.from_folded("fio;a 499\nfio;b 998\n")
    doc = json.loads(speedscope_json(profile, "x", sample_period_s=1 / 499))
    (p,) = doc["profiles"]
    assert p["unit"] == "seconds"
    assert p["endValue"] == pytest.approx(3.0)


def test_offcpu_flame_graph_says_what_its_width_means():
    profile = Profile.from_folded("fio;[D];do_fsync;jbd2_log_wait_commit 3\nfio;[S];poll 1\n")
    assert "blocked-thread samples (off-CPU)" in flamegraph_svg(profile, title="t", offcpu=True)
    assert "samples on CPU" in flamegraph_svg(profile, title="t")
