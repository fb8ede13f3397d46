"""Guests: run points in qemu guests through virtme-ng, on another kernel or CPU count.

kernels (cache, user builds) and debian (the registry) find a kernel; config is
the typed guest description; vng builds virtme-ng's command line; probe picks
the accelerator; session boots one guest and runs many points in it; agent is
the in-guest side. docs/guests.md says how the runner calls them.
"""
