// HDF5 checkpoints (see checkpoint.hpp).
#include "train/checkpoint.hpp"

#include <algorithm>  // std::copy
#include <cstring>    // std::memcpy, std::strncmp
#include <set>        // std::set
#include <vector>     // std::vector

#include "model/backbone_registry.hpp"        // model::adapt_backbone_tensors
#include "train/unsupervised_loss_names.hpp"  // unsupervised_loss_names
#include "util/error.hpp"           // UserError
#include "util/h5.hpp"              // h5::Handle, H5_CHECK, H5_OWN
#include "util/h5_atomic_file.hpp"  // h5::AtomicFile
#include "util/h5_screen.hpp"       // h5::check_before_parsing
#include "util/h5_io.hpp"           // h5::write_dataset, h5::*_attribute, h5::*_string_dataset
#include "util/input_file.hpp"      // check_input_file

namespace trainer::train {

namespace {

// The checkpoint's identifying /state attribute (fixed-length strings throughout:
// the layout predates the shared HDF5 layer and stays as it was).
constexpr const char* kFormat = "trainer-checkpoint-1";
// The effective configuration, a dataset in /state: an attribute lives in the object
// header, which HDF5 limits to 64 KiB, and a configuration may be larger (a long
// model_name or list); a dataset has no such limit.
constexpr const char* kConfig = "config";

std::vector<hsize_t> dims_of(const std::vector<int>& shape) {
  return std::vector<hsize_t>(shape.begin(), shape.end());
}

// ---- reading ----------------------------------------------------------------
// A checkpoint that HDF5 cannot make sense of was changed after it was written (a
// copy cut short, a disk error): the user's to replace, not an internal failure.
const char* const kDamagedHint =
    "use an earlier checkpoint of the run (checkpoints/best.h5 or last.h5 beside it, or a copy); a damaged file "
    "cannot be repaired";

[[noreturn]] void damaged(const std::string& path, const std::string& why) {
  throw UserError("checkpoint '" + path + "' is truncated or damaged: " + why, kDamagedHint);
}

// Runs one reader of the file; a failed HDF5 call in it means a damaged file.
template <class Read>
auto reading(const std::string& path, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const h5::Error& e) {
    damaged(path, e.what());
  }
}

h5::Handle open_checkpoint(const std::string& path) {
  h5::silence_errors_on_this_thread();
  check_input_file(path, "cannot open checkpoint '" + path + "'", "check the path of --resume / --checkpoint");
  // Before HDF5 parses a byte of it: HDF5 misbehaves on damage. The checksum, or for a
  // checkpoint written before it, a walk in a separate process (util/h5_screen.hpp).
  h5::check_before_parsing(path, "checkpoint '" + path + "'", kDamagedHint);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw UserError("cannot open checkpoint '" + path + "': not an HDF5 file",
                    "checkpoints are the .h5 files that `trainer train` writes into <run>/checkpoints");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) damaged(path, h5::last_error_message());
  return h5::Handle(f, H5Fclose);
}

// Attribute readers with the value used when the attribute is absent.
long long int_or(hid_t obj, const char* name, long long fallback) {
  std::int64_t v = 0;
  return h5::read_int_attribute(obj, name, &v) ? v : fallback;
}
double double_or(hid_t obj, const char* name, double fallback) {
  double v = 0;
  return h5::read_double_attribute(obj, name, &v) ? v : fallback;
}
std::string string_or_empty(hid_t obj, const char* name) {
  std::string v;
  h5::read_string_attribute(obj, name, &v);
  return v;
}

// The effective configuration: the /state/config dataset, or in checkpoints written
// before it moved there, the /state attribute of that name.
std::string read_config_text(hid_t state, const std::string& path) {
  if (!h5::link_exists(state, kConfig)) return string_or_empty(state, kConfig);
  h5::Handle set = H5_OWN(dataset, H5Dopen2(state, kConfig, H5P_DEFAULT));
  try {
    return h5::read_string_dataset(set.get());
  } catch (const UserError& e) {
    damaged(path, std::string("/state/config ") + e.what());
  }
}

