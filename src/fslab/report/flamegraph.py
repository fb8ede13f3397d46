"""Self-contained SVG flame graphs, plain and differential.

The layout follows Brendan Gregg's flame graphs: the root at the bottom, each
frame as wide as its inclusive samples, children sorted by name so two graphs
of similar profiles line up. The SVG references nothing outside itself (no
fonts, scripts or links); a short inline script adds hover details and click to
zoom, and everything is readable without it. Every drawn frame carries a
<title> tooltip with its name, samples and share.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from fslab.base.format import format_pct, format_points
from fslab.stacks.profile import Profile

FRAME_HEIGHT_PX = 16
FONT_SIZE_PX = 11
CHAR_WIDTH_PX = FONT_SIZE_PX * 0.6  # monospace advance, for label truncation
MIN_FRAME_WIDTH_PX = 0.5  # narrower frames (and their children) are not drawn
PAD_TOP_PX = 36
PAD_BOTTOM_PX = 30
PAD_SIDE_PX = 10
SVG_NS = "http://www.w3.org/2000/svg"


@dataclass
class _Frame:
    name: str
    samples: int = 0
    children: dict[str, _Frame] = field(default_factory=dict)


@dataclass(frozen=True)
class _Box:
    """One frame placed on the canvas."""

    name: str
    path: tuple[str, ...]
    depth: int
    x_px: float
    width_px: float
    samples: int


def _tree(profile: Profile, root_name: str = "all") -> _Frame:
    root = _Frame(root_name)
    for stack, count in profile.stacks.items():
        root.samples += count
        node = root
        for name in stack:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Frame(name)
            child.samples += count
            node = child
    return root


def _layout(root: _Frame, width_px: float) -> list[_Box]:
    """Place every frame wide enough to see; root first, depth-first."""
    if root.samples == 0:
        return []
    scale = (width_px - 2 * PAD_SIDE_PX) / root.samples
    boxes: list[_Box] = []
    todo: list[tuple[_Frame, tuple[str, ...], int, float]] = [(root, (), 0, PAD_SIDE_PX)]
    while todo:
        node, path, depth, x = todo.pop()
        width = node.samples * scale
        if width < MIN_FRAME_WIDTH_PX:
            continue
        boxes.append(_Box(node.name, path, depth, x, width, node.samples))
        child_x = x
        for name in sorted(node.children):
            child = node.children[name]
            todo.append((child, (*path, name), depth + 1, child_x))
            child_x += child.samples * scale
    return boxes


def _hot_colour(name: str) -> str:
    """A stable warm colour per name; comms and unknown frames stand apart."""
    if name == "[unknown]":
        return "rgb(190,190,190)"
    h = zlib.crc32(name.encode())
    v1, v2 = (h & 0xFF) / 255, ((h >> 8) & 0xFF) / 255
    return f"rgb({205 + int(50 * v2)},{int(230 * v1)},{int(55 * ((h >> 16) & 0xFF) / 255)})"


def _fit_label(name: str, width_px: float) -> str:
    chars = int((width_px - 6) / CHAR_WIDTH_PX)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


_STYLE = f"""
text {{ font-family: monospace; font-size: {FONT_SIZE_PX}px; fill: #000; }}
#title {{ font-size: 15px; }}
.f rect {{ stroke: #fff; stroke-width: 0.5; }}
.f:hover rect {{ stroke: #000; stroke-width: 1; }}
.f text {{ pointer-events: none; }}
.hide {{ display: none; }}
.dim rect {{ opacity: 0.5; }}
#reset {{ cursor: pointer; }}
"""

# Hover shows the tooltip text at the bottom; click zooms into a frame (its
# ancestors stay, dimmed, at full width); "Reset zoom" undoes it.
_SCRIPT = """
var frames = [], details, reset, W, PAD = %(pad)s, CW = %(cw)s;
function init() {
  details = document.getElementById("details");
  reset = document.getElementById("reset");
  W = +document.documentElement.getAttribute("width");
  var gs = document.getElementsByClassName("f");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.getElementsByTagName("rect")[0];
    var t = g.getElementsByTagName("title")[0].textContent;
    var f = {g: g, r: r, t: g.getElementsByTagName("text")[0],
             x: +r.getAttribute("x"), w: +r.getAttribute("width"),
             y: +r.getAttribute("y"), name: t.split("\\n")[0]};
    frames.push(f);
    g.onmouseover = (function (s) { return function () { details.textContent = s; }; })(
      t.replace(/\\n/g, "  "));
    g.onmouseout = function () { details.textContent = " "; };
    g.onclick = (function (f) { return function () { zoom(f); }; })(f);
  }
  reset.onclick = function () { show(null); };
}
function label(f, w) {
  var n = Math.floor((w - 6) / CW);
  return n < 3 ? "" : (f.name.length <= n ? f.name : f.name.slice(0, n - 2) + "..");
}
function place(f, x, w) {
  f.r.setAttribute("x", x); f.r.setAttribute("width", w);
  f.t.setAttribute("x", x + 3); f.t.textContent = label(f, w);
}
function show(z) {
  var s = z ? (W - 2 * PAD) / z.w : 1;
  reset.setAttribute("class", z ? "" : "hide");
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], inside = !z || (f.x >= z.x - 0.01 && f.x + f.w <= z.x + z.w + 0.01);
    f.g.setAttribute("class", "f");
    if (!z) { place(f, f.x, f.w); continue; }
    if (f.y > z.y && f.x <= z.x + 0.01 && f.x + f.w >= z.x + z.w - 0.01) {
      f.g.setAttribute("class", "f dim"); place(f, PAD, W - 2 * PAD);
    } else if (inside && f.y <= z.y) {
      place(f, PAD + (f.x - z.x) * s, f.w * s);
    } else {
      f.g.setAttribute("class", "f hide");
    }
  }
}
function zoom(f) { show(f); }
"""


def _svg(
    boxes: list[_Box],
    *,
    title: str,
    subtitle: str,
    width_px: int,
    colour: dict[tuple[str, ...], str],
    tooltip: dict[tuple[str, ...], str],
) -> str:
    max_depth = max((b.depth for b in boxes), default=0)
    height = PAD_TOP_PX + (max_depth + 1) * FRAME_HEIGHT_PX + PAD_BOTTOM_PX
    base_y = PAD_TOP_PX + max_depth * FRAME_HEIGHT_PX
    script = _SCRIPT % {"pad": PAD_SIDE_PX, "cw": CHAR_WIDTH_PX}
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="{SVG_NS}" version="1.1" width="{width_px}" height="{height}" '
        f'viewBox="0 0 {width_px} {height}" onload="init()">',
        f"<style>{_STYLE}</style>",
        f"<script><![CDATA[{script}]]></script>",
        f'<rect x="0" y="0" width="{width_px}" height="{height}" fill="#f8f8f4"/>',
        f'<text id="title" x="{width_px / 2:.1f}" y="20" text-anchor="middle">'
        f"{escape(title)}</text>",
        f'<text id="subtitle" x="{width_px / 2:.1f}" y="{PAD_TOP_PX - 6}" '
        f'text-anchor="middle">{escape(subtitle)}</text>',
        f'<text id="reset" class="hide" x="{PAD_SIDE_PX}" y="20">Reset zoom</text>',
        f'<text id="details" x="{PAD_SIDE_PX}" y="{height - 10}"> </text>',
        '<g id="frames">',
    ]
    for box in boxes:
        y = base_y - box.depth * FRAME_HEIGHT_PX
        out.append(
            f'<g class="f"><title>{escape(tooltip[box.path])}</title>'
            f'<rect x="{box.x_px:.2f}" y="{y}" width="{box.width_px:.2f}" '
            f'height="{FRAME_HEIGHT_PX - 1}" rx="2" fill={quoteattr(colour[box.path])}/>'
            f'<text x="{box.x_px + 3:.2f}" y="{y + FRAME_HEIGHT_PX - 4}">'
            f"{escape(_fit_label(box.name, box.width_px))}</text></g>"
        )
    out += ["</g>", "</svg>", ""]
    return "\n".join(out)


def _pct(part: int, total: int) -> float:
    return 100.0 * part / total if total else 0.0


def flamegraph_svg(
    profile: Profile, *, title: str, width_px: int = 1200, offcpu: bool = False
) -> str:
    """A flame graph of `profile` as one standalone SVG document.

    `offcpu`: the samples are blocked threads (sampled kernel stacks), not CPU time.
    """
    boxes = _layout(_tree(profile), width_px)
    colour, tooltip = {}, {}
    for box in boxes:
        colour[box.path] = "rgb(160,180,210)" if len(box.path) <= 1 else _hot_colour(box.name)
        tooltip[box.path] = (
            f"{box.name}\n{box.samples} samples, {format_pct(_pct(box.samples, profile.total), 2)}"
        )
    what = "blocked-thread samples (off-CPU)" if offcpu else "samples on CPU"
    subtitle = f"{profile.total} samples; width = share of {what}"
    return _svg(
        boxes, title=title, subtitle=subtitle, width_px=width_px, colour=colour, tooltip=tooltip
    )


def _path_samples(tree: _Frame, path: tuple[str, ...]) -> int:
    node: _Frame | None = tree
    for name in path:
        node = node.children.get(name) if node else None
    return node.samples if node else 0


def _diff_colour(delta: float, max_abs: float) -> str:
    """Red where the share grew, blue where it shrank, white-ish when unchanged."""
    if max_abs <= 0 or delta == 0:
        return "rgb(235,235,235)"
    fade = int(235 * (1 - min(1.0, abs(delta) / max_abs)))
    return f"rgb(255,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},255)"


def diff_flamegraph_svg(a: Profile, b: Profile, *, title: str, width_px: int = 1200) -> str:
    """Frames sized by `b`, coloured by the change in inclusive share from `a`.

    Shares are per profile (samples / total), so profiles of different length
    compare fairly; colour intensity is relative to the largest change shown.
    """
    tree_a, tree_b = _tree(a), _tree(b)
    boxes = _layout(tree_b, width_px)
    deltas: dict[tuple[str, ...], tuple[float, float]] = {}
    for box in boxes:
        share_a = _pct(_path_samples(tree_a, box.path), a.total)
        deltas[box.path] = (share_a, _pct(box.samples, b.total))
    max_abs = max((abs(sb - sa) for sa, sb in deltas.values()), default=0.0)
    colour, tooltip = {}, {}
    for box in boxes:
        share_a, share_b = deltas[box.path]
        colour[box.path] = _diff_colour(share_b - share_a, max_abs)
        tooltip[box.path] = (
            f"{box.name}\n{format_pct(share_a, 2)} -> {format_pct(share_b, 2)} "
            f"({format_points(share_b - share_a, 2)} points), {box.samples} samples in B"
        )
    gone = sum(c for s, c in a.stacks.items() if _path_samples(tree_b, s) == 0)
    subtitle = (
        f"A {a.total} samples, B {b.total}; width = B; red grew, blue shrank "
        f"(max {max_abs:.2f} points); {format_pct(_pct(gone, a.total), 1)} of A is on "
        "paths absent in B"
    )
    return _svg(
        boxes, title=title, subtitle=subtitle, width_px=width_px, colour=colour, tooltip=tooltip
    )
