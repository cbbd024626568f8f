// pandas HDF5 label files (see pandas_h5.hpp).
#include "data/pandas_h5.hpp"

#include <hdf5.h>  // H5Fopen, H5Dread, H5T*

#include <algorithm>  // std::find
#include <array>      // std::array
#include <cctype>     // std::tolower
#include <cmath>      // NAN
#include <map>        // std::map

#include "util/error.hpp"  // UserError
#include "util/h5.hpp"     // Handle, H5_CHECK, H5_OWN, link_exists, dims_of
#include "util/input_file.hpp"  // check_input_file
#include "util/h5_screen.hpp"   // h5::check_before_parsing
#include "util/h5_io.hpp"  // read_strings, read_int64, read_string_attribute, read_int_attribute

namespace trainer::data {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UserError("label file " + path + ": " + what,
                  "a DeepLabCut CollectedData_<scorer>.h5 (pandas to_hdf, 'fixed' or 'table'); or use its .csv twin");
}

h5::Handle open_dataset(hid_t group, const std::string& path, const std::string& name) {
  if (!h5::link_exists(group, name.c_str())) fail(path, "has no dataset '" + name + "'");
  return H5_OWN(dataset, H5Dopen2(group, name.c_str(), H5P_DEFAULT));
}

std::vector<std::string> strings(hid_t group, const std::string& path, const std::string& name) {
  const h5::Handle d = open_dataset(group, path, name);
  try {
    return h5::read_strings(d.get());
  } catch (const UserError& e) {
    fail(path, "dataset '" + name + "' " + e.what());
  }
}

std::vector<std::int64_t> integers(hid_t group, const std::string& path, const std::string& name) {
  const h5::Handle d = open_dataset(group, path, name);
  try {
    return h5::read_int64(d.get());
  } catch (const UserError& e) {
    fail(path, "dataset '" + name + "' " + e.what());
  }
}

// One level of a pandas MultiIndex: the names of level `l`, picked by its codes.
std::vector<std::string> level_values(hid_t group, const std::string& path, const std::string& prefix, int l) {
  const auto names = strings(group, path, prefix + "_level" + std::to_string(l));
  const auto codes = integers(group, path, prefix + "_label" + std::to_string(l));
  std::vector<std::string> out;
  out.reserve(codes.size());
  for (std::int64_t code : codes) {
    if (code < 0 || code >= static_cast<std::int64_t>(names.size())) {
      if (code == -1) {  // pandas' code for a missing label
        out.emplace_back();
        continue;
      }
      fail(path, prefix + "_label" + std::to_string(l) + " has the code " + std::to_string(code) + " for " +
                     std::to_string(names.size()) + " names");
    }
    out.push_back(names[static_cast<std::size_t>(code)]);
  }
  return out;
}

// The only top-level group (DeepLabCut: df_with_missing or keypoints).
std::string frame_group_name(hid_t file, const std::string& path) {
  H5G_info_t info;
  H5_CHECK(H5Gget_info(file, &info));
  std::vector<std::string> groups;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) continue;
    std::string name(static_cast<std::size_t>(size) + 1, '\0');
    H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(size));
    H5O_info_t object;
#if H5_VERSION_GE(1, 12, 0)
    if (H5Oget_info_by_name3(file, name.c_str(), &object, H5O_INFO_BASIC, H5P_DEFAULT) < 0) continue;
#else
    if (H5Oget_info_by_name(file, name.c_str(), &object, H5P_DEFAULT) < 0) continue;
#endif
    if (object.type == H5O_TYPE_GROUP) groups.push_back(name);
  }
  if (groups.size() != 1)
    fail(path, "expected one pandas DataFrame (one top-level group), found " + std::to_string(groups.size()));
  return groups.front();
}

// Fills the table's keypoints from values [N, C] and each column's (bodypart, coord).
void fill_keypoints(LabelTable& t, const std::string& path, const std::vector<double>& values, std::size_t rows,
                    const std::vector<std::string>& column_names, const std::vector<std::string>& column_coords) {
  const std::size_t cols = column_names.size();
  std::map<std::string, int> index;
  std::vector<std::array<long, 2>> where;  // column of x and y per keypoint
  for (std::size_t c = 0; c < cols; ++c) {
    const std::string axis = lower(column_coords[c]);
    if (axis != "x" && axis != "y") {
      if (std::find(t.skipped_coords.begin(), t.skipped_coords.end(), column_coords[c]) == t.skipped_coords.end())
        t.skipped_coords.push_back(column_coords[c]);
      continue;
    }
    auto it = index.find(column_names[c]);
    if (it == index.end()) {
      it = index.emplace(column_names[c], static_cast<int>(t.keypoint_names.size())).first;
      t.keypoint_names.push_back(column_names[c]);
      where.push_back({-1, -1});
    }
    auto& slot = where[static_cast<std::size_t>(it->second)][axis == "x" ? 0 : 1];
    if (slot >= 0) fail(path, "bodypart '" + column_names[c] + "' has two '" + axis + "' columns");
    slot = static_cast<long>(c);
  }
  if (t.keypoint_names.empty()) fail(path, "no x/y coordinate columns");
  for (std::size_t k = 0; k < where.size(); ++k)
    if (where[k][0] < 0 || where[k][1] < 0) fail(path, "bodypart '" + t.keypoint_names[k] + "' lacks x or y");
  const std::size_t K = t.keypoint_names.size();
  t.keypoints.assign(rows * K * 2, NAN);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < K; ++k)
      for (int a = 0; a < 2; ++a)
        t.keypoints[(r * K + k) * 2 + static_cast<std::size_t>(a)] =
            static_cast<float>(values[r * cols + static_cast<std::size_t>(where[k][static_cast<std::size_t>(a)])]);
}

