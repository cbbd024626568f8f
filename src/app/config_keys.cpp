// The configuration key table (see config_keys.hpp). Ranges are checked here, one
// key at a time; combinations of keys are checked in config_validate.cpp.
#include "app/config_keys.hpp"

#include <algorithm>  // std::find_if
#include <cctype>     // std::tolower
#include <limits>     // std::numeric_limits
#include <optional>   // std::optional
#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::invalid_argument

#include "app/config_lp_backbones.hpp"  // refuse_missing_lp_backbone
#include "app/config_values.hpp"        // parse_*, format_*, BadValue
#include "comm/nccl_debug.hpp"            // comm::nccl_debug_names
#include "compute/losses/heatmap_loss_registry.hpp"  // compute::heatmap_loss_names
#include "compute/pca_centering.hpp"     // compute::pca_centering_names
#include "compute/precision.hpp"          // compute::precision_names, float32_matmul_precision_names
#include "data/augment.hpp"               // data::imgaug_names
#include "data/labeled_video.hpp"         // data::labeled_video_colormap_names
#include "model/backbone_registry.hpp"    // backbone_names
#include "model/make_model.hpp"           // model_type_names
#include "runtime/batch_plan.hpp"         // runtime::lr_scaling_names
#include "runtime/run_plan.hpp"           // runtime::accelerator_names, backend_names
#include "train/batch_limit.hpp"          // train::parse_batch_limit, format_batch_limit
#include "train/optimizer.hpp"            // train::optimizer_names
#include "train/unsupervised_loss_names.hpp"  // train::unsupervised_loss_names
#include "util/name_list.hpp"             // join_names

