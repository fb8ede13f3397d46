"""fs_mark: create (and fsync) many small files, one table row per iteration (benchmark.py)."""
