#!/usr/bin/env python3
"""Regenerates tests/data/fidelity/reference.csv from the released simulator.

Runs the released Tiresias simulator (SymbioticLab/Tiresias at 959f9b0,
simulator/run_sim.py, Python 2.7) on every trace and cluster of
tests/data/fidelity/traces.csv, for every policy it has that maps to one of
ours (and gandiva, recorded only), and writes what it measured. The test
(tests/fidelity/fidelity_test.py) reads only the result; nothing here runs
at test time.

  git clone https://github.com/SymbioticLab/Tiresias /tmp/tiresias-orig
  git -C /tmp/tiresias-orig checkout 959f9b0
  scripts/run_original_sim.py --orig /tmp/tiresias-orig --python python2.7 -j 2

Everything runs outside the repository: simulator/ is copied into a scratch
folder (--work) and run from there, as its README says:

  python2.7 run_sim.py --cluster_spec=SPEC --scheme=count \
      --trace_file=TRACE --schedule=POLICY --log_path=DIR

(--scheme=gandiva for gandiva, whose node sets need it). The original's
jobs.py imports numpy but uses it only in code that is commented out; when
the given Python lacks numpy, a one-function stand-in is put on PYTHONPATH.
The original's code is not changed.
"""

import argparse
import concurrent.futures
import csv
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tests', 'fidelity'))
import fidelity_data as fd  # noqa: E402

COMMIT = '959f9b0'
NUMPY_SHIM = ('# Stand-in: jobs.py imports numpy but uses it only in code '
              'that is commented out.\n'
              'def mean(xs):\n    xs = list(xs)\n'
              '    return sum(xs) / float(len(xs))\n')
FIELDS = ['trace', 'trace_sha256', 'cluster', 'gpus', 'orig_policy', 'scheme',
          'policy', 'jobs', 'avg_jct_s', 'p95_jct_s', 'makespan_s',
          'preemptions', 'orig_runtime_s']

HEADER = """\
# Reference figures of the released Tiresias simulator, for the agreement
# test tests/fidelity/fidelity_test.py. Regenerate with
# scripts/run_original_sim.py (its docstring says how); do not edit by hand.
#
# Simulator: github.com/SymbioticLab/Tiresias at commit {commit}
# (simulator/run_sim.py, run by {python}), generated {date}.
# Each row is one run, from a copy of simulator/ as working directory:
#   python2.7 run_sim.py --cluster_spec=tests/data/fidelity/<cluster>.csv
#     --scheme=<scheme> --trace_file=<trace> --schedule=<orig_policy>
#     --log_path=<dir>
# where <trace> is built from the repository as tests/data/fidelity/
# traces.csv says (trace_sha256 is the built file's sha256), and
# dlas-gpu-gittins reads its job-size distribution yarn-gput1000.csv (the
# same as data/yarn-gput1000.csv) from the working directory.
# policy: ours that the original's policy maps to (see
# tests/fidelity/fidelity_data.py POLICY_MAP); empty: none, recorded only.
# Our side runs: tiresias simulate --original-simulator --placement count
#   --gittins-samples data/yarn-gput1000.csv (K=3 queues at 3250, 7200
#   GPU-s, count placement, free preemption, no placement slowdown).
# Figures are computed from the original's per-job log <dir>/job.csv
# (log.py job_complete): jobs = rows; avg_jct_s = mean of column JCT
# (end_time - submit_time, whole seconds); p95_jct_s = nearest rank,
# the ceil(0.95 n)-th smallest JCT (as src/sim/metrics.cc); makespan_s =
# max end_time - min submit_time; preemptions = sum of column preempt (the
# job['preempt'] count: a running job left out of a scheduling pass).
# orig_runtime_s: the original's wall time for the run, on {host} that
# ran other work too ({jobs} runs at a time): indicative only.
"""


