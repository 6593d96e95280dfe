#!/usr/bin/env python3
"""Honest evaluation of `tiresias tune` on a Philly-format trace.

Rolling over the trace: tune on the 4 weeks before T (the search never sees
anything after T), then replay weeks T..T+4 under the tuned settings, under
the paper's defaults (--thresholds 3600, no PROMOTEKNOB, stable order) and
under SRSF (which knows every duration). The replay covers the 8 weeks with
the first 4 as warm-up (queues already full at T), so only jobs submitted
from T on are counted. T steps by --step-weeks.

Usage: bench/tune_rolling.py TIRESIAS TRACE CLUSTER[,CLUSTER...]
       [--step-weeks 2] [--threads 2] [--json OUT]
"""
import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import tempfile

WEEK_H = 168.0


def load(trace):
    with open(trace, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    t0 = None
    timed = []
    for row in rows:
        if not row:
            continue  # a blank line
        t = datetime.datetime.strptime(row[0], "%Y-%m-%d %H:%M:%S").timestamp()
        timed.append((t, row))
        t0 = t if t0 is None else min(t0, t)
    return header, [((t - t0) / 3600.0, row) for t, row in timed]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def summary(sim, policy):
    for p in sim["policies"]:
        if p["name"] == policy:
            return {"avg_jct_h": p["avg_jct_s"] / 3600,
                    "p95_jct_h": p["p95_jct_s"] / 3600,
                    "max_slowdown": p["fairness"]["max_slowdown"],
                    "jobs": p["jobs"]}
    raise KeyError(policy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tiresias")
    ap.add_argument("trace")
    ap.add_argument("clusters")
    ap.add_argument("--tune-weeks", type=float, default=4)
    ap.add_argument("--eval-weeks", type=float, default=4)
    ap.add_argument("--step-weeks", type=float, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    header, jobs = load(a.trace)
    last = max(h for h, _ in jobs)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for cluster in a.clusters.split(","):
            t = a.tune_weeks * WEEK_H
            while t + a.eval_weeks * WEEK_H <= last + 1e-9:
                lo, hi = t - a.tune_weeks * WEEK_H, t + a.eval_weeks * WEEK_H
                window = [(h, r) for h, r in jobs if lo <= h < hi]
                first = min(h for h, _ in window)
                path = os.path.join(tmp, "window.csv")
                with open(path, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(header)
                    for _, r in window:
                        w.writerow(r)
                before = [h for h, _ in window if h < t]
                tuned = run_json([
                    a.tiresias, "tune", "--trace", path, "--cluster", cluster,
                    "--window", "%dh" % round(t - lo), "--end-hours",
                    "%.6f" % (max(before) - first), "--threads",
                    str(a.threads), "--json"])
                flags = tuned["chosen"]["flags"].split()
                warmup = "%.6f" % (t - first)
                base = [a.tiresias, "simulate", "--trace", path, "--cluster",
                        cluster, "--warmup", warmup, "--json"]
                default = run_json(base + ["--policy", "tiresias-l,srsf"])
                tuned_sim = run_json(base + ["--policy", "tiresias-l"] + flags)
                row = {"cluster": cluster, "tune_from_h": lo, "t_h": t,
                       "eval_to_h": hi, "tune_jobs": len(before),
                       "chosen": tuned["chosen"]["flags"],
                       "predicted_gain": tuned["predicted_gain"],
                       "default": summary(default, "tiresias-l"),
                       "tuned": summary(tuned_sim, "tiresias-l"),
                       "srsf": summary(default, "srsf")}
                results.append(row)
                d, u, s = row["default"], row["tuned"], row["srsf"]
                print("%-5s weeks %4.1f-%4.1f: %-58s avg %6.2f -> %6.2f h "
                      "(%+5.1f%%; predicted %+5.1f%%), p95 %6.2f -> %6.2f h, "
                      "max slowdown %7.1f -> %6.1f; SRSF %6.2f h (tuned %.2fx)"
                      % (cluster, t / WEEK_H, hi / WEEK_H, row["chosen"],
                         d["avg_jct_h"], u["avg_jct_h"],
                         100 * (1 - u["avg_jct_h"] / d["avg_jct_h"]),
                         100 * row["predicted_gain"], d["p95_jct_h"],
                         u["p95_jct_h"], d["max_slowdown"], u["max_slowdown"],
                         s["avg_jct_h"], u["avg_jct_h"] / s["avg_jct_h"]),
                      flush=True)
                t += a.step_weeks * WEEK_H
    for cluster in a.clusters.split(","):
        rows = [r for r in results if r["cluster"] == cluster]
        if not rows:
            continue
        total = lambda k, m: sum(r[k][m] * r[k]["jobs"] for r in rows) / sum(
            r[k]["jobs"] for r in rows)
        print("%-5s all %d evaluation windows (job-weighted): avg JCT default "
              "%.2f h, tuned %.2f h (%+.1f%%), SRSF %.2f h (tuned %.2fx SRSF); "
              "worst max slowdown default %.1f, tuned %.1f"
              % (cluster, len(rows), total("default", "avg_jct_h"),
                 total("tuned", "avg_jct_h"),
                 100 * (1 - total("tuned", "avg_jct_h") /
                        total("default", "avg_jct_h")),
                 total("srsf", "avg_jct_h"),
                 total("tuned", "avg_jct_h") / total("srsf", "avg_jct_h"),
                 max(r["default"]["max_slowdown"] for r in rows),
                 max(r["tuned"]["max_slowdown"] for r in rows)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
