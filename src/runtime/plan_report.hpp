#pragma once
// `trainer plan` output: a table (one row per rank) or JSON. Each rank renders its
// own row/object; rank 0 collects them in rank order (gather_strings) and wraps
// them with the run-wide part. Field meanings: docs/LAUNCH.md.
#include <string>  // std::string
#include <vector>  // std::vector

#include "runtime/run_plan.hpp"  // RunPlan, RankPlan
#include "runtime/world.hpp"     // World

namespace trainer::runtime {

std::string rank_row_text(const RankPlan& rank);    // one table row, no newline
std::string rank_object_json(const RankPlan& rank); // one JSON object

// The full report from rank 0's plan and every rank's rendered row/object.
std::string plan_text(const RunPlan& plan, const std::vector<std::string>& rows);
std::string plan_json(const RunPlan& plan, const std::vector<std::string>& objects, bool hypothetical);

// Collective: every rank's string, in rank order, on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(const World& world, const std::string& mine);

// JSON string literal with escapes.
std::string json_quote(const std::string& text);

}  // namespace trainer::runtime
