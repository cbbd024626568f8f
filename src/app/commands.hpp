#pragma once
// The trainer's subcommands. Each takes the arguments after its name and returns
// the process exit code; errors are thrown as UserError/SystemError and reported
// by main().
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::app {

using Args = std::vector<std::string>;

int run_train(const Args& args);    // cmd_train.cpp
int run_plan(const Args& args);     // cmd_plan.cpp
int run_import(const Args& args);   // cmd_import.cpp
int run_synth(const Args& args);    // cmd_synth.cpp
int run_predict(const Args& args);  // cmd_predict.cpp
int run_bench(const Args& args);    // cmd_bench.cpp: dispatches to the bench_* below
int bench_loader(const Args& args);     // bench_loader.cpp
int bench_step(const Args& args);       // bench_step.cpp
int bench_allreduce(const Args& args);  // bench_allreduce.cpp
int bench_plans(const Args& args);      // bench_plans.cpp

// Version line and the compiled-in backends, for `trainer --version`.
std::string version_text();

}  // namespace trainer::app
