"""fio's [workload] table."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fslab.base.units import parse_duration_s
from fslab.base.vocab import ScalarValue
from fslab.workload.base import WorkloadSpec

MAX_NUMJOBS = 4096  # fio's compiled-in REAL_MAX_JOBS


class FioWorkload(WorkloadSpec):
    """A fio job given as options, a pasted command line, or a job file."""

    kind: Literal["fio"]
    options: dict[str, ScalarValue | None] = Field(default_factory=dict)
    command_line: str | None = None
    job_file: str | None = None
    allow_commands: bool = False  # opt-in: options that run programs or act outside the scratch

    @model_validator(mode="after")
    def _one_source(self) -> FioWorkload:
        sources = {
            "workload.options": bool(self.options),
            "workload.command_line": self.command_line is not None,
            "workload.job_file": self.job_file is not None,
        }
        given = [name for name, present in sources.items() if present]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of workload.options, workload.command_line or "
                f"workload.job_file (given: {', '.join(given) or 'none'})"
            )
        return self

    @model_validator(mode="after")
    def _run_shaping_options_ok(self) -> FioWorkload:
        """fio accepts numjobs=0 or 10^9 and runs runtime=0 forever; refuse them here."""
        numjobs = self.options.get("numjobs")
        if numjobs is not None:
            text = str(numjobs)
            if isinstance(numjobs, bool | float) or not text.isdigit():
                raise ValueError(f"workload.options.numjobs: must be an integer, not {numjobs!r}")
            if not 1 <= int(text) <= MAX_NUMJOBS:
                raise ValueError(
                    f"workload.options.numjobs: must be from 1 to {MAX_NUMJOBS} (fio's limit)"
                )
        runtime = self.options.get("runtime")
        if runtime is not None:
            try:
                seconds = parse_duration_s(runtime if isinstance(runtime, str) else str(runtime))
            except ValueError as exc:
                raise ValueError(f"workload.options.runtime: {exc}") from None
            if seconds <= 0:
                raise ValueError("workload.options.runtime: must be greater than 0")
        return self
