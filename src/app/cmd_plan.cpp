// `trainer plan`: what a run would do on every rank (node, device, per-rank batch
// sizes, workers, learning rate, warnings), without touching data or a GPU.
//   mpirun -np 4 ./trainer plan --config run.cfg        the launched world
//   ./trainer plan --nprocs 2                           self-spawned ranks
//   ./trainer plan --nodes 2 --gpus-per-node 4          a cluster that is not launched
#include <iostream>  // std::cout

#include <boost/program_options.hpp>  // options_description

#include "app/commands.hpp"          // Args, run_plan
#include "app/config_parse.hpp"      // parse_command_line
#include "compute/backend.hpp"      // make_cpu_backend (the backbone's description only)
#include "model/backbone_registry.hpp"  // make_backbone: the backbone's stride
#include "model/heatmap_head.hpp"       // HeatmapHead::layer_count
#include "model/parameter_store.hpp"    // ParameterStore
#include "runtime/launch.hpp"       // Launch: MPI session + agreed plan
#include "runtime/plan_report.hpp"  // plan_text, plan_json for hypothetical plans
#include "runtime/run_plan.hpp"     // plan_hypothetical
#include "util/error.hpp"           // UserError

namespace po = boost::program_options;

namespace trainer::app {
namespace {

po::options_description plan_options() {
  po::options_description own("plan options", 110, 55);
  own.add_options()
      ("json", "print the plan as JSON (fields: docs/LAUNCH.md)")
      ("nprocs", po::value<int>()->default_value(1)->value_name("N"),
       "without a launcher: spawn N-1 more ranks of this process (MPI_Comm_spawn)")
      ("nodes", po::value<int>()->value_name("N"),
       "plan a cluster that is not launched: N nodes (no MPI is started; at most 65536 ranks in all)")
      ("gpus-per-node", po::value<int>()->default_value(0)->value_name("N"),
       "with --nodes: GPUs per node (one rank each)")
      ("ranks-per-node", po::value<int>()->default_value(0)->value_name("N"),
       "with --nodes: ranks per node (default: one per GPU, or 1 without GPUs)")
      ("cores-per-node", po::value<int>()->default_value(0)->value_name("N"),
       "with --nodes: CPU cores per node (default: this machine's)")
      ("cpus-per-task", po::value<int>()->default_value(0)->value_name("N"),
       "with --nodes: plan as under #SBATCH --cpus-per-task=N");
  return own;
}

int plan_hypothetical_cluster(const CommandLine& cl, bool json) {
  runtime::ClusterShape shape;
  shape.nodes = cl.own["nodes"].as<int>();
  shape.gpus_per_node = cl.own["gpus-per-node"].as<int>();
  shape.ranks_per_node = cl.own["ranks-per-node"].as<int>();
  shape.cores_per_node = cl.own["cores-per-node"].as<int>();
  shape.cpus_per_task = cl.own["cpus-per-task"].as<int>();
  const auto plans = runtime::plan_hypothetical(cl.config, shape);
  std::vector<std::string> parts;
  for (const auto& plan : plans) {
    parts.push_back(json ? runtime::rank_object_json(plan.rank) : runtime::rank_row_text(plan.rank));
  }
  std::cout << (json ? runtime::plan_json(plans.front(), parts, true) : runtime::plan_text(plans.front(), parts));
  return 0;
}

}  // namespace

int run_plan(const Args& args) {
  const CommandLine cl = parse_command_line("plan", args, plan_options());
  if (cl.help) return 0;
  const bool json = cl.own.count("json") > 0;
  const bool hypothetical = cl.own.count("nodes") > 0;
  // Options of the hypothetical planner mean nothing for a launched world, and the other way round.
  for (const char* option : {"gpus-per-node", "ranks-per-node", "cores-per-node", "cpus-per-task"}) {
    if (!hypothetical && !cl.own[option].defaulted()) {
      throw UserError(std::string("--") + option + " describes a cluster that is not launched and needs --nodes",
                      "e.g. `trainer plan --nodes 2 --gpus-per-node 4`; a launched world reports its own sizes");
    }
  }
  if (hypothetical && !cl.own["nprocs"].defaulted()) {
    throw UserError("--nprocs starts ranks; --nodes plans a cluster without starting any",
                    "use one of them: --nodes N --ranks-per-node M plans N x M ranks");
  }
  // What `train` refuses when it builds the model (a downsample factor the backbone's
  // stride leaves no head for) is refused here too. The backbone only registers its
  // tensors' names and shapes: nothing is allocated.
  {
    auto cpu = compute::make_cpu_backend(1);
    model::ParameterStore store(*cpu);
    const auto backbone = model::make_backbone(cl.config.model.backbone, store, "backbone.",
                                                {cl.config.data.image_resize_height, cl.config.data.image_resize_width});
    model::HeatmapHead::layer_count(cl.config.data.downsample_factor, backbone->stride());
  }
  if (hypothetical) return plan_hypothetical_cluster(cl, json);

  Args child_args{"plan"};
  child_args.insert(child_args.end(), args.begin(), args.end());
  const runtime::Launch launch(child_args, cl.own["nprocs"].as<int>(), cl.config);
  const std::string report = launch.report(json);  // collective
  if (launch.world().rank == 0) std::cout << report << std::flush;
  return 0;
}

}  // namespace trainer::app
