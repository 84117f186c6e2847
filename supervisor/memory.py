"""How much memory a process of the pipeline holds: each actor reports its own in its heartbeat,
the supervisor adds its own to `nsccn status`."""

from __future__ import annotations

import resource


def peak_rss_kb() -> int:
    """This process's peak resident memory. Linux: VmHWM, which starts afresh at exec; ru_maxrss
    would carry the parent's size at fork over (a supervisor of 100 MB makes every actor "100 MB")."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
