"""sysbench fileio: prepared files written or read by threads, periodic fsync (benchmark.py)."""