// Reads a float dataset of the expected shape (any stored float type converts).
void read_floats(hid_t parent, const std::string& path, const std::string& name,
                 const std::vector<int>& shape, std::vector<float>& out) {
  if (!h5::link_exists(parent, name.c_str()))
    throw UserError("checkpoint '" + path + "' has no tensor '" + name + "'",
                    "was it written for a different backbone or number of keypoints?");
  h5::Handle set = H5_OWN(dataset, H5Dopen2(parent, name.c_str(), H5P_DEFAULT));
  const std::vector<hsize_t> dims = h5::dims_of(set.get());
  if (dims != dims_of(shape)) {
    std::string got, want;
    for (auto d : dims) got += std::to_string(d) + " ";
    for (auto d : shape) want += std::to_string(d) + " ";
    throw UserError("checkpoint '" + path + "': tensor '" + name + "' has shape [ " + got +
                        "] but the model expects [ " + want + "]",
                    "check model.backbone, the number of keypoints, data.downsample_factor and, for vitb_sam "
                    "(its position table has the image's grid), data.image_resize_height/width");
  }
  std::size_t n = 1;
  for (int d : shape) n *= std::size_t(d);
  out.resize(n);
  H5_CHECK(H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
}

// Opens /<name> of a checkpoint, or throws the UserError for its absence.
h5::Handle open_group(hid_t file, const char* name, const std::string& message, const char* hint) {
  if (!h5::link_exists(file, name)) throw UserError(message, hint);
  return H5_OWN(group, H5Gopen2(file, name, H5P_DEFAULT));
}

// The names of /model's backbone.* tensors.
std::set<std::string> backbone_names_in(hid_t model) {
  std::set<std::string> names;
  const auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    if (std::strncmp(name, "backbone.", 9) == 0) static_cast<std::set<std::string>*>(out)->insert(name);
    return 0;
  };
  H5_CHECK(H5Literate(model, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect, &names));
  return names;
}

h5::Handle create_group(hid_t parent, const char* name) {
  return H5_OWN(group, H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
}

}  // namespace

void take_snapshot(CheckpointSnapshot& snap, model::ParameterStore& store, Optimizer* optimizer,
                   const TrainingState& state, compute::Stream& stream, SnapshotCopies copies) {
  auto& backend = store.backend();
  const bool defer = copies == SnapshotCopies::deferred_on_the_cpu && backend.kind() == compute::DeviceKind::cpu;
  snap.deferred.clear();
  // Only the optimizer's update writes parameters and moments, so those copies can
  // wait for it; BN statistics and counters change in the next forward: copied now.
  const auto copy = [&](float* dst, const float* src, std::size_t count) {
    if (defer) snap.deferred.push_back({dst, src, count});
    else backend.download(dst, src, count, stream);
  };
  // The optimizer's step counts first: in 16-mixed reading them waits for the stream,
  // which must not wait for the large copies below too.
  long steps[2] = {0, 0};
  if (optimizer != nullptr)
    for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head})
      steps[id == model::ParamGroup::backbone ? 0 : 1] = optimizer->steps(id, stream);
  // One copy of each flat buffer; the writer slices per tensor.
  compute::ensure_capacity(backend, snap.params, store.parameter_count());
  compute::ensure_capacity(backend, snap.buffers, store.buffer_count());
  copy(snap.params.data(), store.params_data(), store.parameter_count());
  backend.download(snap.buffers.data(), store.buffers_data(), store.buffer_count(), stream);
  snap.counters.clear();
  for (const auto& c : store.counters()) snap.counters.push_back(c.value);
  snap.state = state;
  snap.state.has_optimizer = optimizer != nullptr;
  if (optimizer != nullptr) {
    compute::ensure_capacity(backend, snap.exp_avg, optimizer->size());
    compute::ensure_capacity(backend, snap.exp_avg_sq, optimizer->size());
    copy(snap.exp_avg.data(), optimizer->exp_avg(), optimizer->size());
    copy(snap.exp_avg_sq.data(), optimizer->exp_avg_sq(), optimizer->size());
    snap.optimizer_type = optimizer->config().type;
    snap.weight_decay = optimizer->config().weight_decay;
    for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) {
      const auto& g = optimizer->group(id);
      snap.groups[id == model::ParamGroup::backbone ? 0 : 1] = {steps[id == model::ParamGroup::backbone ? 0 : 1],
                                                                g.lr, g.active};
    }
  }
  snap.copied = stream.record();
  snap.deferred_done.reset();
  if (!snap.deferred.empty()) snap.deferred_done = std::make_shared<UpdateFence>();
}

