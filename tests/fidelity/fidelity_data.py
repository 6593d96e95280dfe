"""The fidelity cases' data, shared by fidelity_test.py and
scripts/run_original_sim.py: the trace recipes (tests/data/fidelity/
traces.csv), the reference table (reference.csv), the original-policy ->
our-policy mapping, and the statistics both sides are judged by.
"""

import csv
import hashlib
import io
import math
import os
import shutil
import subprocess
import sys

DATA_DIR = os.path.join('tests', 'data', 'fidelity')
TRACES_CSV = os.path.join(DATA_DIR, 'traces.csv')
REFERENCE_CSV = os.path.join(DATA_DIR, 'reference.csv')

# Policies of the released simulator (run_sim.py main()) and ours, with the
# original's --scheme. None: no counterpart here; recorded, not compared.
POLICY_MAP = [
    # (original --schedule, --scheme, ours)
    ('fifo', 'count', 'yarn-cs'),          # one_queue_fifo_sim_jobs
    ('fjf', 'count', 'fifo'),              # fit_first_sim_jobs
    ('sjf', 'count', 'smallest-first'),    # smallest_first_sim_jobs(False)
    ('shortest', 'count', 'srtf'),         # shortest_first_sim_jobs()
    ('shortest-gpu', 'count', 'srsf'),     # shortest_first_sim_jobs(True)
    ('dlas-gpu', 'count', 'tiresias-l'),   # dlas_sim_jobs(True)
    ('dlas-gpu-gittins', 'count', 'tiresias-g'),  # dlas_sim_jobs(True), ranks
    ('dlas-gpu-2', 'count', 'tiresias-l+knob2'),  # dlas_sim_jobs(True, 2)
    ('gandiva', 'gandiva', None),          # gandiva_sim_jobs(True, 1000)
]

# Our side of a row whose `ours` is not a bare policy name: the policy and
# the flags it runs with (its own `simulate` run).
VARIANTS = {'tiresias-l+knob2': ('tiresias-l', ['--promote-knob', '2']),
            'tiresias-g+orig': ('tiresias-g', ['--gittins-index', 'original'])}

# More of our labels compared with the same original rows: the released
# simulator's dlas-gpu-gittins against our Tiresias-G with its index
# (--gittins-index original) as well as with the paper's.
ALSO_COMPARED = {'tiresias-g': ['tiresias-g+orig']}


def our_run(label):
    """(policy, extra simulate flags) of a POLICY_MAP `ours` label."""
    return VARIANTS.get(label, (label, []))


# The job-size distribution the original's dlas-gpu-gittins reads from its
# working directory (parse_job_dist); ours gets it with --gittins-samples.
GITTINS_SAMPLES = os.path.join('data', 'yarn-gput1000.csv')


def read_commented_csv(path):
    """Rows (dicts) of a CSV whose leading '#' lines are comments."""
    with open(path, newline='') as f:
        lines = [l for l in f if not l.startswith('#')]
    return list(csv.DictReader(io.StringIO(''.join(lines))))


def build_trace(repo, recipe, out_path):
    """Writes the trace of a traces.csv row to out_path; returns its sha256.

    builder 'file' copies a repository file; 'philly_window' and
    'samples_trace' run those scripts (scripts/*.py) with the row's args.
    """
    builder, args = recipe['builder'], recipe['args'].split()
    if builder == 'file':
        shutil.copyfile(os.path.join(repo, args[0]), out_path)
    elif builder in ('philly_window', 'samples_trace'):
        script = os.path.join(repo, 'scripts', builder + '.py')
        subprocess.run([sys.executable, script] + args + ['--out', out_path],
                       cwd=repo, check=True, stderr=subprocess.DEVNULL)
    else:
        raise ValueError('%s: unknown builder %r' % (recipe['name'], builder))
    with open(out_path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def percentile(sorted_values, q):
    """Nearest rank: the ceil(q*n)-th smallest (as src/sim/metrics.cc)."""
    n = len(sorted_values)
    rank = min(max(int(math.ceil(q * n)), 1), n)
    return sorted_values[rank - 1]


def original_stats(job_csv):
    """Summary of the original's per-job log (log.py job_complete rows).

    jobs: rows; avg/p95 JCT: of the JCT column (end_time - submit_time);
    makespan: max end_time - min submit_time; preemptions: sum of preempt.
    """
    with open(job_csv, newline='') as f:
        rows = list(csv.DictReader(f))
    jct = sorted(int(r['JCT']) for r in rows)
    return {
        'jobs': len(rows),
        'avg_jct_s': sum(jct) / float(len(jct)),
        'p95_jct_s': percentile(jct, 0.95),
        'makespan_s': max(int(r['end_time']) for r in rows) -
                      min(int(r['submit_time']) for r in rows),
        'preemptions': sum(int(r['preempt']) for r in rows),
    }
