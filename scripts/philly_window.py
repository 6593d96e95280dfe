#!/usr/bin/env python3
"""Cuts a window of the Philly trace into the original Tiresias trace format.

The output is the CSV the released Tiresias simulator (SymbioticLab/Tiresias,
simulator/run_sim.py) reads, and so does `tiresias simulate`:

    job_id,num_gpu,submit_time,iterations,model_name,duration,interval

Day 0 is midnight (on the trace's own clock) of the first submission in
data/philly.csv, 2017-09-04. The window holds every job submitted in
[day START, day START + DAYS). Jobs are ordered by submit time, ties in file
order; job_id counts from 0 in that order; submit times are seconds after the
window's first submission (so the first job arrives at 0). Times and
durations are whole seconds, as the original simulator keeps them. Philly
has no models or iteration counts: `iterations` is the duration (one
iteration a second) and `model_name` cycles through the original
simulator's nine models by job_id; neither changes a simulation with count
placement and no placement slowdown. `interval` is the gap to the next
submission (0 for the last job), as in the original's traces.

Usage:
  scripts/philly_window.py --start-day 56 --days 14 --out w.csv
  scripts/philly_window.py --scan --days 14 --gpus 512   # load per window

Standard library only; deterministic (same input, same bytes out).
"""

import argparse
import csv
import datetime
import os
import sys

# The original simulator's models (simulator/models.py, m_names).
MODELS = ['vgg19', 'vgg16', 'vgg11', 'alexnet', 'resnet152', 'resnet101',
          'resnet50', 'inception4', 'inception3']
HEADER = ['job_id', 'num_gpu', 'submit_time', 'iterations', 'model_name',
          'duration', 'interval']
DEFAULT_TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             '..', 'data', 'philly.csv')


def read_philly(path):
    """Returns [(submit_seconds, line, num_gpus, duration)], day-0 seconds."""
    rows = []
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        for line, row in enumerate(reader, start=2):
            try:
                t = datetime.datetime.strptime(row['timestamp'],
                                               '%Y-%m-%d %H:%M:%S')
                duration = float(row['duration'])
                gpus = int(row['num_gpus'])
            except (KeyError, ValueError) as e:
                sys.exit('%s:%d: %s' % (path, line, e))
            if duration != int(duration) or duration < 0 or gpus <= 0:
                sys.exit('%s:%d: expected whole non-negative seconds and a '
                         'positive GPU count' % (path, line))
            rows.append((t, line, gpus, int(duration)))
    if not rows:
        sys.exit('%s: no jobs' % path)
    first = min(r[0] for r in rows)
    day0 = datetime.datetime(first.year, first.month, first.day)
    return [(int((t - day0).total_seconds()), line, g, d)
            for t, line, g, d in rows]


def cut(rows, start_day, days, max_gpus=None):
    lo, hi = start_day * 86400, (start_day + days) * 86400
    jobs = sorted((r for r in rows if lo <= r[0] < hi),
                  key=lambda r: (r[0], r[1]))
    dropped = 0
    if max_gpus is not None:
        kept = [r for r in jobs if r[2] <= max_gpus]
        dropped = len(jobs) - len(kept)
        jobs = kept
    return jobs, dropped


def write_window(jobs, out):
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(HEADER)
    if not jobs:
        return
    base = jobs[0][0]
    for i, (t, _, gpus, duration) in enumerate(jobs):
        interval = jobs[i + 1][0] - t if i + 1 < len(jobs) else 0
        writer.writerow([i, gpus, t - base, duration, MODELS[i % len(MODELS)],
                         duration, interval])


def describe(jobs, gpus):
    if not jobs:
        return '0 jobs'
    span = max(jobs[-1][0] - jobs[0][0], 1)
    work = sum(g * d for _, _, g, d in jobs)
    text = '%d jobs over %.1f days, %.0f GPU-hours' % (
        len(jobs), span / 86400.0, work / 3600.0)
    for g in gpus:
        text += '; offered load on %d GPUs %.2f' % (g, work / float(g * span))
    return text


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--trace', default=DEFAULT_TRACE,
                   help='Philly CSV (timestamp,duration,num_gpus,...)')
    p.add_argument('--start-day', type=int, default=0,
                   help='first day of the window, counted from day 0')
    p.add_argument('--days', type=int, required=True, help='window length')
    p.add_argument('--max-gpus', type=int,
                   help='drop jobs needing more GPUs than this')
    p.add_argument('--gpus', type=int, action='append', default=[],
                   help='report the offered load on this many GPUs '
                        '(repeatable)')
    p.add_argument('--scan', action='store_true',
                   help='print every window of --days days and its load '
                        'instead of writing one')
    p.add_argument('--out', help='output CSV (default: stdout)')
    args = p.parse_args()
    if args.days <= 0 or args.start_day < 0:
        sys.exit('--days must be positive and --start-day non-negative')

    rows = read_philly(args.trace)
    if args.scan:
        last_day = max(r[0] for r in rows) // 86400
        for d in range(0, last_day - args.days + 2):
            jobs, _ = cut(rows, d, args.days, args.max_gpus)
            print('day %3d: %s' % (d, describe(jobs, args.gpus)))
        return
    jobs, dropped = cut(rows, args.start_day, args.days, args.max_gpus)
    if not jobs:
        sys.exit('no jobs in days [%d, %d)' % (args.start_day,
                                               args.start_day + args.days))
    if args.out:
        with open(args.out, 'w', newline='') as f:
            write_window(jobs, f)
    else:
        write_window(jobs, sys.stdout)
    note = ' (%d needing more than %d GPUs dropped)' % (
        dropped, args.max_gpus) if dropped else ''
    sys.stderr.write('days [%d, %d): %s%s\n' % (
        args.start_day, args.start_day + args.days,
        describe(jobs, args.gpus), note))


if __name__ == '__main__':
    main()
