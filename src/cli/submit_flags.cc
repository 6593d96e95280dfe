// The flags `submit` and `run` share (submit_flags.h).
#include "cli/submit_flags.h"

#include "cli/cluster_client.h"
#include "cli/node_filter_flags.h"

namespace tiresias::cli {

void AddJobFlags(CLI::App* cmd, SubmitFlags* f) {
  AddMasterFlag(cmd, &f->master);
  cmd->add_option("--gpus", f->gpus,
                  "GPUs the job needs, all at once (required, but with "
                  "--file); 0 with --cpus: a CPU-only job");
  cmd->add_option("--nodes,-N", f->nodes,
                  "Run on exactly this many nodes, --gpus-per-node GPUs on "
                  "each (two of --gpus, --nodes and --gpus-per-node give the "
                  "third). Without: any spread the placement scheme picks");
  cmd->add_option("--gpus-per-node", f->gpus_per_node,
                  "GPUs on each of the job's nodes (alone: one node)");
  cmd->add_option("--tasks-per-node,--ntasks-per-node", f->tasks_per_node,
                  "Processes started on each node (default: one per GPU "
                  "there, as torchrun's --nproc-per-node). Each gets RANK, "
                  "LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and Slurm's "
                  "SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, ... and sees "
                  "all of the node's GPUs of the job")
      ->check(CLI::Range(1, 64));
  AddNodeFilterFlags(cmd, &f->filter);
  cmd->add_option("--name", f->name,
                  "Label for listings (default: the command's base name)");
  cmd->add_option("--checkpoint-dir", f->checkpoint_dir,
                  "Where the job checkpoints (default: chosen by the master)");
  // One value per --env: a greedy vector option would swallow the `--`.
  cmd->add_option("--env", f->env,
                  "KEY=VALUE for every task's environment; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--chdir", f->chdir,
                  "Directory the job's tasks start in, on every node "
                  "(default: the current one; a relative one is relative to "
                  "it). A node without it fails the start");
  cmd->add_option("--export", f->export_env,
                  "Which of your environment variables the job gets: ALL "
                  "(the default), NONE, or NAME[,NAME=VALUE...] (ALL,... to "
                  "add); never TIRESIAS_* nor what the agent sets "
                  "(CUDA_VISIBLE_DEVICES, RANK, HOME, ...); ALL also leaves "
                  "out HOSTNAME, PWD, SSH_*, DISPLAY and the like. At most "
                  "64 KiB. With --file: none unless given")
      ->allow_extra_args(false);
  cmd->add_option("--output", f->output,
                  "Also append the tasks' stdout (and stderr, without "
                  "--error) to this file, relative to --chdir; as Slurm's: "
                  "%j job id, %A array id, %a array index (0 outside an "
                  "array), %t rank (also %r); %R attempt; %% a '%'")
      ->allow_extra_args(false);
  cmd->add_option("--error", f->error,
                  "Also append the tasks' stderr to this file (the "
                  "placeholders of --output)")
      ->allow_extra_args(false);
  cmd->add_option("--retry-for", f->retry_for_seconds,
                  "Seconds to keep retrying a master that is unreachable or "
                  "does not answer (default 30)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time", f->time,
                  "Limit on the job's executed time (summed over its runs; "
                  "waiting does not count), as Slurm writes it: MM, MM:SS, "
                  "HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS. Past it the master "
                  "stops the job and it ends timeout");
  cmd->add_option("--begin", f->begin,
                  "Start no earlier than this (Slurm's --begin): now+N with "
                  "s, m, h, d or w (now+2h), HH:MM[:SS] (the next one), "
                  "midnight, noon, teatime, tomorrow, YYYY-MM-DD[THH:MM[:SS]] "
                  "(local time) or Unix seconds; `tiresias update JOB "
                  "--begin` moves it");
  cmd->add_option("--signal", f->signal,
                  "SIG[@SECONDS] (Slurm's --signal): send SIG (USR1, USR2, "
                  "TERM, INT, HUP, QUIT or ALRM) to every process of the job "
                  "SECONDS (default 60) before its --time limit, for it to "
                  "checkpoint or wrap up; once per run, at its start if less "
                  "is left")
      ->allow_extra_args(false);
  cmd->add_flag("--no-preempt", f->no_preempt,
                "The job cannot checkpoint: once started it is never "
                "preempted and keeps its GPUs until it ends (the master may "
                "refuse it: --max-no-preempt-gpus)");
  cmd->add_option("--vc,--account,-A", f->vc,
                  "The virtual cluster (team) it runs in: its quota, and "
                  "borrowing beyond it (default: yours; `tiresias vc list`)");
  cmd->add_option("--qos,-q", f->qos,
                  "Its priority level: jobs of a higher one run first and "
                  "may preempt lower ones (default none; `tiresias qos "
                  "list`)");
  cmd->add_option("--image", f->image,
                  "Run each task in an OCI container of this image, from the "
                  "node's image store (`podman load`, `podman import`) or a "
                  "root file system folder on the node (an absolute path): "
                  "as you, with its working and checkpoint dirs mounted, and "
                  "only its own GPUs' device nodes");
  cmd->add_option("--notify", f->notify,
                  "Tell of the job's events (Slurm's --mail-user): an "
                  "http(s):// URL the master POSTs signed JSON to (the "
                  "hosts its operator allows: master --notify-hosts), or "
                  "mailto:ADDRESS");
  cmd->add_option("--notify-on", f->notify_on,
                  "Which events, comma-separated (Slurm's --mail-type): "
                  "begin, end, fail, requeue, time_limit (90% of --time "
                  "used); default end")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--hold", f->hold,
                "Submit it held: it is not started until `tiresias release "
                "JOB`");
  cmd->add_option("--dependency,-d", f->dependency,
                  "Start only once other jobs ended, as Slurm writes it: "
                  "afterok:ID[:ID...] (they finished), afterany:ID (ended "
                  "in any state), afternotok:ID (ended failed, cancelled "
                  "or timeout), comma-separated (all must hold). A "
                  "dependency that can no longer hold ends the job failed")
      ->allow_extra_args(false);
  cmd->add_option("command", f->command, "The command to run, after --");
}

}  // namespace tiresias::cli