void complete_deferred_copies(CheckpointSnapshot& snap) noexcept {
  for (const auto& c : snap.deferred) std::memcpy(c.dst, c.src, c.count * sizeof(float));
  snap.deferred.clear();
  if (snap.deferred_done) snap.deferred_done->release();
}

namespace {

// /state: where training stands, as attributes, and the configuration as a dataset.
void write_state(hid_t file, const TrainingState& state) {
  h5::Handle st = create_group(file, "state");
  h5::write_int_attribute(st.get(), "epochs_completed", state.epochs_completed);
  h5::write_int_attribute(st.get(), "global_step", state.global_step);
  h5::write_double_attribute(st.get(), "best_val_loss", state.best_val_loss);
  h5::write_int_attribute(st.get(), "bad_checks", state.bad_checks);
  h5::write_int_attribute(st.get(), "world_size", state.world_size);
  // Seeds are stored as int64 like every integer here; the bits round-trip.
  h5::write_int_attribute(st.get(), "rng_seed_data_pt", static_cast<std::int64_t>(state.rng_seed_data));
  h5::write_int_attribute(st.get(), "rng_seed_model_pt", static_cast<std::int64_t>(state.rng_seed_model));
  h5::write_string_dataset(st.get(), kConfig, state.config_text);
  h5::write_fixed_string_attribute(st.get(), "model_type", state.model_type);
  h5::write_fixed_string_attribute(st.get(), "backbone", state.backbone);
  h5::write_int_attribute(st.get(), "num_keypoints", state.num_keypoints);
  h5::write_int_attribute(st.get(), "downsample_factor", state.downsample_factor);
  h5::write_double_attribute(st.get(), "loss_scale", state.loss_scale);
  h5::write_int_attribute(st.get(), "loss_scale_growth_tracker", state.loss_scale_growth_tracker);
  h5::write_int_attribute(st.get(), "batches_into_epoch", state.batches_into_epoch);
  h5::write_double_attribute(st.get(), "epoch_loss_sum", state.epoch_loss_sum);
  h5::write_int_attribute(st.get(), "epoch_steps", state.epoch_steps);
  for (const auto& [name, sum] : state.epoch_unsupervised_sums)
    h5::write_double_attribute(st.get(), ("epoch_" + name + "_loss_sum").c_str(), sum);
  h5::write_fixed_string_attribute(st.get(), "format", kFormat);
}

}  // namespace

