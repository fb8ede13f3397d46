"""command: the spec's own program run in the scratch directory, timed (benchmark.py)."""
