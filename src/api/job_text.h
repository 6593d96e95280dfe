// Text of a job's fields that the CLI (`tiresias job`) and the dashboard
// show alike. Pure.
#ifndef TIRESIAS_API_JOB_TEXT_H_
#define TIRESIAS_API_JOB_TEXT_H_

#include <string>

#include "proto/tiresias.pb.h"

namespace tiresias {

// One line: the job's measured traffic profile, where it came from (an
// earlier job of its signature), or why there is none.
std::string FormatJobProfile(const v1::Job& job);

// Which nodes may run it, as its pending reasons name them: "GPU type
// a100, features ib&nvme, nodes n1,n2, not n3, 8 CPUs per GPU, 32G memory
// per GPU"; empty when any may.
std::string NodeFilterText(const v1::JobSpec& spec);

}  // namespace tiresias

#endif  // TIRESIAS_API_JOB_TEXT_H_
