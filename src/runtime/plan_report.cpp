#include "runtime/plan_report.hpp"

#include <cstdio>   // std::snprintf
#include <sstream>  // std::ostringstream

#include <mpi.h>  // MPI_Gather, MPI_Gatherv

#include "runtime/watchdog.hpp"  // watch: a deadline for the gather
#include "util/error.hpp"        // MPI_CHECK

namespace trainer::runtime {
namespace {

std::string pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_quote(items[i]);
  return out + "]";
}

const char* kHeader = " rank  node  local  device  train    val   test  context  unlabeled  threads  workers  host";

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string rank_row_text(const RankPlan& r) {
  std::string row = pad(std::to_string(r.rank), 5) + pad(std::to_string(r.node_rank), 6) +
                    pad(std::to_string(r.local_rank), 7) +
                    pad(r.device < 0 ? "cpu" : "gpu:" + std::to_string(r.device), 8) +
                    pad(std::to_string(r.train_batch_size), 7) + pad(std::to_string(r.val_batch_size), 7) +
                    pad(std::to_string(r.test_batch_size), 7) +
                    pad(r.context_batch_size < 0 ? "-" : std::to_string(r.context_batch_size), 9) +
                    pad(r.unlabeled_frames < 0 ? "-" : std::to_string(r.unlabeled_frames), 11) +
                    pad(r.compute_threads <= 0 ? "-" : std::to_string(r.compute_threads), 9) +
                    pad(std::to_string(r.num_workers) +
                            (r.unlabeled_workers > 0 ? "+" + std::to_string(r.unlabeled_workers) : ""),
                        9) +
                    "  " + r.hostname;
  for (const auto& w : r.warnings) row += "\n       warning: [rank " + std::to_string(r.rank) + "] " + w;
  return row;
}

std::string rank_object_json(const RankPlan& r) {
  std::ostringstream os;
  os << "{\"rank\": " << r.rank << ", \"node\": " << r.node_rank << ", \"hostname\": " << json_quote(r.hostname)
     << ", \"local_rank\": " << r.local_rank << ", \"local_size\": " << r.local_size
     << ", \"device\": " << r.device << ", \"train_batch_size\": " << r.train_batch_size
     << ", \"val_batch_size\": " << r.val_batch_size << ", \"test_batch_size\": " << r.test_batch_size
     << ", \"context_batch_size\": "
     << (r.context_batch_size < 0 ? std::string("null") : std::to_string(r.context_batch_size))
     << ", \"unlabeled_frames\": "
     << (r.unlabeled_frames < 0 ? std::string("null") : std::to_string(r.unlabeled_frames))
     << ", \"compute_threads\": " << r.compute_threads
     << ", \"compute_threads_source\": " << json_quote(r.compute_threads_source)
     << ", \"num_workers\": " << r.num_workers << ", \"unlabeled_workers\": " << r.unlabeled_workers
     << ", \"warnings\": " << json_strings(r.warnings) << "}";
  return os.str();
}

std::string plan_text(const RunPlan& p, const std::vector<std::string>& rows) {
  std::ostringstream os;
  os << "plan: " << p.world_size << (p.world_size == 1 ? " rank" : " ranks") << " on " << p.num_nodes
     << (p.num_nodes == 1 ? " node" : " nodes") << " (launched by " << p.launched_by << ")\n";
  os << "accelerator: " << p.accelerator;
  if (!p.accelerator_note.empty()) os << " (" << p.accelerator_note << ")";
  os << ", backend: " << p.backend << "\n";
  os << "global batch: train " << p.train_batch_size << ", val " << p.val_batch_size;
  if (p.unlabeled_context) os << ", context " << p.context_batch_size;  // read only by heatmap_mhcrnn's unsupervised losses
  os << "; divided over G=" << p.data_parallel_ranks
     << " data-parallel ranks (test batch is not divided)\n";
  if (p.unlabeled_sequence_length > 0 && p.unlabeled_context)
    os << "unlabelled video frames per step: " << p.unlabeled_sequence_length << " (dali.context.train.batch_size), "
       << "ceil((B - 4) / G) + 4 consecutive frames per rank, rows of 5 context frames\n";
  else if (p.unlabeled_sequence_length > 0)
    os << "unlabelled video frames per step: " << p.unlabeled_sequence_length << " (dali.base.train.sequence_length), "
       << "ceil(L / G) consecutive frames per rank\n";
  if (p.rank.compute_threads > 0)
    os << "compute threads (CPU): " << p.rank.compute_threads << " per rank on rank 0's node ("
       << p.rank.compute_threads_source << ")\n";
  os << "effective global batch: train " << p.effective_train_batch << ", val " << p.effective_val_batch << "\n";
  os << "learning rate: " << number(p.learning_rate) << " (base " << number(p.base_learning_rate)
     << ", lr_scaling " << p.lr_scaling;
  if (p.lr_scaling != "none") os << " vs reference_batch_size " << p.reference_batch_size;
  os << ")\n\n" << kHeader << "\n";
  for (const auto& row : rows) os << row << "\n";
  if (!p.warnings.empty()) {
    os << "\n";
    for (const auto& w : p.warnings) os << "warning: " << w << "\n";
  }
  return os.str();
}

std::string plan_json(const RunPlan& p, const std::vector<std::string>& objects, bool hypothetical) {
  std::ostringstream os;
  os << "{\n  \"hypothetical\": " << (hypothetical ? "true" : "false")
     << ",\n  \"launched_by\": " << json_quote(p.launched_by) << ",\n  \"world_size\": " << p.world_size
     << ",\n  \"num_nodes\": " << p.num_nodes << ",\n  \"accelerator\": " << json_quote(p.accelerator)
     << ",\n  \"accelerator_note\": " << json_quote(p.accelerator_note)
     << ",\n  \"backend\": " << json_quote(p.backend) << ",\n  \"data_parallel_ranks\": " << p.data_parallel_ranks
     << ",\n  \"train_batch_size\": " << p.train_batch_size << ",\n  \"val_batch_size\": " << p.val_batch_size
     << ",\n  \"context_batch_size\": " << p.context_batch_size
     << ",\n  \"unlabeled_sequence_length\": " << p.unlabeled_sequence_length
     << ",\n  \"effective_train_batch\": " << p.effective_train_batch
     << ",\n  \"effective_val_batch\": " << p.effective_val_batch << ",\n  \"lr_scaling\": " << json_quote(p.lr_scaling)
     << ",\n  \"reference_batch_size\": " << p.reference_batch_size
     << ",\n  \"base_learning_rate\": " << number(p.base_learning_rate)
     << ",\n  \"learning_rate\": " << number(p.learning_rate) << ",\n  \"warnings\": " << json_strings(p.warnings)
     << ",\n  \"ranks\": [";
  for (std::size_t i = 0; i < objects.size(); ++i) os << (i ? ",\n    " : "\n    ") << objects[i];
  os << "\n  ]\n}\n";
  return os.str();
}

std::vector<std::string> gather_strings(const World& world, const std::string& mine) {
  if (world.comm == MPI_COMM_NULL || world.size == 1) return {mine};
  const auto stage = watch(world.watchdog, "start-up: gathering every rank's plan");
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(world.rank == 0 ? world.size : 0));
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world.comm));
  std::vector<int> offsets(lengths.size(), 0);
  std::string all;
  if (world.rank == 0) {
    for (std::size_t i = 1; i < lengths.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + lengths.back()));
  }
  MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                        world.comm));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  }
  return out;
}

}  // namespace trainer::runtime
