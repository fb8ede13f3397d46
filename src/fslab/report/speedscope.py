"""Export a profile in speedscope's own JSON format, for interactive browsing.

The format is speedscope's documented file format
(https://www.speedscope.app/file-format-schema.json, `FileFormat.File` in
speedscope's `src/lib/file-format-spec.ts`): a `shared.frames` table of names
and one `"sampled"` profile whose `samples` are stacks of frame indices, root
first, with one weight per stack. Folded stacks map onto it directly: one entry
per distinct stack, weighted by its count.
"""

from __future__ import annotations

import json

from fslab import __version__
from fslab.stacks.profile import Profile

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
EXPORTER = f"fslab@{__version__}"


def speedscope_document(
    profile: Profile, name: str, *, sample_period_s: float | None = None
) -> dict[str, object]:
    """The speedscope file as a dict (see `speedscope_json`)."""
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    samples: list[list[int]] = []
    weights: list[float] = []
    for stack, count in sorted(profile.stacks.items()):
        ids = []
        for frame in stack:
            i = index.get(frame)
            if i is None:
                i = index[frame] = len(frames)
                frames.append({"name": frame})
            ids.append(i)
        samples.append(ids)
        weights.append(count * sample_period_s if sample_period_s else count)
    return {
        "$schema": SCHEMA_URL,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": EXPORTER,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": "seconds" if sample_period_s else "none",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        ],
    }


def speedscope_json(profile: Profile, name: str, *, sample_period_s: float | None = None) -> str:
    """Speedscope JSON for `profile`; weights are samples, or CPU seconds when
    `sample_period_s` (1 / the sampling frequency) is given."""
    return json.dumps(speedscope_document(profile, name, sample_period_s=sample_period_s))
