// CollectedData.csv parser (see label_csv.hpp).
#include "data/label_csv.hpp"

#include <algorithm>  // std::find
#include <array>      // std::array
#include <cctype>     // std::tolower
#include <cerrno>     // errno
#include <cmath>      // NAN
#include <cstdlib>    // std::strtod
#include <limits>     // std::numeric_limits
#include <map>        // std::map

#include "data/visibility.hpp"  // kNoVisibilityFlag
#include "util/error.hpp"  // UserError
#include "util/input_file.hpp"  // read_input_file

namespace trainer::data {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
  return s.substr(a, b - a);
}

// Splits one CSV line; double quotes may enclose a field ("" inside is a quote).
std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  fields.push_back(trim(cur));
  return fields;
}

// The largest coordinate a label may have: far beyond any frame, well inside float32.
constexpr double kMaxCoordinate = 1e7;

// A finite number filling the whole cell.
bool parse_number(const std::string& cell, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size() || end == cell.c_str() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A `visible` cell: 0, 1 or 2 (pandas reads them as floats, so 2.0 is 2, as in
// lightning-pose's check); empty or NaN is no flag. `refuse(what, hint)` throws.
template <class Refuse>
std::uint8_t parse_visibility(const std::string& cell, Refuse refuse) {
  if (cell.empty() || lower(cell) == "nan") return kNoVisibilityFlag;
  double v = 0;
  if (!parse_number(cell, &v) || (v != 0 && v != 1 && v != 2))
    refuse(" is not a visibility flag",
           "lightning-pose's visible column takes 0 (not labelled), 1 (occluded) or 2 (visible)");
  return static_cast<std::uint8_t>(v);
}

[[noreturn]] void fail(const std::string& source, int line, const std::string& what, const std::string& hint = {}) {
  throw UserError(source + ":" + std::to_string(line) + ": " + what, hint);
}

}  // namespace

LabelTable parse_label_csv(const std::string& path) {
  // A regular file of at most 1 GiB (a FIFO would block, /dev/zero never end).
  return parse_label_csv_text(read_input_file(path, "cannot open label file " + path, std::size_t{1} << 30,
                                              "pass the project's CollectedData.csv with --csv"),
                              path);
}

LabelTable parse_label_csv_text(const std::string& text, const std::string& source) {
  LabelTable t;
  t.source = source;
  // Lines with their 1-based numbers; blank lines are skipped.
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  {
    size_t start = 0;
    int number = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      ++number;
      std::string line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (number == 1 && line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // UTF-8 BOM
      // A label file is text: a NUL would silently end a number ("12\0x" read as 12) or a path.
      if (line.find('\0') != std::string::npos)
        fail(source, number, "NUL byte in the line", "a label file is text; is this the right file?");
      if (!trim(line).empty()) rows.emplace_back(number, split_fields(line));
      start = end + 1;
    }
  }
  if (rows.empty()) throw UserError("label file " + source + " is empty");
  const std::string dlc_hint = "expected DeepLabCut's header rows: scorer, bodyparts, coords (x, y)";
  if (lower(rows[0].second[0]) != "scorer") fail(source, rows[0].first, "first header row must start with 'scorer'", dlc_hint);
  size_t header = 1;
  const std::vector<std::string>* individuals = nullptr;
  if (rows.size() > header && lower(rows[header].second[0]) == "individuals") individuals = &rows[header++].second;
  if (rows.size() <= header || lower(rows[header].second[0]) != "bodyparts")
    fail(source, rows.size() > header ? rows[header].first : rows.back().first, "expected the 'bodyparts' header row",
         dlc_hint);
  const auto& bodyparts = rows[header++].second;
  if (rows.size() <= header || lower(rows[header].second[0]) != "coords")
    fail(source, rows.size() > header ? rows[header].first : rows.back().first, "expected the 'coords' header row",
         dlc_hint);
  const auto& coords = rows[header].second;
  const int coords_line = rows[header].first;
  ++header;
  const size_t ncols = rows[0].second.size();
  for (size_t h = 1; h < header; ++h)
    if (rows[h].second.size() != ncols)
      fail(source, rows[h].first,
           "header row has " + std::to_string(rows[h].second.size()) + " columns, the first has " + std::to_string(ncols));
  // Index columns: the first, plus the empty header cells right after it.
  size_t nindex = 1;
  while (nindex < ncols && rows[0].second[nindex].empty() && bodyparts[nindex].empty()) ++nindex;

  // Map columns to (keypoint, x|y|visible).
  constexpr int kVisibleAxis = 2;
  std::vector<int> column_keypoint(ncols, -1), column_axis(ncols, -1);
  std::map<std::string, int> keypoint_index;
  std::vector<std::array<int, 3>> seen;  // column of x, y and visible per keypoint
  bool any_visible = false;
  for (size_t c = nindex; c < ncols; ++c) {
    std::string name = bodyparts[c];
    if (individuals && !(*individuals)[c].empty() && lower((*individuals)[c]) != "single")
      name = (*individuals)[c] + "_" + name;
    if (name.empty()) fail(source, coords_line, "column " + std::to_string(c + 1) + " has no bodypart name");
    const std::string axis = lower(coords[c]);
    if (axis != "x" && axis != "y" && axis != "visible") {
      if (std::find(t.skipped_coords.begin(), t.skipped_coords.end(), coords[c]) == t.skipped_coords.end())
        t.skipped_coords.push_back(coords[c]);
      continue;
    }
    auto it = keypoint_index.find(name);
    if (it == keypoint_index.end()) {
      it = keypoint_index.emplace(name, static_cast<int>(t.keypoint_names.size())).first;
      t.keypoint_names.push_back(name);
      seen.push_back({-1, -1, -1});
    }
    const int a = axis == "x" ? 0 : axis == "y" ? 1 : kVisibleAxis;
    if (seen[static_cast<size_t>(it->second)][static_cast<size_t>(a)] >= 0)
      fail(source, coords_line, "bodypart '" + name + "' has two '" + axis + "' columns");
    seen[static_cast<size_t>(it->second)][static_cast<size_t>(a)] = static_cast<int>(c);
    column_keypoint[c] = it->second;
    column_axis[c] = a;
    any_visible = any_visible || a == kVisibleAxis;
  }
  if (t.keypoint_names.empty()) fail(source, coords_line, "no x/y coordinate columns found", dlc_hint);
  for (size_t k = 0; k < seen.size(); ++k)
    if (seen[k][0] < 0 || seen[k][1] < 0)
      fail(source, coords_line, "bodypart '" + t.keypoint_names[k] + "' lacks its " + (seen[k][0] < 0 ? "x" : "y") + " column");

  const size_t K = t.keypoint_names.size();
  std::map<std::string, int> first_line;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t r = header; r < rows.size(); ++r) {
    // Plain names, not a structured binding: lambdas below capture `line`, which C++17
    // allows only for variables (clang refuses a binding).
    const int line = rows[r].first;
    const auto& fields = rows[r].second;
    if (fields.size() != ncols)
      fail(source, line, "expected " + std::to_string(ncols) + " columns, found " + std::to_string(fields.size()));
    std::string path;
    for (size_t c = 0; c < nindex; ++c) {
      if (fields[c].empty()) continue;
      path += (path.empty() ? "" : "/") + fields[c];
    }
    if (path.empty()) fail(source, line, "row has no frame path");
    const auto [it, inserted] = first_line.emplace(path, line);
    if (!inserted) fail(source, line, "duplicate frame path " + path + " (first at line " + std::to_string(it->second) + ")");
    const size_t base = t.keypoints.size();
    t.keypoints.resize(base + K * 2, nan);
    // A keypoint without the column, or with an empty cell, has no flag.
    if (any_visible) t.visibility.resize(t.visibility.size() + K, kNoVisibilityFlag);
    for (size_t c = nindex; c < ncols; ++c) {
      if (column_keypoint[c] < 0) continue;
      const std::string& cell = fields[c];
      // Built only for a message: most files have thousands of cells.
      const auto column = [&] {
        return "column " + std::to_string(c + 1) + " (" + t.keypoint_names[static_cast<size_t>(column_keypoint[c])] +
               " " + (column_axis[c] == 0 ? "x" : column_axis[c] == 1 ? "y" : "visible") + "): '" + cell + "'";
      };
      if (column_axis[c] == kVisibleAxis) {
        const size_t at = base / 2 + static_cast<size_t>(column_keypoint[c]);
        t.visibility[at] = parse_visibility(cell, [&](const std::string& what, const std::string& hint) {
          fail(source, line, column() + what, hint);
        });
        continue;
      }
      float value = nan;
      if (!cell.empty() && lower(cell) != "nan") {
        double v = 0;
        if (!parse_number(cell, &v)) fail(source, line, column() + " is not a number");
        // Coordinates are stored as float32: 1e300 would become infinity.
        if (std::fabs(v) > kMaxCoordinate)
          fail(source, line, column() + " is not a pixel coordinate (at most " + std::to_string(int(kMaxCoordinate)) +
                                 " in size)");
        value = static_cast<float>(v);
      }
      t.keypoints[base + static_cast<size_t>(column_keypoint[c]) * 2 + static_cast<size_t>(column_axis[c])] = value;
    }
    t.frame_paths.push_back(path);
    t.lines.push_back(line);
  }
  if (t.frame_paths.empty()) throw UserError("label file " + source + " has a header but no labeled frames");
  return t;
}

}  // namespace trainer::data
