"""dbench: a file server's operations replayed from a loadfile by N clients (benchmark.py)."""
