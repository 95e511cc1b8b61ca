"""Kernel swap as the baseline of the suite's kswap modes
(docs/benchmarks.md, "Kernel-swap modes"): a zram swap device the suite
sets up and tears down itself, and one memory cgroup per run (v1
memory.limit_in_bytes, or v2 memory.max) that holds the workload's memory
to what the matching disaggregated run's CPU server had.

Needs root, a memory cgroup controller, zram, and mkswap/swapon/swapoff.
unavailable() says which is missing; the driver then skips the modes.
"""
import os
import shutil
import signal
import subprocess
import time

V1 = "/sys/fs/cgroup/memory"
V2 = "/sys/fs/cgroup"
ZRAM_CONTROL = "/sys/class/zram-control"


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def cgroup_version():
    if os.path.exists(os.path.join(V1, "memory.limit_in_bytes")):
        return 1
    try:
        if "memory" in _read(os.path.join(V2, "cgroup.controllers")).split():
            return 2
    except OSError:
        pass
    return None


def _zram_present():
    if os.path.isdir(ZRAM_CONTROL) or os.path.isdir("/sys/block/zram0"):
        return True
    if shutil.which("modprobe"):
        subprocess.run(["modprobe", "zram", "num_devices=0"], capture_output=True)
    return os.path.isdir(ZRAM_CONTROL) or os.path.isdir("/sys/block/zram0")


def unavailable():
    """Why the kswap modes cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root (a memory cgroup and a swap device need it)"
    if cgroup_version() is None:
        return "no memory cgroup controller (%s or %s/cgroup.controllers)" % (V1, V2)
    if not _zram_present():
        return "no zram (module zram not loaded and not loadable)"
    for tool in ("mkswap", "swapon", "swapoff"):
        if not shutil.which(tool):
            return "%s not found" % tool
    return None


class Zram:
    """A zram swap device at the highest priority, so that the kernel swaps
    to it before any other device. A device of our own (hot_add) where the
    kernel allows it, else /dev/zram0 if nobody uses it."""

    def __init__(self, disksize):
        self.disksize = disksize
        self.dev = None
        self.owned = False
        self.on = False
        self.algorithm = None

    def setup(self):
        if os.path.exists(os.path.join(ZRAM_CONTROL, "hot_add")):
            self.dev = int(_read(os.path.join(ZRAM_CONTROL, "hot_add")))
            self.owned = True
        elif _read("/sys/block/zram0/initstate") == "0":
            self.dev = 0
        else:
            raise RuntimeError("/dev/zram0 is in use and zram-control cannot add a device")
        sysd = "/sys/block/zram%d" % self.dev
        algos = _read(os.path.join(sysd, "comp_algorithm")).replace("[", "").replace("]", "")
        if "lz4" in algos.split():
            _write(os.path.join(sysd, "comp_algorithm"), "lz4")
        self.algorithm = [a for a in _read(os.path.join(sysd, "comp_algorithm")).split()
                          if a.startswith("[")][0].strip("[]")
        _write(os.path.join(sysd, "disksize"), self.disksize)
        path = "/dev/zram%d" % self.dev
        for _ in range(50):  # udev may create the node a moment after hot_add
            if os.path.exists(path):
                break
            time.sleep(0.1)
        subprocess.run(["mkswap", path], check=True, capture_output=True)
        subprocess.run(["swapon", "-p", "32767", path], check=True, capture_output=True)
        self.on = True
        return self

    def teardown(self):
        if self.dev is None:
            return
        path = "/dev/zram%d" % self.dev
        if self.on:
            subprocess.run(["swapoff", path], capture_output=True)
            self.on = False
        try:
            _write("/sys/block/zram%d/reset" % self.dev, 1)
            if self.owned:
                _write(os.path.join(ZRAM_CONTROL, "hot_remove"), self.dev)
        except OSError:
            pass
        self.dev = None

    def describe(self):
        return "/dev/zram%d, %s, %d MiB, priority 32767" % (
            self.dev, self.algorithm, self.disksize >> 20)


def swap_counters():
    """Pages swapped in and out machine-wide (/proc/vmstat)."""
    out = {}
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k in ("pswpin", "pswpout"):
                out[k] = int(v)
    return out


class Cgroups:
    """One parent cgroup per driver (rheap-suite-PID), one child per run."""

    def __init__(self):
        self.version = cgroup_version()
        root = V1 if self.version == 1 else V2
        self.parent = os.path.join(root, "rheap-suite-%d" % os.getpid())
        self.children = []

    def setup(self):
        os.makedirs(self.parent, exist_ok=True)
        if self.version == 2:
            _write(os.path.join(os.path.dirname(self.parent), "cgroup.subtree_control"),
                   "+memory")
            _write(os.path.join(self.parent, "cgroup.subtree_control"), "+memory")
        elif os.path.exists(os.path.join(self.parent, "memory.use_hierarchy")):
            try:
                _write(os.path.join(self.parent, "memory.use_hierarchy"), 1)
            except OSError:
                pass
        return self

    def create(self, name, limit):
        """A fresh child cgroup; limit in bytes, None for no limit."""
        path = os.path.join(self.parent, name)
        if os.path.isdir(path):
            self.remove(path)
        os.mkdir(path)
        self.children.append(path)
        if limit is not None:
            _write(os.path.join(path, "memory.limit_in_bytes" if self.version == 1
                                else "memory.max"), limit)
        return path

    def join(self, path):
        """For preexec_fn: moves the calling (child) process into path."""
        _write(os.path.join(path, "cgroup.procs"), os.getpid())

    def peak(self, path):
        f = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int(_read(os.path.join(path, f)))
        except (OSError, ValueError):
            return None

    def oom_kills(self, path):
        f = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in _read(os.path.join(path, f)).splitlines():
                k, v = line.split()
                if k == "oom_kill":
                    return int(v)
        except (OSError, ValueError):
            pass
        return 0

    def stat(self, path, keys=("pgmajfault", "swap", "pgfault")):
        try:
            lines = _read(os.path.join(path, "memory.stat")).splitlines()
        except OSError:
            return {}
        return {k: int(v) for k, v in (l.split() for l in lines) if k in keys}

    def remove(self, path):
        """Kills what is left in the cgroup, then removes it."""
        for _ in range(100):
            try:
                pids = [int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()]
            except OSError:
                pids = []
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for _ in range(100):
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        if path in self.children:
            self.children.remove(path)

    def teardown(self):
        for c in list(self.children):
            self.remove(c)
        if os.path.isdir(self.parent):
            self.remove(self.parent)


class KernelSwap:
    """Both, set up together and torn down in reverse order: the driver
    calls teardown() from a finally clause, so Ctrl-C, SIGTERM and
    failures leave no swap device and no cgroup behind."""

    def __init__(self, disksize):
        self.zram = Zram(disksize)
        self.cgroups = Cgroups()

    def setup(self):
        try:
            self.cgroups.setup()
            self.zram.setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def teardown(self):
        self.cgroups.teardown()
        self.zram.teardown()
