"""Folded call stacks: perf script folded (fold), and the Profile read from them (profile).

Below both collect (the perf and off-CPU collectors write folded stacks) and
analyze (the diagnosis and `fslab profile` read them), so neither imports the other.
"""
