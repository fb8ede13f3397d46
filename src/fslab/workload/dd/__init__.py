"""dd: a sequential copy from /dev/zero into a file, once or sustained (benchmark.py)."""