void read_fixed(hid_t group, const std::string& path, LabelTable& t) {
  std::int64_t blocks = 1;
  h5::read_int_attribute(group, "nblocks", &blocks);
  if (blocks != 1) fail(path, "has " + std::to_string(blocks) + " value blocks; label files have one (all floats)");
  const h5::Handle values_set = open_dataset(group, path, "block0_values");
  const auto dims = h5::dims_of(values_set.get());
  if (dims.size() != 2) fail(path, "block0_values is not two-dimensional");
  const h5::Handle type = H5_OWN(datatype, H5Dget_type(values_set.get()));
  if (H5Tget_class(type.get()) != H5T_FLOAT) fail(path, "block0_values is not floating point");
  const std::size_t rows = dims[0], cols = dims[1];
  std::vector<double> values(rows * cols);
  if (!values.empty())
    H5_CHECK(H5Dread(values_set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));

  std::int64_t levels = 1;
  h5::read_int_attribute(group, "block0_items_nlevels", &levels);
  if (levels < 3 || levels > 4)
    fail(path, "its columns have " + std::to_string(levels) +
                   " levels; DeepLabCut's are scorer, [individuals,] bodyparts, coords");
  const auto bodyparts = level_values(group, path, "block0_items", static_cast<int>(levels) - 2);
  const auto coords = level_values(group, path, "block0_items", static_cast<int>(levels) - 1);
  std::vector<std::string> names = bodyparts;
  if (levels == 4) {  // multi-animal: individual_bodypart, as the CSV parser names them
    const auto individuals = level_values(group, path, "block0_items", 1);
    for (std::size_t c = 0; c < names.size(); ++c)
      if (!individuals[c].empty() && lower(individuals[c]) != "single") names[c] = individuals[c] + "_" + names[c];
  }
  if (names.size() != cols) fail(path, "has " + std::to_string(names.size()) + " column names for " +
                                           std::to_string(cols) + " columns");
  fill_keypoints(t, path, values, rows, names, coords);

  std::string variety = "regular";
  h5::read_string_attribute(group, "axis1_variety", &variety);
  if (variety == "multi") {
    std::int64_t index_levels = 0;
    h5::read_int_attribute(group, "axis1_nlevels", &index_levels);
    for (int l = 0; l < index_levels; ++l) {
      const auto parts = level_values(group, path, "axis1", l);
      if (parts.size() != rows) fail(path, "its row index has " + std::to_string(parts.size()) + " entries");
      t.frame_paths.resize(rows);
      for (std::size_t r = 0; r < rows; ++r)
        if (!parts[r].empty()) t.frame_paths[r] += (t.frame_paths[r].empty() ? "" : "/") + parts[r];
    }
  } else {
    t.frame_paths = strings(group, path, "axis1");
  }
  if (t.frame_paths.size() != rows) fail(path, "its row index does not have one entry per row");
}

