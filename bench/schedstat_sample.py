#!/usr/bin/env python3
# schedstat_sample.py — where a benchmark's processes spend their time,
# sampled from the kernel's own scheduler accounting: every 0.5 s, each
# thread's /proc/<pid>/task/<tid>/schedstat (time on a CPU, time waiting in
# a run queue, number of times it got a CPU) for the cluster's processes,
# pgbench and the helper.  No probe of ours is involved, so it reads the
# same with the probes on and off: bench/toggle_ab.sh uses it to split a
# transaction's time into CPU, run-queue wait and sleep.  Runs until killed.
#
#   bench/schedstat_sample.py POSTMASTER_PID OUTPUT
#
# Output: "T <epoch seconds>" before each sample, then one line per thread:
# "<tid> <class> <on-CPU ns> <run-queue ns> <slices>", class one of
# backend (a client connection: "[local]" or a host in its title), server
# (the postmaster and its other children), pgbench, helper (pg-tracer).
import os
import re
import sys
import time

postmaster, out_path = sys.argv[1], sys.argv[2]
client_title = re.compile(r"\[local\]|\(\d+\)")


def classify(pid):
    """the class of a process, "" for one we do not follow, None if gone"""
    try:
        with open("/proc/%s/stat" % pid) as f:
            stat = f.read()
        with open("/proc/%s/cmdline" % pid) as f:
            title = f.read().replace("\0", " ")
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    ppid = stat[stat.rindex(")") + 2:].split()[1]
    if comm == "pgbench":
        return "pgbench"
    if comm == "pg-tracer":
        return "helper"
    if pid == postmaster:
        return "server"
    if ppid != postmaster:
        return ""
    return "backend" if client_title.search(title) else "server"


def scan(known):
    """the processes to sample now; known keeps the classes that cannot
    change (a fresh postmaster child shows the postmaster's title until it
    sets its own, a forked shell may yet exec pgbench: those are asked
    again at the next scan)"""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        cls = known.get(pid) or classify(pid)
        if cls in ("backend", "pgbench", "helper"):
            known[pid] = cls
        if cls:
            found[pid] = cls
    return found


def sample(classes):
    lines = ["T %.6f" % time.time()]
    for pid in classes:
        try:
            for tid in os.listdir("/proc/%s/task" % pid):
                with open("/proc/%s/task/%s/schedstat" % (pid, tid)) as f:
                    lines.append("%s %s %s" % (tid, classes[pid], f.read().strip()))
        except OSError:
            pass				# exited between the scan and now
    return "\n".join(lines) + "\n"


def main():
    known = {}
    classes = {}
    last_scan = 0.0
    with open(out_path, "w") as out:
        while True:
            if time.time() - last_scan >= 2.0:
                classes = scan(known)
                last_scan = time.time()
            out.write(sample(classes))
            out.flush()
            time.sleep(0.5)


main()
