#!/usr/bin/env python3
"""Turns a list of job sizes (GPU-seconds) into an arrival trace.

data/yarn-gput1000.csv, yarn-gput5000.csv and yarn-gput10000.csv (from the
released Tiresias simulator) hold one column, `duration`: a past job's GPU
time in GPU-seconds. They are the job-size distribution the original's
Gittins policy learns from, not arrival traces: they have no GPU counts and
no submit times. This script makes one, deterministically, in the original
Tiresias trace format (job_id,num_gpu,submit_time,iterations,model_name,
duration,interval), so both simulators can replay it:

- Every sample is one job. Jobs arrive in an order shuffled by
  random.Random(seed) (the files are sorted by size).
- GPU count: drawn uniformly from [1, 1, 1, 2, 4, 8], the mix of
  data/60_job.csv (half 1-GPU jobs, a sixth each 2, 4 and 8).
- Duration: ceil(GPU-seconds / GPUs), whole seconds.
- Submit times: the first job at 0, then gaps drawn uniformly from the
  whole seconds [0, 2m], with m chosen so that the offered load, total
  GPU-seconds / (GPUS x mean gap x jobs), is LOAD.
- iterations = duration; model_name cycles through the original's nine
  models by job_id (neither matters with count placement); interval is the
  gap to the next submission.

Only integer draws (shuffle, randrange, choice) from Python's Mersenne
Twister are used, so the output is the same on every Python 3 and platform.

Usage:
  scripts/samples_trace.py --samples data/yarn-gput1000.csv --gpus 64 \
      --load 1.0 --seed 1 --out yarn1000.csv
"""

import argparse
import csv
import random
import sys

MODELS = ['vgg19', 'vgg16', 'vgg11', 'alexnet', 'resnet152', 'resnet101',
          'resnet50', 'inception4', 'inception3']
GPU_MIX = [1, 1, 1, 2, 4, 8]
HEADER = ['job_id', 'num_gpu', 'submit_time', 'iterations', 'model_name',
          'duration', 'interval']


def read_samples(path):
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        if 'duration' not in (reader.fieldnames or []):
            sys.exit('%s: expected a column "duration"' % path)
        sizes = []
        for line, row in enumerate(reader, start=2):
            try:
                v = int(row['duration'])
            except ValueError:
                sys.exit('%s:%d: expected whole GPU-seconds' % (path, line))
            if v <= 0:
                sys.exit('%s:%d: expected a positive size' % (path, line))
            sizes.append(v)
    if not sizes:
        sys.exit('%s: no samples' % path)
    return sizes


def make_jobs(sizes, gpus, load, seed):
    rng = random.Random(seed)
    sizes = list(sizes)
    rng.shuffle(sizes)
    jobs = []
    for size in sizes:
        g = rng.choice(GPU_MIX)
        jobs.append([g, -(-size // g)])  # ceil
    work = sum(g * d for g, d in jobs)
    mean_gap = work / float(gpus * load * len(jobs))
    hi = max(0, int(round(2 * mean_gap)))
    t = 0
    for i, job in enumerate(jobs):
        if i > 0:
            t += rng.randrange(hi + 1)
        job.append(t)
    return jobs  # [num_gpu, duration, submit]


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--samples', required=True,
                   help='CSV with a column duration (GPU-seconds)')
    p.add_argument('--gpus', type=int, required=True,
                   help='cluster size the load refers to')
    p.add_argument('--load', type=float, default=1.0,
                   help='offered load on --gpus GPUs')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--out', help='output CSV (default: stdout)')
    args = p.parse_args()
    if args.gpus <= 0 or not args.load > 0:
        sys.exit('--gpus and --load must be positive')
    jobs = make_jobs(read_samples(args.samples), args.gpus, args.load,
                     args.seed)
    out = open(args.out, 'w', newline='') if args.out else sys.stdout
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(HEADER)
    for i, (g, d, t) in enumerate(jobs):
        interval = jobs[i + 1][2] - t if i + 1 < len(jobs) else 0
        writer.writerow([i, g, t, d, MODELS[i % len(MODELS)], d, interval])
    if args.out:
        out.close()
    span = max(jobs[-1][2], 1)
    sys.stderr.write('%d jobs over %.1f days; offered load on %d GPUs %.2f\n'
                     % (len(jobs), span / 86400.0, args.gpus,
                        sum(g * d for g, d, _ in jobs) /
                        float(args.gpus * span)))


if __name__ == '__main__':
    main()
