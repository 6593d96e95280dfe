#include "api/job_spec.h"

#include "core/dependency.h"

namespace tiresias {

void JobSpecToProto(const JobRequest& spec, v1::JobSpec* out) {
  out->set_name(spec.name);
  out->set_user(spec.user);
  out->set_gpus(spec.num_gpus);
  out->mutable_command()->Assign(spec.command.begin(), spec.command.end());
  out->mutable_env()->Clear();
  for (const auto& [key, value] : spec.env) {
    v1::EnvVar* var = out->add_env();
    var->set_key(key);
    var->set_value(value);
  }
  out->set_checkpoint_dir(spec.checkpoint_dir);
  out->set_model(spec.model);
  out->set_workdir(spec.workdir);
  out->set_output(spec.output);
  out->set_error(spec.error);
  out->set_time_limit_seconds(spec.time_limit.count());
  out->set_no_preempt(spec.no_preempt);
  out->set_hold(spec.hold);
  out->mutable_dependencies()->Clear();
  for (const JobDependency& dep : spec.dependencies) {
    v1::JobDependency* d = out->add_dependencies();
    d->set_kind(static_cast<v1::DependencyKind>(dep.kind));
    d->set_job_id(dep.job_id);
  }
  if (!spec.array.empty() || spec.array.max_running != 0) {
    out->mutable_array()->set_indices(spec.array.indices);
    out->mutable_array()->set_max_running(spec.array.max_running);
  } else {
    out->clear_array();
  }
  out->set_nodes(spec.nodes);
  out->set_gpus_per_node(spec.gpus_per_node);
  out->set_tasks_per_node(spec.tasks_per_node);
  out->set_signal(spec.warn.signal);
  out->set_signal_seconds(spec.warn.signal != 0 ? spec.warn.seconds : 0);
  out->set_gpu_type(spec.gpu_type);
  out->set_constraint(spec.constraint);
  out->mutable_nodelist()->Assign(spec.nodelist.begin(), spec.nodelist.end());
  out->mutable_exclude()->Assign(spec.exclude.begin(), spec.exclude.end());
  out->set_cpus_per_gpu(spec.cpus_per_gpu);
  out->set_mem_per_gpu_mib(spec.mem_per_gpu_mib);
  out->set_exclusive(spec.exclusive);
  out->set_cpus(spec.cpus);
  out->set_mem_mib(spec.mem_mib);
  out->set_vc(spec.vc);
  out->set_qos(spec.qos);
  out->set_io(static_cast<v1::IoMode>(spec.io));
  out->set_io_grace_seconds(spec.io_grace_seconds);
  out->set_image(spec.image);
  out->set_notify(spec.notify);
  out->mutable_notify_on()->Assign(spec.notify_on.begin(),
                                   spec.notify_on.end());
  out->set_begin_time(spec.begin.count());
}

JobRequest JobSpecFromProto(const v1::JobSpec& spec) {
  JobRequest out;
  out.name = spec.name();
  out.user = spec.user();
  out.num_gpus = spec.gpus();
  out.command.assign(spec.command().begin(), spec.command().end());
  // A name given twice: the last one counts, as it would in a proto map.
  for (const v1::EnvVar& var : spec.env()) out.env[var.key()] = var.value();
  out.checkpoint_dir = spec.checkpoint_dir();
  out.model = spec.model();
  out.workdir = spec.workdir();
  out.output = spec.output();
  out.error = spec.error();
  out.time_limit = Seconds{spec.time_limit_seconds()};
  out.no_preempt = spec.no_preempt();
  out.hold = spec.hold();
  // An unknown kind becomes 0, which ValidateJobRequest refuses.
  for (const v1::JobDependency& dep : spec.dependencies()) {
    const int kind = IsDependencyKind(dep.kind()) ? dep.kind() : 0;
    out.dependencies.push_back(
        {static_cast<DependencyKind>(kind), dep.job_id()});
  }
  out.array.indices = spec.array().indices();
  out.array.max_running = spec.array().max_running();
  out.nodes = spec.nodes();
  out.gpus_per_node = spec.gpus_per_node();
  out.tasks_per_node = spec.tasks_per_node();
  if (spec.signal() != 0) {
    out.warn = {.signal = spec.signal(), .seconds = spec.signal_seconds()};
  }
  out.gpu_type = spec.gpu_type();
  out.constraint = spec.constraint();
  out.nodelist.assign(spec.nodelist().begin(), spec.nodelist().end());
  out.exclude.assign(spec.exclude().begin(), spec.exclude().end());
  out.cpus_per_gpu = spec.cpus_per_gpu();
  out.mem_per_gpu_mib = spec.mem_per_gpu_mib();
  out.exclusive = spec.exclusive();
  out.cpus = spec.cpus();
  out.mem_mib = spec.mem_mib();
  out.vc = spec.vc();
  out.qos = spec.qos();
  out.io = spec.io();  // an unknown mode is refused by ValidateJobRequest
  out.io_grace_seconds = spec.io_grace_seconds();
  out.image = spec.image();
  out.notify = spec.notify();
  out.notify_on.assign(spec.notify_on().begin(), spec.notify_on().end());
  out.begin = Seconds{spec.begin_time()};
  return out;
}

}  // namespace tiresias
