"""fio: a job given as options, a pasted command line or a job file (benchmark.py)."""
