"""What a benchmark says about the machine it ran on."""
import pathlib


def cpu_name():
    """The CPU model from /proc/cpuinfo ("unknown" if it has none)."""
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"