namespace trainer::app::config_detail {
namespace {

// Points at one field of one section of Config, e.g. Config::training.max_epochs.
template <class Section, class T>
struct Field {
  Section Config::*section;
  T Section::*member;
  T& operator()(Config& c) const { return (c.*section).*member; }
  const T& operator()(const Config& c) const { return (c.*section).*member; }
};
template <class Section, class T>
Field<Section, T> field(Section Config::*section, T Section::*member) {
  return {section, member};
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The fluent builder keeps each table line short and readable.
struct KeyBuilder {
  ConfigKey key;
  KeyBuilder& lp(const std::string& yaml) { key.lightning_pose = yaml; return *this; }
  KeyBuilder& alias(const std::string& name) { key.aliases.push_back(name); return *this; }
  KeyBuilder& on_null(const std::string& value) { key.null_means = value; return *this; }
  operator ConfigKey() const { return key; }  // NOLINT: implicit by design, for the table
};

KeyBuilder make(const char* section, const char* name, const char* value_name, const char* meaning) {
  KeyBuilder b;
  b.key.section = section;
  b.key.name = name;
  b.key.value_name = value_name;
  b.key.meaning = meaning;
  return b;
}

// Whole number in [min, max]; `multiple_of` > 1 adds a divisibility rule.
template <class S, class T>
KeyBuilder integer(const char* section, const char* name, Field<S, T> f, long long min, long long max,
                   const char* meaning, long long multiple_of = 1) {
  KeyBuilder b = make(section, name, "INT", meaning);
  b.key.set = [f, min, max, multiple_of](Config& c, const std::string& text) {
    const long long v = parse_integer(text);
    if (v < min || v > max) {
      std::ostringstream os;
      os << "a whole number";
      if (max == std::numeric_limits<long long>::max() || max == std::numeric_limits<int>::max()) {
        os << " >= " << min;
      } else {
        os << " from " << min << " to " << max;
      }
      os << ", got " << v;
      throw BadValue(os.str());
    }
    if (multiple_of > 1 && v % multiple_of != 0) {
      std::ostringstream os;
      os << "a multiple of " << multiple_of << " (what every backbone takes: the convolutional ones downsample by "
         << multiple_of << "), got " << v
         << "; nearest: " << (v / multiple_of) * multiple_of << " or " << (v / multiple_of + 1) * multiple_of;
      throw BadValue(os.str());
    }
    f(c) = static_cast<T>(v);
  };
  b.key.get = [f](const Config& c) { return std::to_string(f(c)); };
  return b;
}

template <class S>
KeyBuilder seed(const char* section, const char* name, Field<S, std::uint64_t> f, const char* meaning) {
  KeyBuilder b = make(section, name, "INT", meaning);
  b.key.set = [f](Config& c, const std::string& text) { f(c) = parse_unsigned(text); };
  b.key.get = [f](const Config& c) { return std::to_string(f(c)); };
  return b;
}

// Real number in [min, max], or (min, max] when `min_open`.
template <class S>
KeyBuilder real(const char* section, const char* name, Field<S, double> f, double min, bool min_open, double max,
                const char* meaning) {
  KeyBuilder b = make(section, name, "REAL", meaning);
  b.key.set = [f, min, min_open, max](Config& c, const std::string& text) {
    const double v = parse_real(text);
    if ((min_open ? v <= min : v < min) || v > max) {
      std::ostringstream os;
      os << "a number " << (min_open ? "> " : ">= ") << format_real(min);
      if (max < std::numeric_limits<double>::max()) os << " and <= " << format_real(max);
      os << ", got " << text;
      throw BadValue(os.str());
    }
    f(c) = v;
  };
  b.key.get = [f](const Config& c) { return format_real(f(c)); };
  return b;
}

template <class S>
KeyBuilder boolean(const char* section, const char* name, Field<S, bool> f, const char* meaning) {
  KeyBuilder b = make(section, name, "BOOL", meaning);
  b.key.set = [f](Config& c, const std::string& text) { f(c) = parse_bool(text); };
  b.key.get = [f](const Config& c) { return format_bool(f(c)); };
  return b;
}

// One of a fixed set of names, as the layer that owns the choice exports them (e.g.
// data::imgaug_names()); matched without regard to case, stored as spelled there.
template <class S>
KeyBuilder choice(const char* section, const char* name, Field<S, std::string> f,
                  const std::vector<std::string>& choices, const char* meaning) {
  KeyBuilder b = make(section, name, "NAME", meaning);
  b.key.value_name = join_names(choices, "|");
  b.key.choices = choices;
  b.key.set = [f, choices](Config& c, const std::string& text) {
    const std::string v = unquote(trim(text));
    for (const auto& option : choices) {
      if (lower(option) == lower(v)) {
        f(c) = option;
        return;
      }
    }
    std::string expected = "one of " + join_names(choices) + "; got '" + v + "'";
    const std::string near = closest(lower(v), choices);
    if (!near.empty()) expected += " (did you mean '" + near + "'?)";
    throw BadValue(expected);
  };
  b.key.get = [f](const Config& c) { return f(c); };
  return b;
}

// model.backbone: a lightning-pose backbone this build lacks is refused as such
// (config_lp_backbones.cpp), before the choice's "did you mean".
KeyBuilder refusing_missing_lp_backbones(KeyBuilder b) {
  b.key.set = [set = b.key.set](Config& c, const std::string& text) {
    refuse_missing_lp_backbone(unquote(trim(text)));
    set(c, text);
  };
  return b;
}

// eval.colormap: lightning-pose takes any matplotlib colormap. One the renderer lacks
// is drawn with the nearest name it has (a misspelling), else with the key's default
// (lightning-pose's, cool); the note names both.
template <class S>
KeyBuilder colormap(const char* section, const char* name, Field<S, std::string> f,
                    const std::vector<std::string>& choices, const char* meaning) {
  KeyBuilder b = choice(section, name, f, choices, meaning);
  const auto fallback = [f, choices](const std::string& wanted) {
    const std::string near = closest(lower(wanted), choices);
    return near.empty() ? f(Config{}) : near;
  };
  b.key.set = [set = b.key.set, f, fallback](Config& c, const std::string& text) {
    const std::string v = unquote(trim(text));
    if (v.empty()) throw BadValue("a matplotlib colormap name, like cool or viridis");
    try {
      set(c, text);
    } catch (const BadValue&) {
      f(c) = fallback(v);
    }
  };
  b.key.note = [choices, fallback](const std::string& text) -> std::string {
    const std::string v = unquote(trim(text));
    for (const auto& option : choices)
      if (lower(option) == lower(v)) return "";
    return "the labeled-video renderer has no colormap '" + v + "'; it draws with '" + fallback(v) +
           "' instead (it has " + join_names(choices) + ")";
  };
  return b;
}

template <class S>
KeyBuilder text(const char* section, const char* name, Field<S, std::string> f, const char* value_name,
                const char* meaning) {
  KeyBuilder b = make(section, name, value_name, meaning);
  b.key.set = [f](Config& c, const std::string& value) { f(c) = unquote(trim(value)); };
  b.key.get = [f](const Config& c) { return f(c); };
  return b;
}

// A text key whose value of blanks only is kept as given (`--devices " "`), for the
// key's parser to refuse: trimmed, it would read as empty, which means "not set".
template <class S>
KeyBuilder keep_blanks(KeyBuilder b, Field<S, std::string> f) {
  auto set = b.key.set;
  b.key.set = [set, f](Config& c, const std::string& value) {
    if (!value.empty() && trim(value).empty()) f(c) = value;
    else set(c, value);
  };
  return b;
}

template <class S>
KeyBuilder text_list(const char* section, const char* name, Field<S, std::vector<std::string>> f,
                     const char* meaning) {
  KeyBuilder b = make(section, name, "LIST", meaning);
  b.key.set = [f](Config& c, const std::string& value) { f(c) = parse_list(value); };
  b.key.get = [f](const Config& c) { return format_list(f(c)); };
  return b;
}

template <class S>
KeyBuilder int_list(const char* section, const char* name, Field<S, std::vector<int>> f, int min,
                    const char* meaning) {
  KeyBuilder b = make(section, name, "LIST", meaning);
  b.key.set = [f, min](Config& c, const std::string& value) {
    std::vector<int> numbers;
    for (const auto& item : parse_list(value)) {
      long long v = 0;
      try {
        v = parse_integer(item);
      } catch (const BadValue&) {
        throw BadValue("a list of whole numbers like [150, 200], got '" + trim(value) + "'");
      }
      if (v < min || v > std::numeric_limits<int>::max()) {
        throw BadValue("whole numbers >= " + std::to_string(min) + ", got " + item);
      }
      numbers.push_back(static_cast<int>(v));
    }
    f(c) = numbers;
  };
  b.key.get = [f](const Config& c) {
    std::vector<std::string> items;
    for (int v : f(c)) items.push_back(std::to_string(v));
    return format_list(items);
  };
  return b;
}

// A list of names, each one of `choices` (case-insensitive, stored as spelled there).
template <class S>
KeyBuilder choice_list(const char* section, const char* name, Field<S, std::vector<std::string>> f,
                       const std::vector<std::string>& choices, const char* meaning) {
  // Not key.choices: that marks a NAME key, whose value is one name.
  KeyBuilder b = make(section, name, "LIST", meaning);
  b.key.set = [f, choices](Config& c, const std::string& value) {
    std::vector<std::string> names;
    for (const auto& item : parse_list(value)) {
      const auto it = std::find_if(choices.begin(), choices.end(),
                                   [&](const std::string& o) { return lower(o) == lower(item); });
      if (it == choices.end()) {
        std::string expected = "names from " + join_names(choices) + "; got '" + item + "'";
        const std::string near = closest(lower(item), choices);
        if (!near.empty()) expected += " (did you mean '" + near + "'?)";
        throw BadValue(expected);
      }
      if (std::find(names.begin(), names.end(), *it) == names.end()) names.push_back(*it);
    }
    f(c) = names;
  };
  b.key.get = [f](const Config& c) { return format_list(f(c)); };
  return b;
}

// A list of real numbers in [min, max] (one value is a list of one).
template <class S>
KeyBuilder real_list(const char* section, const char* name, Field<S, std::vector<double>> f, double min,
                     double max, const char* meaning) {
  KeyBuilder b = make(section, name, "LIST", meaning);
  b.key.set = [f, min, max](Config& c, const std::string& value) {
    std::vector<double> numbers;
    for (const auto& item : parse_list(value)) {
      const double v = parse_real(item);
      if (v < min || v > max) throw BadValue("numbers from " + format_real(min) + " to " + format_real(max) + ", got " + item);
      numbers.push_back(v);
    }
    if (numbers.empty()) throw BadValue("one number, or a list of numbers");
    f(c) = numbers;
  };
  b.key.get = [f](const Config& c) {
    std::vector<std::string> items;
    for (double v : f(c)) items.push_back(format_real(v));
    return items.size() == 1 ? items.front() : format_list(items);
  };
  return b;
}

// A list of lists of whole numbers >= 0, `[[0, 1], [8, 9]]` (keypoint indices per view).
template <class S>
KeyBuilder index_lists(const char* section, const char* name, Field<S, std::vector<std::vector<int>>> f,
                       const char* meaning) {
  KeyBuilder b = make(section, name, "LISTS", meaning);
  b.key.set = [f](Config& c, const std::string& value) {
    const std::string text = trim(value);
    const std::string expected = "a list of lists of keypoint indices like [[0, 1, 2], [8, 9, 10]], got '" + text + "'";
    std::vector<std::vector<int>> lists;
    if (text.empty() || text == "[]") {
      f(c) = lists;
      return;
    }
    if (text.front() != '[' || text.back() != ']') throw BadValue(expected);
    const std::string inner = text.substr(1, text.size() - 2);
    if (inner.find('[') == std::string::npos)  // lightning-pose's flat form
      throw BadValue(expected + "; a flat list is lightning-pose's form for multiview datasets (one label file "
                                "per camera), which the trainer does not read: for the views of one mirrored "
                                "frame, give one list per view");
    std::size_t at = 0;
    while (at < inner.size()) {
      const std::size_t open = inner.find('[', at);
      if (open == std::string::npos) {
        if (trim(inner.substr(at)).find_first_not_of(", ") != std::string::npos) throw BadValue(expected);
        break;
      }
      if (trim(inner.substr(at, open - at)).find_first_not_of(",") != std::string::npos) throw BadValue(expected);
      const std::size_t close = inner.find(']', open);
      if (close == std::string::npos) throw BadValue(expected);
      std::vector<int> indices;
      for (const auto& item : parse_list(inner.substr(open, close - open + 1))) {
        long long v = 0;
        try {
          v = parse_integer(item);
        } catch (const BadValue&) {
          throw BadValue(expected);
        }
        if (v < 0 || v > std::numeric_limits<int>::max()) throw BadValue(expected);
        indices.push_back(static_cast<int>(v));
      }
      lists.push_back(indices);
      at = close + 1;
    }
    f(c) = lists;
  };
  b.key.get = [f](const Config& c) {
    std::vector<std::string> items;
    for (const auto& list : f(c)) {
      std::vector<std::string> numbers;
      for (int v : list) numbers.push_back(std::to_string(v));
      items.push_back(format_list(numbers));
    }
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out + "]";
  };
  return b;
}

// lightning-pose's components_to_keep: a whole number is a count of components, a
// number with a decimal point a fraction of the explained variance in (0, 1].
template <class S>
KeyBuilder components(const char* section, const char* name, Field<S, std::string> f, const char* meaning) {
  KeyBuilder b = make(section, name, "COUNT/FRACTION", meaning);
  b.key.set = [f](Config& c, const std::string& value) {
    const std::string text = unquote(trim(value));
    const bool fraction = text.find_first_of(".eE") != std::string::npos;
    if (fraction) {
      const double v = parse_real(text);
      if (!(v > 0 && v <= 1)) throw BadValue("a count like 3, or a fraction of variance in (0, 1] like 0.99, got " + text);
    } else {
      long long v = 0;
      try {
        v = parse_integer(text);
      } catch (const BadValue&) {
        throw BadValue("a count like 3, or a fraction of variance in (0, 1] like 0.99, got '" + text + "'");
      }
      if (v < 1) throw BadValue("a count of at least 1, or a fraction of variance in (0, 1], got " + text);
    }
    f(c) = text;
  };
  b.key.get = [f](const Config& c) { return f(c); };
  return b;
}

// Lightning's count-or-fraction setting (train/batch_limit.hpp): an int is batches,
// a number with a decimal point in [0, 1] a share of the epoch; null the default.
template <class S>
KeyBuilder batch_limit(const char* section, const char* name, Field<S, std::string> f, const char* meaning) {
  KeyBuilder b = make(section, name, "COUNT/FRACTION/null", meaning);
  b.key.set = [f](Config& c, const std::string& value) {
    try {
      const train::BatchLimit limit = train::parse_batch_limit(unquote(trim(value)));
      f(c) = limit.is_set() ? train::format_batch_limit(limit) : std::string();
    } catch (const std::invalid_argument& e) {
      throw BadValue(e.what());
    }
  };
  b.key.get = [f](const Config& c) { return f(c).empty() ? std::string("null") : f(c); };
  return b;
}

// A real number >= 0, or null / a negative number for "computed from the data".
template <class S>
KeyBuilder optional_real(const char* section, const char* name, Field<S, double> f, const char* meaning) {
  KeyBuilder b = make(section, name, "REAL/null", meaning);
  b.key.set = [f](Config& c, const std::string& text) {
    const std::string t = lower(unquote(trim(text)));
    if (t.empty() || t == "null" || t == "none" || t == "~") {
      f(c) = -1.0;  // computed from the data
      return;
    }
    const double v = parse_real(t);
    if (v < 0) throw BadValue("a number >= 0, or null, got " + t);
    f(c) = v;
  };
  b.key.get = [f](const Config& c) { return f(c) < 0 ? std::string("null") : format_real(f(c)); };
  return b;
}

// A real number in [min, max] ((min, max] when `min_open`), or `word` stored empty for
// the layer that reads it to decide: "auto" (the layer's own default), or "null"
// (lightning-pose's None; an empty value, none and ~ read as null too).
template <class S>
KeyBuilder real_or_word(const char* section, const char* name, Field<S, std::optional<double>> f, double min,
                        bool min_open, double max, const std::string& word, const char* meaning) {
  KeyBuilder b = make(section, name, word == "null" ? "REAL/null" : "REAL/auto", meaning);
  b.key.set = [f, min, min_open, max, word](Config& c, const std::string& text) {
    const std::string t = lower(unquote(trim(text)));
    if (t == word || (word == "null" && (t.empty() || t == "none" || t == "~"))) {
      f(c).reset();
      return;
    }
    const double v = parse_real(t);
    if ((min_open ? v <= min : v < min) || v > max)
      throw BadValue("a number " + std::string(min_open ? "> " : ">= ") + format_real(min) + " and <= " +
                     format_real(max) + ", or " + word + ", got " + t);
    f(c) = v;
  };
  b.key.get = [f, word](const Config& c) { return f(c) ? format_real(*f(c)) : word; };
  if (word == "null") b.key.null_means = "null";
  return b;
}

// One of a fixed set of names, or null (stored as ""), as lightning-pose's keys
// whose default is null.
template <class S>
KeyBuilder optional_choice(const char* section, const char* name, Field<S, std::string> f,
                           const std::vector<std::string>& choices, const char* meaning) {
  KeyBuilder b = choice(section, name, f, choices, meaning);
  b.key.choices.insert(b.key.choices.begin(), "null");
  b.key.value_name = join_names(b.key.choices, "|");
  b.key.set = [f, set_choice = b.key.set](Config& c, const std::string& text) {
    const std::string t = lower(unquote(trim(text)));
    if (t.empty() || t == "null" || t == "none" || t == "~") {
      f(c).clear();
      return;
    }
    try {
      set_choice(c, text);
    } catch (const BadValue& e) {
      throw BadValue(std::string("null or ") + e.what());
    }
  };
  b.key.get = [f](const Config& c) { return f(c).empty() ? std::string("null") : f(c); };
  return b;
}

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kLongMax = std::numeric_limits<long>::max();
constexpr double kRealMax = std::numeric_limits<double>::max();

std::vector<ConfigKey> build_table() {
  const auto D = &Config::data;
  const auto T = &Config::training;
  const auto M = &Config::model;
  const auto X = &Config::distributed;
  const auto E = &Config::eval;
  const auto L = &Config::losses;
  using DC = DataConfig;
  using TC = TrainingConfig;
  using MC = ModelConfig;
  using XC = DistributedConfig;
  using EC = EvalConfig;
  using LC = LossesConfig;
  return {
      // [data]
      text_list("data", "data_files", field(D, &DC::data_files),
                "HDF5 datasets made by `trainer import` (paths or glob patterns, relative to the working directory); "
                "empty: the embedded synthetic demo data")
          .alias("data_file"),
      integer("data", "image_resize_height", field(D, &DC::image_resize_height), 32, 4096,
              "network input height in pixels; frames are resized to it", 32)
          .lp("data.image_resize_dims.height").alias("image_resize_dims.height"),
      integer("data", "image_resize_width", field(D, &DC::image_resize_width), 32, 4096,
              "network input width in pixels; frames are resized to it", 32)
          .lp("data.image_resize_dims.width").alias("image_resize_dims.width"),
      integer("data", "num_keypoints", field(D, &DC::num_keypoints), 0, 1000,
              "number of keypoints; 0: take it from the data")
          .lp("data.num_keypoints"),
      text_list("data", "keypoint_names", field(D, &DC::keypoint_names),
                "keypoint names in label order; empty: take them from the data")
          .lp("data.keypoint_names"),
      integer("data", "downsample_factor", field(D, &DC::downsample_factor), 1, 3,
              "heatmaps are 2^factor times smaller than the input image")
          .lp("data.downsample_factor"),
      text("data", "synthetic_file", field(D, &DC::synthetic_file), "PATH",
           "where the synthetic demo dataset is generated when data_files is empty"),
      text("data", "data_dir", field(D, &DC::data_dir), "PATH",
           "lightning-pose project folder: csv_file and the image paths in it are relative to it")
          .lp("data.data_dir"),
      text("data", "csv_file", field(D, &DC::csv_file), "PATH",
           "label CSV (relative to data_dir) imported on first use into a cached HDF5 file beside the run "
           "folder; replaces data_files")
          .lp("data.csv_file"),
      text("data", "video_dir", field(D, &DC::video_dir), "PATH",
           "unlabelled videos (a folder, or one file) for the unsupervised losses in model.losses_to_use")
          .lp("data.video_dir"),
      index_lists("data", "mirrored_column_matches", field(D, &DC::mirrored_column_matches),
                  "pca_multiview: per view, the indices of the keypoints that match across views")
          .lp("data.mirrored_column_matches"),
      int_list("data", "columns_for_singleview_pca", field(D, &DC::columns_for_singleview_pca), 0,
               "pca_singleview: indices of the keypoints in the PCA; empty: all")
          .lp("data.columns_for_singleview_pca"),
      // [training]
      choice("training", "imgaug", field(T, &TC::imgaug), data::imgaug_names(),
             "augmentation pipeline: default or none (resize only), dlc (DeepLabCut-style), dlc-lr (a 0 or 180 "
             "degree turn, then dlc), dlc-top-down (a 0, 90, 180 or 270 degree turn, then dlc)")
          .lp("training.imgaug"),
      boolean("training", "imgaug_hflip", field(T, &TC::imgaug_hflip),
              "also mirror each training frame with probability 0.5; keypoints named *_left and *_right swap "
              "(every _left needs its _right)")
          .lp("training.imgaug_hflip"),
      integer("training", "train_batch_size", field(T, &TC::train_batch_size), 1, kIntMax,
              "global training batch, summed over all ranks")
          .lp("training.train_batch_size"),
      integer("training", "val_batch_size", field(T, &TC::val_batch_size), 1, kIntMax,
              "global validation batch, summed over all ranks")
          .lp("training.val_batch_size"),
      integer("training", "test_batch_size", field(T, &TC::test_batch_size), 1, kIntMax,
              "batch for testing and for predicting labelled frames (per rank, not divided); videos: "
              "eval.video_sequence_length")
          .lp("training.test_batch_size"),
      integer("training", "context_batch_size", field(T, &TC::context_batch_size), 1, kIntMax,
              "heatmap_mhcrnn with unsupervised losses: unlabelled video frames per step, global; each rank "
              "gets ceil((B - 4) / GPUs) + 4 consecutive frames")
          .lp("dali.context.train.batch_size"),
      integer("training", "unlabeled_sequence_length", field(T, &TC::unlabeled_sequence_length), 1, kIntMax,
              "unlabelled video frames per step, global: each rank gets ceil(L / GPUs) consecutive frames")
          .lp("dali.base.train.sequence_length"),
      integer("training", "num_gpus", field(T, &TC::num_gpus), 0, kIntMax,
              "GPUs per node as lightning-pose counts them; 0: from devices and the launcher")
          .lp("training.num_gpus"),
      integer("training", "num_workers", field(T, &TC::num_workers), -1, 256,
              "data loader workers per rank; -1: from the batch plan (cores per rank)")
          .lp("training.num_workers"),
      integer("training", "max_epochs", field(T, &TC::max_epochs), 1, kIntMax, "stop after this many epochs")
          .lp("training.max_epochs"),
      integer("training", "min_epochs", field(T, &TC::min_epochs), 0, kIntMax,
              "early stopping never stops before this many epochs (capped at max_epochs)")
          .lp("training.min_epochs"),
      integer("training", "max_steps", field(T, &TC::max_steps), -1, kLongMax,
              "stop after this many optimizer steps; -1: no limit")
          .lp("training.max_steps"),
      real("training", "train_prob", field(T, &TC::train_prob), 0.0, true, 1.0,
           "fraction of labeled frames used for training")
          .lp("training.train_prob"),
      real_or_word("training", "val_prob", field(T, &TC::val_prob), 0.0, true, 1.0, "null",
                   "fraction used for validation; the rest (1 - train - val) is the test set; null: half of "
                   "1 - train_prob (rounded to 5 decimals), the other half the test set, as lightning-pose")
          .lp("training.val_prob"),
      real("training", "train_frames", field(T, &TC::train_frames), 0.0, true, kRealMax,
           "train frames to use: 1 = all of the train split, below 1 a fraction of it, above 1 a count (the "
           "rest is unused)")
          .lp("training.train_frames"),
      seed("training", "rng_seed_data_pt", field(T, &TC::rng_seed_data_pt),
           "seed of the train/val/test split and of data shuffling")
          .lp("training.rng_seed_data_pt"),
      seed("training", "rng_seed_model_pt", field(T, &TC::rng_seed_model_pt),
           "seed of the head's initial weights")
          .lp("training.rng_seed_model_pt"),
      choice("training", "optimizer", field(T, &TC::optimizer), train::optimizer_names(), "optimizer")
          .lp("training.optimizer"),
      real("training", "learning_rate", field(T, &TC::learning_rate), 0.0, true, 10.0,
           "base learning rate (before lr_scaling)")
          .lp("training.optimizer_params.learning_rate").alias("optimizer_params.learning_rate"),
      real_or_word("training", "weight_decay", field(T, &TC::weight_decay), 0.0, false, 1.0, "auto",
                   "AdamW's decoupled weight decay; auto: torch's AdamW default, 0.01, what lightning-pose's "
                   "AdamW trains with (Adam takes no weight decay)"),
      int_list("training", "lr_scheduler_milestones", field(T, &TC::lr_scheduler_milestones), 1,
               "epochs at which the learning rate is multiplied by lr_scheduler_gamma (MultiStepLR)")
          .lp("training.lr_scheduler_params.multisteplr.milestones")
          .alias("lr_scheduler_params.multisteplr.milestones"),
      real("training", "lr_scheduler_gamma", field(T, &TC::lr_scheduler_gamma), 0.0, true, 1.0,
           "factor applied at each milestone (MultiStepLR)")
          .lp("training.lr_scheduler_params.multisteplr.gamma").alias("lr_scheduler_params.multisteplr.gamma"),
      choice("training", "lr_scaling", field(T, &TC::lr_scaling), runtime::lr_scaling_names(),
             "scale learning_rate with the effective train batch (per-rank batch x ranks) / reference_batch_size: "
             "none, linear or sqrt"),
      integer("training", "reference_batch_size", field(T, &TC::reference_batch_size), 1, kIntMax,
              "the global batch size learning_rate was tuned for (used by lr_scaling)"),
      integer("training", "unfreezing_epoch", field(T, &TC::unfreezing_epoch), 0, kIntMax,
              "the pretrained backbone is frozen (lr 0, Adam's moments accumulating, as lightning-pose's "
              "UnfreezeBackbone) until this epoch")
          .lp("training.unfreezing_epoch"),
      integer("training", "log_every_n_steps", field(T, &TC::log_every_n_steps), 1, kIntMax,
              "log training metrics every n optimizer steps")
          .lp("training.log_every_n_steps"),
      integer("training", "check_val_every_n_epoch", field(T, &TC::check_val_every_n_epoch), 1, kIntMax,
              "run validation every n epochs")
          .lp("training.check_val_every_n_epoch"),
      integer("training", "early_stop_patience", field(T, &TC::early_stop_patience), 1, kIntMax,
              "with early_stopping: stop after this many validation checks without improvement")
          .lp("training.early_stop_patience"),
      boolean("training", "drop_last", field(T, &TC::drop_last),
              "drop the last incomplete training batch of each epoch"),
      boolean("training", "early_stopping", field(T, &TC::early_stopping),
              "stop when the validation loss has not improved in early_stop_patience checks, or is not finite "
              "(after min_epochs)")
          .lp("training.early_stopping"),
      integer("training", "ckpt_every_n_epochs", field(T, &TC::ckpt_every_n_epochs), 0, kIntMax,
              "also keep checkpoints/epoch=E-step=S.h5 every n epochs, all of them (Lightning's "
              "ModelCheckpoint(every_n_epochs=n, save_top_k=-1)), and the lightning-pose "
              "tb_logs/.../checkpoints/epoch=E-step=S.ckpt of each; 0 (null): none")
          .lp("training.ckpt_every_n_epochs"),
      integer("training", "accumulate_grad_batches", field(T, &TC::accumulate_grad_batches), 1, kIntMax,
              "batches per optimizer step: each batch's loss is divided by n, gradients stay on their rank until "
              "the n-th, which all-reduces and steps (the last batch of an epoch always steps)")
          .lp("training.accumulate_grad_batches"),
      batch_limit("training", "limit_train_batches", field(T, &TC::limit_train_batches),
                  "batches per epoch: a count (10), or a share of the train loader (0.5; semi-supervised: of the "
                  "longer of the labelled and video loaders); null or 0: lightning-pose's steps per epoch")
          .lp("training.limit_train_batches"),
      batch_limit("training", "val_check_interval", field(T, &TC::val_check_interval),
                  "within the epochs that validate (check_val_every_n_epoch): validate after every n training "
                  "batches (an int), or every share of the epoch (0.25); null or 1.0: at the epoch's end")
          .lp("training.val_check_interval"),
      boolean("training", "save_weights_only", field(T, &TC::save_weights_only),
              "best.h5 and last.h5 without the optimizer state (about 3x smaller; predict only, no --resume), "
              "except the last.h5 of a run stopped by a signal")
          .lp("(Lightning ModelCheckpoint save_weights_only)"),
      boolean("training", "uniform_heatmaps_for_nan_keypoints", field(T, &TC::uniform_heatmaps_for_nan_keypoints),
              "a keypoint missing from the labels gets a uniform target heatmap and counts in the loss; "
              "false: it is left out of the loss (a YAML null is false, as lightning-pose reads it)")
          .lp("training.uniform_heatmaps_for_nan_keypoints")
          .on_null("false"),
      // [model]
      choice("model", "model_type", field(M, &MC::model_type), model::model_type_names(),
             "heatmap, or heatmap_mhcrnn (context frames t-2..t+2)")
          .lp("model.model_type"),
      text("model", "model_name", field(M, &MC::model_name), "NAME",
           "the run's name in TensorBoard: event files go to <run>/tb_logs/<model_name>/version_<n>/")
          .lp("model.model_name"),
      refusing_missing_lp_backbones(choice("model", "backbone", field(M, &MC::backbone), model::backbone_names(),
                                           "backbone (docs/MODEL.md: the ResNets, the EfficientNets and the DINO / DINOv2 / "
                                           "DINOv3 / MAE / SAM ViTs and SAM2's Hiera; vitb_sam is built for the configured image "
                                           "size); lightning-pose 1.x's removed names are refused by name"))
          .lp("model.backbone"),
      text("model", "backbone_weights", field(M, &MC::backbone_weights), "PATH",
           "pretrained backbone weights: torchvision's ImageNet .pth, an mmpose checkpoint (lightning-pose's "
           "resnet50_animal_ap10k, ...), a lightning-pose .ckpt or model directory, .safetensors, or a trainer "
           "checkpoint or run folder; empty: random initialisation (docs/MODEL.md lists the download URLs)")
          .lp("(lightning-pose downloads them itself)"),
      text("model", "checkpoint", field(M, &MC::checkpoint), "PATH",
           "a lightning-pose .ckpt (or a folder holding one) whose weights start the run, as lightning-pose's "
           "model.checkpoint: every tensor of it that fits this model (head included), the rest keep their "
           "initial values; not its optimizer state or epoch (trainer runs continue with --resume)")
          .lp("model.checkpoint"),
      text("model", "backbone_checkpoint", field(M, &MC::backbone_checkpoint), "PATH",
           "vitb_imagenet only: a ViT-MAE checkpoint (.safetensors or torch.save) laid over the encoder after its "
           "pretrained weights, as lightning-pose does: each vit_mae.vit.* tensor whose name and shape match is "
           "loaded, the rest skipped; other backbones ignore it (with a warning)")
          .lp("model.backbone_checkpoint"),
      choice("model", "heatmap_loss_type", field(M, &MC::heatmap_loss_type), compute::heatmap_loss_names(),
             "heatmap loss (lightning-pose semantics: docs/COMPUTE.md)")
          .lp("model.heatmap_loss_type"),
      choice_list("model", "losses_to_use", field(M, &MC::losses_to_use), train::unsupervised_loss_names(),
                  "unsupervised losses on unlabelled video frames (data.video_dir), weighted by "
                  "losses.<name>_log_weight; empty: supervised only")
          .lp("model.losses_to_use"),
      choice("model", "precision", field(M, &MC::precision), compute::precision_names(),
             "convolution precision: 32 = fp32; bf16-mixed / 16-mixed = 16-bit convolutions with fp32 "
             "accumulation, fp32 everything else (16-mixed adds dynamic loss scaling); on CPUs the "
             "mixed ones are emulated in fp32 (same numerics, no speed-up)")
          .lp("(Lightning Trainer precision)"),
      choice("model", "float32_matmul_precision", field(M, &MC::float32_matmul_precision),
             compute::float32_matmul_precision_names(),
             "fp32 convolutions on GPUs (precision 32): highest = true fp32 (matches the CPU path); "
             "high = TF32 tensor cores (PyTorch's default for cuDNN convolutions: faster, ~1e-3 relative "
             "error); ignored on CPUs")
          .lp("(torch.set_float32_matmul_precision)"),
      choice("model", "conv_algorithms", field(M, &MC::conv_algorithms), compute::conv_algorithms_names(),
             "how GPUs pick each convolution's cuDNN algorithm: auto = the graph API where this build has "
             "cudnn-frontend (1.57x the legacy calls at bf16 batch 64 on an H200), heuristics for a shape "
             "it has no engine for, else heuristics; heuristics = the legacy calls with cuDNN's ranked "
             "choice; benchmark = time every algorithm once per shape (cudnnFind); graph = the graph "
             "API's first engine that builds; graph-autotune = time up to 8 of those once per shape; "
             "autotune = per shape, graph-autotune's pick or benchmark's, whichever runs faster; "
             "ignored on CPUs")
          .lp("(torch.backends.cudnn.benchmark)"),
      boolean("model", "cuda_graphs", field(M, &MC::cuda_graphs),
              "GPUs: record a training step's (and a prediction batch's) device work once per batch "
              "shape as a CUDA graph and replay it while no buffer moves (training: one process, no "
              "accumulation; other runs go op by op); 1.6x the op-by-op steps at bf16 batch 64 on "
              "an H200 (docs/GPU.md); false runs everything op by op; ignored on CPUs"),
      // [distributed]
      choice("distributed", "backend", field(X, &XC::backend), runtime::backend_names(),
             "gradient all-reduce backend; auto: nccl on GPUs, gloo on CPUs")
          .lp("(DDPStrategy process_group_backend)"),
      choice("distributed", "accelerator", field(X, &XC::accelerator), runtime::accelerator_names(),
             "where to compute; auto: gpu when this build has CUDA and GPUs are visible")
          .lp("(Lightning Trainer accelerator)"),
      keep_blanks(text("distributed", "devices", field(X, &XC::devices), "DEVICES",
                       "Lightning's devices: N, -1, auto, or a list like [0, 1] or \"0,1\"; empty: all visible GPUs"),
                  field(X, &XC::devices))
          .lp("(Lightning Trainer devices)"),
      integer("distributed", "num_nodes", field(X, &XC::num_nodes), 0, kIntMax,
              "nodes in the job; 0: from the launcher (cross-checked when set)")
          .lp("(Lightning Trainer num_nodes)"),
      boolean("distributed", "slurm_auto_requeue", field(X, &XC::slurm_auto_requeue),
              "under SLURM, SIGUSR1 (#SBATCH --signal=USR1@90) checkpoints and requeues the job "
              "(scontrol requeue); false: it only checkpoints and stops")
          .lp("(Lightning SLURMEnvironment auto_requeue)"),
      boolean("distributed", "broadcast_buffers", field(X, &XC::broadcast_buffers),
              "broadcast batch-norm running statistics from rank 0 every step")
          .lp("(DDPStrategy broadcast_buffers)"),
      boolean("distributed", "sync_batchnorm", field(X, &XC::sync_batchnorm),
              "batch-norm statistics over the global batch instead of each rank's share")
          .lp("(Lightning Trainer sync_batchnorm)"),
      boolean("distributed", "manual_gradient_reduction", field(X, &XC::manual_gradient_reduction),
              "all-reduce all gradients after backward instead of overlapping buckets with it"),
      real("distributed", "bucket_cap_mb", field(X, &XC::bucket_cap_mb), 0.0, true, 4096.0,
           "gradient bucket size in MB for the overlapped all-reduce")
          .lp("(DDPStrategy bucket_cap_mb)"),
      real("distributed", "first_bucket_mb", field(X, &XC::first_bucket_mb), 0.0, true, 4096.0,
           "size of the first (last layers') bucket in MB, small so communication starts early"),
      choice("distributed", "nccl_debug", field(X, &XC::nccl_debug), comm::nccl_debug_names(),
             "sets NCCL_DEBUG when non-empty"),
      integer("distributed", "nccl_socket_nthreads", field(X, &XC::nccl_socket_nthreads), 0, 16,
              "sets NCCL_SOCKET_NTHREADS when > 0"),
      // At most a week: deadlines are clock times, and 1e300 s overflowed them into an
      // immediate "MPI_Init did not complete within 1e+300 s".
      real("distributed", "collective_timeout", field(X, &XC::collective_timeout), 0.0, true, 604800.0,
           "seconds a collective may take before the run is aborted with the names of missing ranks (at most "
           "604800, a week)")
          .lp("(DDPStrategy timeout)"),
      // [losses]
      real("losses", "temporal_log_weight", field(L, &LC::temporal_log_weight), -100.0, false, 100.0,
           "temporal loss weight = 1 / (2 exp(log_weight))")
          .lp("losses.temporal.log_weight"),
      real_list("losses", "temporal_epsilon", field(L, &LC::temporal_epsilon), 0.0, kRealMax,
                "keypoint moves between consecutive frames below this many pixels are not penalized (one "
                "value, or one per keypoint)")
          .lp("losses.temporal.epsilon"),
      real("losses", "temporal_prob_threshold", field(L, &LC::temporal_prob_threshold), 0.0, false, 1.0,
           "keypoints whose confidence is below this in either frame are left out of the temporal loss")
          .lp("losses.temporal.prob_threshold"),
      real("losses", "pca_singleview_log_weight", field(L, &LC::pca_singleview_log_weight), -100.0, false, 100.0,
           "pca_singleview loss weight = 1 / (2 exp(log_weight))")
          .lp("losses.pca_singleview.log_weight"),
      components("losses", "pca_singleview_components_to_keep", field(L, &LC::pca_singleview_components_to_keep),
                 "principal components kept: a count (3) or the fraction of variance they explain (0.99)")
          .lp("losses.pca_singleview.components_to_keep"),
      optional_real("losses", "pca_singleview_epsilon", field(L, &LC::pca_singleview_epsilon),
                    "reconstruction errors below this many pixels are not penalized; null: the "
                    "empirical_epsilon_percentile of the labelled frames' errors")
          .lp("losses.pca_singleview.epsilon"),
      real("losses", "pca_singleview_empirical_epsilon_percentile",
           field(L, &LC::pca_singleview_empirical_epsilon_percentile), 0.0, false, 100.0,
           "percentile of the labelled frames' reconstruction errors used as epsilon")
          .lp("losses.pca_singleview.empirical_epsilon_percentile"),
      real("losses", "pca_singleview_empirical_epsilon_multiplier",
           field(L, &LC::pca_singleview_empirical_epsilon_multiplier), 0.0, false, kRealMax,
           "factor on the empirical epsilon")
          .lp("losses.pca_singleview.empirical_epsilon_multiplier"),
      optional_choice("losses", "pca_singleview_centering_method", field(L, &LC::pca_singleview_centering_method),
                      compute::pca_centering_names(),
                      "shift each frame's PCA keypoints by their mean or median (x and y apart) before the "
                      "PCA fit and the loss; null: no shift")
          .lp("losses.pca_singleview.centering_method"),
      real("losses", "pca_multiview_log_weight", field(L, &LC::pca_multiview_log_weight), -100.0, false, 100.0,
           "pca_multiview loss weight = 1 / (2 exp(log_weight))")
          .lp("losses.pca_multiview.log_weight"),
      components("losses", "pca_multiview_components_to_keep", field(L, &LC::pca_multiview_components_to_keep),
                 "as lightning-pose, pca_multiview always keeps 3 (a 3D point seen from several views)")
          .lp("losses.pca_multiview.components_to_keep"),
      optional_real("losses", "pca_multiview_epsilon", field(L, &LC::pca_multiview_epsilon),
                    "as pca_singleview_epsilon, for pca_multiview")
          .lp("losses.pca_multiview.epsilon"),
      real("losses", "pca_multiview_empirical_epsilon_percentile",
           field(L, &LC::pca_multiview_empirical_epsilon_percentile), 0.0, false, 100.0,
           "as pca_singleview_empirical_epsilon_percentile, for pca_multiview")
          .lp("losses.pca_multiview.empirical_epsilon_percentile"),
      real("losses", "pca_multiview_empirical_epsilon_multiplier",
           field(L, &LC::pca_multiview_empirical_epsilon_multiplier), 0.0, false, kRealMax,
           "factor on the empirical epsilon")
          .lp("losses.pca_multiview.empirical_epsilon_multiplier"),
      real("losses", "anneal_init_val", field(L, &LC::anneal_init_val), 0.0, false, kRealMax,
           "factor on every unsupervised weight at the start (warm-up)")
          .lp("callbacks.anneal_weight.init_val"),
      real("losses", "anneal_increase_factor", field(L, &LC::anneal_increase_factor), 0.0, false, kRealMax,
           "added to that factor each epoch after anneal_freeze_until_epoch")
          .lp("callbacks.anneal_weight.increase_factor"),
      real("losses", "anneal_final_val", field(L, &LC::anneal_final_val), 0.0, false, kRealMax,
           "the factor's ceiling")
          .lp("callbacks.anneal_weight.final_val"),
      integer("losses", "anneal_freeze_until_epoch", field(L, &LC::anneal_freeze_until_epoch), 0, kIntMax,
              "the factor stays at anneal_init_val up to this epoch")
          .lp("callbacks.anneal_weight.freeze_until_epoch"),
      // [eval]
      boolean("eval", "predict_vids_after_training", field(E, &EC::predict_vids_after_training),
              "after training, predict every video of test_videos_directory with the best checkpoint "
              "(<run>/video_preds, as `trainer predict --video`)")
          .lp("eval.predict_vids_after_training"),
      text("eval", "test_videos_directory", field(E, &EC::test_videos_directory), "PATH",
           "a video or a folder of videos to predict after training; empty: none")
          .lp("eval.test_videos_directory"),
      boolean("eval", "save_vids_after_training", field(E, &EC::save_vids_after_training),
              "with the videos predicted after training (or `predict --video`), also write "
              "video_preds/labeled_videos/<video>_labeled.mp4")
          .lp("eval.save_vids_after_training"),
      colormap("eval", "colormap", field(E, &EC::colormap), data::labeled_video_colormap_names(),
               "matplotlib colormap of the keypoints in labeled videos; any other matplotlib name is drawn "
               "with the nearest of these, else cool, with a note")
          .lp("eval.colormap"),
      real("eval", "confidence_thresh_for_vid", field(E, &EC::confidence_thresh_for_vid), 0.0, false, 1.0,
           "labeled videos draw a keypoint only where its likelihood is above this")
          .lp("eval.confidence_thresh_for_vid"),
      integer("eval", "video_sequence_length", field(E, &EC::video_sequence_length), 1, kIntMax,
              "video prediction (after training and `trainer predict`): frames per batch, per rank")
          .lp("dali.base.predict.sequence_length"),
      integer("eval", "context_video_sequence_length", field(E, &EC::context_video_sequence_length), 5, kIntMax,
              "video prediction with heatmap_mhcrnn: frames read per batch, per rank; the L - 4 with two context "
              "frames on each side are predicted")
          .lp("dali.context.predict.sequence_length"),
  };
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> table = build_table();  // immutable after first use
  return table;
}

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> sections = {"data", "training", "model", "distributed", "eval", "losses"};
  return sections;
}

const ConfigKey* find_key(const std::string& section, const std::string& name) {
  for (const auto& key : config_keys()) {
    if (key.section != section) continue;
    if (key.name == name) return &key;
    for (const auto& alias : key.aliases) {
      if (alias == name) return &key;
    }
  }
  return nullptr;
}

}  // namespace trainer::app::config_detail
