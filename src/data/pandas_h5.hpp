#pragma once
// DeepLabCut's CollectedData_<scorer>.h5: a pandas DataFrame written by
// DataFrame.to_hdf (PyTables), read with the HDF5 C API, into the same LabelTable
// the CSV parser gives. Both pandas layouts are read:
//   "fixed" (pandas_type = frame): block0_values float64 [N, C]; the column
//     MultiIndex in block0_items_level<l> / block0_items_label<l> (scorer,
//     [individuals,] bodyparts, coords); the row index in axis1 (one level) or
//     axis1_level<l> / axis1_label<l> (newer DeepLabCut: labeled-data, video, image;
//     joined with '/', as the CSV parser does).
//   "table" (pandas_type = frame_table): a compound dataset `table` with the row
//     index in field `index` and the values in `values_block_0` [C]. Its column
//     names are pickled Python objects, which are not read: the caller passes the
//     bodyparts (from the project's config.yaml) and the columns must be their x, y.
// The frame is the file's only top-level group (DeepLabCut names it
// df_with_missing or keypoints). Anything else is a UserError naming the file.
#include <string>  // std::string
#include <vector>  // std::vector

#include "data/label_csv.hpp"  // LabelTable

namespace trainer::data {

// `bodyparts`: the keypoint names in column order, needed for the "table" layout
// and cross-checked against the "fixed" layout's own names when given.
LabelTable read_pandas_label_h5(const std::string& path, const std::vector<std::string>& bodyparts);

}  // namespace trainer::data