void read_table(hid_t group, const std::string& path, LabelTable& t, const std::vector<std::string>& bodyparts) {
  const h5::Handle table = open_dataset(group, path, "table");
  const h5::Handle type = H5_OWN(datatype, H5Dget_type(table.get()));
  if (H5Tget_class(type.get()) != H5T_COMPOUND) fail(path, "its 'table' is not a PyTables table");
  const int index_field = H5Tget_member_index(type.get(), "index");
  const int values_field = H5Tget_member_index(type.get(), "values_block_0");
  if (index_field < 0 || values_field < 0) fail(path, "its table lacks the 'index' or 'values_block_0' column");
  if (H5Tget_nmembers(type.get()) != 2)
    fail(path, "its table has " + std::to_string(H5Tget_nmembers(type.get())) +
                   " columns; label files have the index and one block of values");
  const h5::Handle index_type = H5_OWN(datatype, H5Tget_member_type(type.get(), static_cast<unsigned>(index_field)));
  const h5::Handle values_type = H5_OWN(datatype, H5Tget_member_type(type.get(), static_cast<unsigned>(values_field)));
  if (H5Tget_class(index_type.get()) != H5T_STRING || H5Tis_variable_str(index_type.get()) > 0)
    fail(path, "its table index is not a column of image paths");
  if (H5Tget_class(values_type.get()) != H5T_ARRAY || H5Tget_array_ndims(values_type.get()) != 1)
    fail(path, "its values_block_0 is not an array column");
  hsize_t cols = 0;
  H5Tget_array_dims2(values_type.get(), &cols);
  const std::size_t rows = static_cast<std::size_t>(h5::dims_of(table.get()).at(0));

  // Read the two fields through memory types of our own.
  const std::size_t width = H5Tget_size(index_type.get());
  const h5::Handle index_mem = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(index_mem.get(), width + 1));
  H5_CHECK(H5Tset_strpad(index_mem.get(), H5T_STR_NULLTERM));
  const h5::Handle index_only = H5_OWN(datatype, H5Tcreate(H5T_COMPOUND, width + 1));
  H5_CHECK(H5Tinsert(index_only.get(), "index", 0, index_mem.get()));
  std::vector<char> names((width + 1) * rows);
  if (rows) H5_CHECK(H5Dread(table.get(), index_only.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, names.data()));
  const h5::Handle values_mem = H5_OWN(datatype, H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &cols));
  const h5::Handle values_only = H5_OWN(datatype, H5Tcreate(H5T_COMPOUND, sizeof(double) * cols));
  H5_CHECK(H5Tinsert(values_only.get(), "values_block_0", 0, values_mem.get()));
  std::vector<double> values(rows * cols);
  if (rows) H5_CHECK(H5Dread(table.get(), values_only.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  for (std::size_t r = 0; r < rows; ++r) t.frame_paths.emplace_back(names.data() + r * (width + 1));

  // Column names are pickled in the table's attributes: take them from config.yaml.
  if (bodyparts.empty())
    throw UserError("label file " + path + ": its pandas 'table' layout keeps the column names pickled, so the "
                    "keypoint names must come from elsewhere",
                    "import the whole project with --dlc-project DIR (names from its config.yaml), or import "
                    "the .csv twin");
  if (cols != 2 * bodyparts.size())
    fail(path, "its 'table' layout has " + std::to_string(cols) + " value columns; with the project's " +
                   std::to_string(bodyparts.size()) +
                   " bodyparts (config.yaml) they must be their x and y (multi-animal tables: use the .csv)");
  std::vector<std::string> column_names, column_coords;
  for (const auto& b : bodyparts) {
    column_names.insert(column_names.end(), {b, b});
    column_coords.insert(column_coords.end(), {"x", "y"});
  }
  fill_keypoints(t, path, values, rows, column_names, column_coords);
}

}  // namespace

LabelTable read_pandas_label_h5(const std::string& path, const std::vector<std::string>& bodyparts) {
  h5::silence_errors_on_this_thread();
  check_input_file(path, "cannot open label file " + path, "pass the project's CollectedData.csv (or .h5) with --csv");
  // pandas (PyTables) wrote it: no checksum, so HDF5's walk of it runs in a separate
  // process first, where a crash or a loop on damage costs nothing (util/h5_screen.hpp).
  h5::check_before_parsing(path, "label file " + path,
                           "save the labels again from the project (DeepLabCut writes CollectedData_<name>.h5 and "
                           ".csv side by side; pass the CSV with --csv)");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail(path, "is not an HDF5 file");
  }
  // A failed HDF5 call on the way means a damaged file: the user's to replace.
  try {
    const h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    const std::string name = frame_group_name(file.get(), path);
    const h5::Handle group = H5_OWN(group, H5Gopen2(file.get(), name.c_str(), H5P_DEFAULT));
    std::string pandas_type;
    if (!h5::read_string_attribute(group.get(), "pandas_type", &pandas_type))
      fail(path, "its group '" + name + "' is not a pandas DataFrame (no pandas_type)");
    LabelTable t;
    t.source = path;
    if (pandas_type == "frame") {
      read_fixed(group.get(), path, t);
    } else if (pandas_type == "frame_table") {
      read_table(group.get(), path, t, bodyparts);
    } else {
      fail(path, "pandas_type '" + pandas_type + "' is not a DataFrame");
    }
    if (!bodyparts.empty() && t.keypoint_names != bodyparts) {
      std::string list;
      for (const auto& b : t.keypoint_names) list += (list.empty() ? "" : ", ") + b;
      fail(path, "its bodyparts (" + list + ") differ from config.yaml's");
    }
    t.lines.resize(t.frame_paths.size());
    for (std::size_t r = 0; r < t.lines.size(); ++r) t.lines[r] = static_cast<int>(r) + 1;  // rows, for messages
    return t;
  } catch (const h5::Error& e) {
    fail(path, std::string("cannot be read (truncated or damaged?): ") + e.what());
  }
}

}  // namespace trainer::data