def check_commit(orig):
    try:
        head = subprocess.run(['git', '-C', orig, 'rev-parse', 'HEAD'],
                              capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head


def python_has_numpy(python):
    return subprocess.run([python, '-c', 'import numpy'],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def run_one(args, sim_dir, env, task):
    trace, spec, orig_policy, scheme, log_dir = task
    if os.path.exists(log_dir):
        shutil.rmtree(log_dir)
    cmd = [args.python, 'run_sim.py', '--cluster_spec=' + spec,
           '--scheme=' + scheme, '--trace_file=' + trace,
           '--schedule=' + orig_policy, '--log_path=' + log_dir]
    started = time.time()
    try:
        with open(log_dir + '.out', 'w') as out:
            rc = subprocess.run(cmd, cwd=sim_dir, env=env, stdout=out,
                                stderr=subprocess.STDOUT,
                                timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        return None, 'timed out after %d s' % args.timeout
    elapsed = time.time() - started
    if rc != 0:
        return None, 'exit %d (see %s.out)' % (rc, log_dir)
    return elapsed, None


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--orig', required=True,
                   help='clone of SymbioticLab/Tiresias (holds simulator/)')
    p.add_argument('--python', default='python2.7')
    p.add_argument('--work', help='scratch folder (default: a new temp one)')
    p.add_argument('--out', default=os.path.join(REPO, fd.REFERENCE_CSV))
    p.add_argument('-j', '--jobs', type=int, default=1,
                   help='runs in parallel')
    p.add_argument('--timeout', type=int, default=3600,
                   help='seconds a run may take before it is left out')
    p.add_argument('--gandiva-max-days', type=float, default=100,
                   help='skip gandiva where some job ends after this many '
                        'days even if it never waits: gandiva_sim_jobs steps '
                        'time 10 s at a time and would take hours')
    p.add_argument('--trace', action='append',
                   help='only these traces (repeatable); the rows of other '
                        'traces already in --out are kept')
    p.add_argument('--policy', action='append',
                   help='only these policies of the original (repeatable, '
                        'e.g. dlas-gpu-2); the rows of others already in '
                        '--out are kept')
    p.add_argument('--allow-other-commit', action='store_true')
    args = p.parse_args()

    head = check_commit(args.orig)
    if not (head and head.startswith(COMMIT)) and not args.allow_other_commit:
        sys.exit('%s is at %s, not %s (--allow-other-commit to go on)'
                 % (args.orig, head, COMMIT))
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix='orig-sim-'))
    sim_dir = os.path.join(work, 'simulator')
    if os.path.exists(sim_dir):
        shutil.rmtree(sim_dir)
    shutil.copytree(os.path.join(args.orig, 'simulator'), sim_dir)
    env = dict(os.environ)
    if not python_has_numpy(args.python):
        shim = os.path.join(work, 'shim')
        os.makedirs(shim, exist_ok=True)
        with open(os.path.join(shim, 'numpy.py'), 'w') as f:
            f.write(NUMPY_SHIM)
        env['PYTHONPATH'] = shim
    python_version = subprocess.run(
        [args.python, '--version'], capture_output=True,
        text=True).stderr.strip() or args.python

    recipes = fd.read_commented_csv(os.path.join(REPO, fd.TRACES_CSV))
    tasks, meta, skipped = [], [], []
    for recipe in recipes:
        if args.trace and recipe['name'] not in args.trace:
            continue
        trace = os.path.join(work, recipe['name'] + '.csv')
        sha = fd.build_trace(REPO, recipe, trace)
        with open(trace, newline='') as f:
            jobs = list(csv.DictReader(f))
        n_jobs = len(jobs)
        last_end = max(int(j['submit_time']) + int(j['duration'])
                       for j in jobs) / 86400.0
        for cluster in recipe['clusters'].split():
            spec = os.path.join(REPO, fd.DATA_DIR, cluster + '.csv')
            with open(spec) as f:
                row = f.read().splitlines()[1].split(',')
            gpus = int(row[0]) * int(row[1]) * int(row[2])
            for orig_policy, scheme, ours in fd.POLICY_MAP:
                if args.policy and orig_policy not in args.policy:
                    continue
                if orig_policy == 'gandiva' and \
                        last_end > args.gandiva_max_days:
                    skipped.append(
                        '# not run: %s on %s, gandiva: a job ends after day '
                        '%.0f even without waiting (--gandiva-max-days %g)\n'
                        % (recipe['name'], cluster, last_end,
                           args.gandiva_max_days))
                    continue
                log_dir = os.path.join(work, 'runs', '%s-%s-%s' % (
                    recipe['name'], cluster, orig_policy))
                os.makedirs(os.path.dirname(log_dir), exist_ok=True)
                tasks.append((trace, spec, orig_policy, scheme, log_dir))
                meta.append((recipe['name'], sha, n_jobs, cluster, gpus,
                             orig_policy, scheme, ours or ''))

    rows, notes = [], []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, args, sim_dir, env, t) for t in tasks]
        for task, m, fut in zip(tasks, meta, futures):
            elapsed, error = fut.result()
            name, sha, n_jobs, cluster, gpus, orig_policy, scheme, ours = m
            label = '%s on %s, %s' % (name, cluster, orig_policy)
            if error is None:
                stats = fd.original_stats(os.path.join(task[4], 'job.csv'))
                if stats['jobs'] != n_jobs:
                    error = 'finished %d of %d jobs' % (stats['jobs'], n_jobs)
            if error:
                notes.append('# left out: %s: %s\n' % (label, error))
                print('left out: %s: %s' % (label, error), file=sys.stderr)
                continue
            print('%s: %.1f s' % (label, elapsed), file=sys.stderr)
            rows.append([name, sha, cluster, gpus, orig_policy, scheme, ours,
                         stats['jobs'], '%.4f' % stats['avg_jct_s'],
                         stats['p95_jct_s'], stats['makespan_s'],
                         stats['preemptions'], '%.1f' % elapsed])

    if (args.trace or args.policy) and os.path.exists(args.out):
        # Keep what --out has for the traces and policies not rerun.
        def rerun(trace, policy):
            return ((not args.trace or trace in args.trace) and
                    (not args.policy or policy in args.policy))
        kept_notes, kept_rows = [], []
        for old in fd.read_commented_csv(args.out):
            if not rerun(old['trace'], old['orig_policy']):
                kept_rows.append([old[k] for k in FIELDS])
        with open(args.out) as f:
            for line in f:
                if not line.startswith(('# left out: ', '# not run: ')):
                    continue
                what = line.split(': ')[1]  # "TRACE on CLUSTER, POLICY..."
                trace = what.split(' on ')[0]
                policy = what.split(', ')[1].split(':')[0] \
                    if ', ' in what else ''
                if not rerun(trace, policy):
                    kept_notes.append(line)
        rows = kept_rows + rows
        notes = kept_notes + notes
    # Rows in traces.csv's order of traces and clusters, then POLICY_MAP's.
    order = {}
    for recipe in recipes:
        for cluster in recipe['clusters'].split():
            order[(recipe['name'], cluster)] = len(order)
    policy_order = [m[0] for m in fd.POLICY_MAP]
    rows.sort(key=lambda r: (order.get((r[0], r[2]), len(order)),
                             policy_order.index(r[4])))
    with open(args.out, 'w') as f:
        f.write(HEADER.format(
            commit=head or COMMIT, python=python_version,
            date=datetime.date.today().isoformat(),
            host='%d cores' % os.cpu_count(), jobs=args.jobs))
        for note in skipped + notes:
            f.write(note)
        f.write(','.join(FIELDS) + '\n')
        for r in rows:
            f.write(','.join(str(x) for x in r) + '\n')
    print('wrote %s (%d rows); runs in %s' % (args.out, len(rows), work),
          file=sys.stderr)


if __name__ == '__main__':
    main()