void check_state_writable(const TrainingState& state) {
  h5::silence_errors_on_this_thread();
  // An in-memory file (the core driver without a backing store): nothing touches the disk.
  h5::Handle fapl = H5_OWN(plist, H5Pcreate(H5P_FILE_ACCESS));
  H5_CHECK(H5Pset_fapl_core(fapl.get(), 1 << 20, 0));
  try {
    h5::Handle file = H5_OWN(file, H5Fcreate("trainer-state-check.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    write_state(file.get(), state);
  } catch (const h5::Error& e) {
    throw UserError(std::string("a checkpoint of this run could not be written: ") + e.what(),
                    "shorten the longest values of the configuration (model.model_name, lists, paths)");
  }
}

void write_snapshot(const std::string& path, const CheckpointSnapshot& snap, const model::ParameterStore& store) {
  if (!snap.deferred.empty()) throw SystemError("internal error: a checkpoint snapshot was written before its copies");
  snap.copied->synchronize();
  const TrainingState& state = snap.state;
  h5::AtomicFile file(path, "checkpoint file", h5::Checksum::record);
  {
    h5::Handle model = create_group(file.get(), "model");
    for (const auto& key : store.state_dict_order()) {
      using K = model::ParameterStore::Kind;
      if (key.kind == K::parameter) {
        const auto& e = store.parameters()[key.index];
        h5::write_dataset(model.get(), e.name, dims_of(e.shape), snap.params.data() + e.offset);
      } else if (key.kind == K::buffer) {
        const auto& e = store.buffers()[key.index];
        h5::write_dataset(model.get(), e.name, dims_of(e.shape), snap.buffers.data() + e.offset);
      } else {
        const std::int64_t value = snap.counters[key.index];
        h5::write_dataset(model.get(), store.counters()[key.index].name, {}, &value);
      }
    }
  }
  if (state.has_optimizer) {
    h5::Handle opt = create_group(file.get(), "optimizer");
    h5::write_fixed_string_attribute(opt.get(), "type", snap.optimizer_type);
    h5::write_double_attribute(opt.get(), "weight_decay", snap.weight_decay);
    for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) {
      const auto& g = snap.groups[id == model::ParamGroup::backbone ? 0 : 1];
      const std::string prefix = model::group_name(id);
      h5::write_int_attribute(opt.get(), (prefix + "_step").c_str(), g.step);
      h5::write_double_attribute(opt.get(), (prefix + "_lr").c_str(), g.lr);
      h5::write_int_attribute(opt.get(), (prefix + "_active").c_str(), g.active ? 1 : 0);
    }
    h5::Handle gm = create_group(opt.get(), "exp_avg");
    h5::Handle gv = create_group(opt.get(), "exp_avg_sq");
    for (const auto& e : store.parameters()) {
      h5::write_dataset(gm.get(), e.name, dims_of(e.shape), snap.exp_avg.data() + e.offset);
      h5::write_dataset(gv.get(), e.name, dims_of(e.shape), snap.exp_avg_sq.data() + e.offset);
    }
  }
  write_state(file.get(), state);
  file.commit();
}

void save_checkpoint(const std::string& path, model::ParameterStore& store, Optimizer* optimizer,
                     const TrainingState& state, compute::Stream& stream) {
  CheckpointSnapshot snapshot;
  take_snapshot(snapshot, store, optimizer, state, stream);
  write_snapshot(path, snapshot, store);
}

void save_named_tensors(const std::string& path, const std::vector<NamedTensor>& tensors) {
  h5::AtomicFile file(path, "tensor file");
  for (const auto& t : tensors) h5::write_dataset(file.get(), t.name, dims_of(t.shape), t.values.data());
  file.commit();
}

TrainingState load_training_state(const std::string& path) {
  return reading(path, [&] {
    h5::Handle file = open_checkpoint(path);
    // A data set (trainer import / synth) is the likeliest other HDF5 file to land here.
    if (H5Lexists(file.get(), "images", H5P_DEFAULT) > 0 && H5Lexists(file.get(), "keypoints", H5P_DEFAULT) > 0)
      throw UserError("'" + path + "' is a data set (trainer import / synth), not a checkpoint",
                      "train on it with --data.data_files " + path + "; a checkpoint is a run's checkpoints/*.h5");
    h5::Handle st = open_group(file.get(), "state", "'" + path + "' is not a trainer checkpoint (no /state group)",
                               "for backbone weights alone use --init-weights");
    TrainingState s;
    s.epochs_completed = int(int_or(st.get(), "epochs_completed", 0));
    s.global_step = long(int_or(st.get(), "global_step", 0));
    s.best_val_loss = double_or(st.get(), "best_val_loss", s.best_val_loss);
    s.bad_checks = int(int_or(st.get(), "bad_checks", 0));
    s.world_size = int(int_or(st.get(), "world_size", 1));
    s.rng_seed_data = std::uint64_t(int_or(st.get(), "rng_seed_data_pt", 0));
    s.rng_seed_model = std::uint64_t(int_or(st.get(), "rng_seed_model_pt", 0));
    s.config_text = read_config_text(st.get(), path);
    s.model_type = string_or_empty(st.get(), "model_type");
    s.backbone = string_or_empty(st.get(), "backbone");
    s.num_keypoints = int(int_or(st.get(), "num_keypoints", 0));
    s.downsample_factor = int(int_or(st.get(), "downsample_factor", 0));
    s.loss_scale = float(double_or(st.get(), "loss_scale", s.loss_scale));
    s.loss_scale_growth_tracker = int(int_or(st.get(), "loss_scale_growth_tracker", 0));
    s.batches_into_epoch = long(int_or(st.get(), "batches_into_epoch", 0));
    s.epoch_loss_sum = double_or(st.get(), "epoch_loss_sum", 0);
    s.epoch_steps = long(int_or(st.get(), "epoch_steps", 0));
    for (const auto& name : unsupervised_loss_names()) {
      const std::string attribute = "epoch_" + name + "_loss_sum";
      double sum = 0;
      if (h5::read_double_attribute(st.get(), attribute.c_str(), &sum)) s.epoch_unsupervised_sums[name] = sum;
    }
    s.has_optimizer = h5::link_exists(file.get(), "optimizer");
    return s;
  });
}

void load_model(const std::string& path, model::ParameterStore& store, compute::Stream& stream) {
  return reading(path, [&] {
    h5::Handle file = open_checkpoint(path);
    h5::Handle group = open_group(file.get(), "model", "'" + path + "' has no /model group",
                                  "is it a checkpoint written by `trainer train`?");
    std::vector<float> values;
    for (std::size_t i = 0; i < store.parameters().size(); ++i) {
      read_floats(group.get(), path, store.parameters()[i].name, store.parameters()[i].shape, values);
      store.upload_param(i, values, stream);
    }
    for (std::size_t i = 0; i < store.buffers().size(); ++i) {
      read_floats(group.get(), path, store.buffers()[i].name, store.buffers()[i].shape, values);
      store.upload_buffer(i, values, stream);
    }
    for (auto& c : store.counters()) {
      if (!h5::link_exists(group.get(), c.name.c_str())) continue;  // torch state_dicts may lack it (old versions)
      h5::Handle set = H5_OWN(dataset, H5Dopen2(group.get(), c.name.c_str(), H5P_DEFAULT));
      std::int64_t v = 0;
      H5_CHECK(H5Dread(set.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v));
      c.value = v;
    }
  });
}

namespace {

// A backbone tensor of a trainer checkpoint, brought to the model's shape where the
// backbone resizes it at load as it does a pretrained file's (vitb_sam's position
// table, made for another image size: model::adapt_backbone_tensors); any other
// shape is refused as read_floats refuses it.
void read_backbone_floats(hid_t group, const std::string& path, const std::string& name,
                          const std::vector<int>& shape, const model::ParameterStore& store,
                          std::vector<float>& out) {
  if (h5::link_exists(group, name.c_str())) {
    h5::Handle set = H5_OWN(dataset, H5Dopen2(group, name.c_str(), H5P_DEFAULT));
    const std::vector<hsize_t> dims = h5::dims_of(set.get());
    if (dims != dims_of(shape)) {
      std::vector<int> stored_shape(dims.begin(), dims.end());
      read_floats(group, path, name, stored_shape, out);
      std::vector<StoredTensor> tensor = {float32_tensor(name, dims, out)};
      model::adapt_backbone_tensors(tensor, store);
      if (std::vector<hsize_t>(tensor[0].shape.begin(), tensor[0].shape.end()) == dims_of(shape)) {
        out.resize(tensor[0].bytes.size() / sizeof(float));
        std::memcpy(out.data(), tensor[0].bytes.data(), tensor[0].bytes.size());
        return;
      }
    }
  }
  read_floats(group, path, name, shape, out);
}

}  // namespace

int load_backbone_weights(const std::string& path, model::ParameterStore& store, compute::Stream& stream) {
  return reading(path, [&] {
    h5::Handle file = open_checkpoint(path);
    h5::Handle group = open_group(file.get(), "model", "'" + path + "' has no /model group",
                                  "convert torchvision weights with scripts/torchvision_to_h5.py");
    // Checked before anything loads, as for the other weight files (pretrained_weights.cpp):
    // a tensor of either side that the other lacks means weights of another backbone.
    const std::set<std::string> in_file = backbone_names_in(group.get());
    if (in_file.empty())
      throw UserError("'" + path + "' holds no tensor named like this backbone (backbone.conv1.weight, ...)",
                      "convert torchvision weights with scripts/torchvision_to_h5.py --arch <backbone>");
    std::set<std::string> in_model;
    for (const auto& e : store.parameters())
      if (e.group == model::ParamGroup::backbone) in_model.insert(e.name);
    for (const auto& e : store.buffers())
      if (e.group == model::ParamGroup::backbone) in_model.insert(e.name);
    std::set<std::string> counters;  // num_batches_tracked: optional, as in torch state dicts
    for (const auto& c : store.counters()) counters.insert(c.name);
    for (const auto& name : in_file)
      if (!in_model.count(name) && !counters.count(name) && name.rfind("backbone.fc.", 0) != 0)  // a classifier
        throw UserError("'" + path + "' has backbone tensor '" + name + "', but this backbone has no such tensor",
                        "are these weights for another backbone (model.backbone)?");
    std::vector<std::string> missing;
    for (const auto& name : in_model)
      if (!in_file.count(name)) missing.push_back(name);
    if (!missing.empty()) {
      std::string list;
      for (std::size_t i = 0; i < missing.size() && i < 3; ++i) list += (i ? ", " : "") + missing[i];
      throw UserError("'" + path + "' lacks " + std::to_string(missing.size()) + " of the backbone's tensors (" + list +
                          (missing.size() > 3 ? ", ..." : "") + ")",
                      "are these weights for another backbone (model.backbone)?");
    }
    int loaded = 0;
    std::vector<float> values;
    for (std::size_t i = 0; i < store.parameters().size(); ++i) {
      const auto& e = store.parameters()[i];
      if (e.group != model::ParamGroup::backbone) continue;
      read_backbone_floats(group.get(), path, e.name, e.shape, store, values);
      store.upload_param(i, values, stream);
      ++loaded;
    }
    for (std::size_t i = 0; i < store.buffers().size(); ++i) {
      const auto& e = store.buffers()[i];
      if (e.group != model::ParamGroup::backbone) continue;
      read_floats(group.get(), path, e.name, e.shape, values);
      store.upload_buffer(i, values, stream);
      ++loaded;
    }
    return loaded;
  });
}

void load_optimizer(const std::string& path, Optimizer& optimizer, compute::Stream& stream) {
  return reading(path, [&] {
    h5::Handle file = open_checkpoint(path);
    h5::Handle opt = open_group(file.get(), "optimizer", "checkpoint '" + path + "' has no optimizer state",
                                "it cannot be resumed; use --init-weights");
    for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) {
      auto& g = optimizer.group(id);
      const std::string prefix = model::group_name(id);
      optimizer.set_steps(id, long(int_or(opt.get(), (prefix + "_step").c_str(), 0)), stream);
      g.lr = double_or(opt.get(), (prefix + "_lr").c_str(), 0);
      g.active = int_or(opt.get(), (prefix + "_active").c_str(), 0) != 0;
    }
    h5::Handle gm = H5_OWN(group, H5Gopen2(opt.get(), "exp_avg", H5P_DEFAULT));
    h5::Handle gv = H5_OWN(group, H5Gopen2(opt.get(), "exp_avg_sq", H5P_DEFAULT));
    // The optimizer's flat state mirrors the parameter layout.
    std::vector<float> m(optimizer.size()), v(optimizer.size()), values;
    for (const auto& e : optimizer.store().parameters()) {
      read_floats(gm.get(), path, e.name, e.shape, values);
      std::copy(values.begin(), values.end(), m.begin() + long(e.offset));
      read_floats(gv.get(), path, e.name, e.shape, values);
      std::copy(values.begin(), values.end(), v.begin() + long(e.offset));
    }
    auto& backend = optimizer.store().backend();
    backend.upload(optimizer.exp_avg(), m.data(), m.size(), stream);
    backend.upload(optimizer.exp_avg_sq(), v.data(), v.size(), stream);
    stream.synchronize();
  });
}

}  // namespace trainer::train
