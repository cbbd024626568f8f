#pragma once
// The checks of a RotaryShape (and of a table's grid) both backends make before they
// turn any row (or write any table).
#include <string>  // std::to_string

#include "compute/transformer_ops.hpp"  // RotaryShape
#include "util/error.hpp"               // SystemError

namespace trainer::compute {

inline void check_rotary_shape(const RotaryShape& r) {
  if (r.batch < 0 || r.prefix < 0 || r.tokens < r.prefix || r.heads <= 0 || r.head_dim <= 0 || r.head_dim % 2 != 0)
    throw SystemError("internal error: rotary embedding over " + std::to_string(r.batch) + " x " +
                      std::to_string(r.tokens) + " tokens (" + std::to_string(r.prefix) + " prefix), " +
                      std::to_string(r.heads) + " heads of " + std::to_string(r.head_dim));
}

inline void check_rotary_table_shape(int grid_h, int grid_w, int head_dim) {
  if (grid_h <= 0 || grid_w <= 0 || head_dim <= 0 || head_dim % 4 != 0)
    throw SystemError("internal error: rotary tables for a " + std::to_string(grid_h) + " x " +
                      std::to_string(grid_w) + " grid and head width " + std::to_string(head_dim));
}

}  // namespace trainer::compute
