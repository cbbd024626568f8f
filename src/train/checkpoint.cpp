// HDF5 checkpoints (see checkpoint.hpp).
#include "train/checkpoint.hpp"

#include <hdf5.h>  // H5F*, H5D*, H5S*, H5A*, H5G*, H5T*
#include <unistd.h>  // getpid

#include <algorithm>  // std::copy
#include <cstdio>     // std::rename, std::remove
#include <vector>  // std::vector

#include "util/error.hpp"  // UserError, SystemError, detail::throw_system_error

namespace trainer::train {

namespace {

// ---- a minimal RAII layer over the HDF5 C API ------------------------------
std::string innermost_h5_message() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD,
           [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
             if (e && e->desc && static_cast<std::string*>(out)->empty())
               *static_cast<std::string*>(out) = e->desc;
             return 0;
           },
           &message);
  return message.empty() ? "unknown HDF5 error" : message;
}

template <typename T>
T h5_check(T rc, const char* call, const char* file, int line) {
  if (rc < 0) detail::throw_system_error("HDF5", call, innermost_h5_message(), file, line);
  return rc;
}
#define CKPT_H5(call) h5_check((call), #call, __FILE__, __LINE__)

class H5 {
 public:
  using Closer = herr_t (*)(hid_t);
  H5(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5(const H5&) = delete;
  H5& operator=(const H5&) = delete;
  ~H5() {
    if (id_ >= 0) closer_(id_);
  }
  hid_t get() const { return id_; }
  // Closes now and reports failure (used for the file, where close flushes).
  void close() {
    const hid_t id = id_;
    id_ = H5I_INVALID_HID;
    CKPT_H5(closer_(id));
  }

 private:
  hid_t id_;
  Closer closer_;
};

void quiet_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// ---- writing ----------------------------------------------------------------
void write_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                   const void* data) {
  H5 space(CKPT_H5(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(int(dims.size()), dims.data(), nullptr)),
           H5Sclose);
  // Names with '/' (e.g. grad/backbone.conv1.weight) create their groups.
  H5 lcpl(CKPT_H5(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  CKPT_H5(H5Pset_create_intermediate_group(lcpl.get(), 1));
  H5 set(CKPT_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT)),
         H5Dclose);
  CKPT_H5(H5Dwrite(set.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

std::vector<hsize_t> dims_of(const std::vector<int>& shape) {
  return std::vector<hsize_t>(shape.begin(), shape.end());
}

void write_attr_double(hid_t obj, const char* name, double v) {
  H5 space(CKPT_H5(H5Screate(H5S_SCALAR)), H5Sclose);
  H5 a(CKPT_H5(H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  CKPT_H5(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &v));
}
void write_attr_int(hid_t obj, const char* name, long long v) {
  H5 space(CKPT_H5(H5Screate(H5S_SCALAR)), H5Sclose);
  H5 a(CKPT_H5(H5Acreate2(obj, name, H5T_NATIVE_LLONG, space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  CKPT_H5(H5Awrite(a.get(), H5T_NATIVE_LLONG, &v));
}
void write_attr_string(hid_t obj, const char* name, const std::string& v) {
  H5 type(CKPT_H5(H5Tcopy(H5T_C_S1)), H5Tclose);
  CKPT_H5(H5Tset_size(type.get(), v.empty() ? 1 : v.size()));
  CKPT_H5(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  H5 space(CKPT_H5(H5Screate(H5S_SCALAR)), H5Sclose);
  H5 a(CKPT_H5(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  CKPT_H5(H5Awrite(a.get(), type.get(), v.empty() ? "" : v.c_str()));
}

// ---- reading ----------------------------------------------------------------
H5 open_checkpoint(const std::string& path) {
  quiet_hdf5();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    throw UserError("cannot open checkpoint '" + path + "'", "is it an HDF5 file written by `trainer train`?");
  return H5(f, H5Fclose);
}

bool exists(hid_t parent, const std::string& name) { return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0; }

double read_attr_double(hid_t obj, const char* name, double fallback) {
  if (H5Aexists(obj, name) <= 0) return fallback;
  H5 a(CKPT_H5(H5Aopen(obj, name, H5P_DEFAULT)), H5Aclose);
  double v = 0;
  CKPT_H5(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v));
  return v;
}
long long read_attr_int(hid_t obj, const char* name, long long fallback) {
  if (H5Aexists(obj, name) <= 0) return fallback;
  H5 a(CKPT_H5(H5Aopen(obj, name, H5P_DEFAULT)), H5Aclose);
  long long v = 0;
  CKPT_H5(H5Aread(a.get(), H5T_NATIVE_LLONG, &v));
  return v;
}
std::string read_attr_string(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return {};
  H5 a(CKPT_H5(H5Aopen(obj, name, H5P_DEFAULT)), H5Aclose);
  H5 type(CKPT_H5(H5Aget_type(a.get())), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) {
    char* s = nullptr;
    H5 mem(CKPT_H5(H5Tcopy(H5T_C_S1)), H5Tclose);
    CKPT_H5(H5Tset_size(mem.get(), H5T_VARIABLE));
    CKPT_H5(H5Aread(a.get(), mem.get(), &s));
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  const std::size_t n = H5Tget_size(type.get());
  std::vector<char> buf(n + 1, '\0');
  CKPT_H5(H5Aread(a.get(), type.get(), buf.data()));
  return std::string(buf.data());
}

// Reads a float dataset of the expected shape (any stored float type converts).
void read_floats(hid_t parent, const std::string& path, const std::string& name,
                 const std::vector<int>& shape, std::vector<float>& out) {
  if (!exists(parent, name))
    throw UserError("checkpoint '" + path + "' has no tensor '" + name + "'",
                    "was it written for a different backbone or number of keypoints?");
  H5 set(CKPT_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)), H5Dclose);
  H5 space(CKPT_H5(H5Dget_space(set.get())), H5Sclose);
  const int rank = CKPT_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(rank);
  CKPT_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  bool same = std::size_t(rank) == shape.size();
  for (std::size_t i = 0; same && i < shape.size(); ++i) same = dims[i] == hsize_t(shape[i]);
  if (!same) {
    std::string got, want;
    for (auto d : dims) got += std::to_string(d) + " ";
    for (auto d : shape) want += std::to_string(d) + " ";
    throw UserError("checkpoint '" + path + "': tensor '" + name + "' has shape [ " + got +
                        "] but the model expects [ " + want + "]",
                    "check model.backbone, the number of keypoints and data.downsample_factor");
  }
  std::size_t n = 1;
  for (int d : shape) n *= std::size_t(d);
  out.resize(n);
  CKPT_H5(H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
}

}  // namespace

void save_checkpoint(const std::string& path, model::ParameterStore& store, Optimizer* optimizer,
                     const TrainingState& state, compute::Stream& stream) {
  quiet_hdf5();
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  auto& backend = store.backend();
  // One download of each flat buffer, then slices per tensor.
  std::vector<float> params(store.parameter_count()), buffers(store.buffer_count());
  backend.download(params.data(), store.params_data(), params.size(), stream);
  backend.download(buffers.data(), store.buffers_data(), buffers.size(), stream);
  std::vector<float> m, v;
  if (optimizer != nullptr) {
    m.resize(optimizer->size());
    v.resize(optimizer->size());
    backend.download(m.data(), optimizer->exp_avg(), m.size(), stream);
    backend.download(v.data(), optimizer->exp_avg_sq(), v.size(), stream);
  }
  stream.synchronize();

  try {
    H5 file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (file.get() < 0)
      throw UserError("cannot create checkpoint file '" + temp + "'", "is the output folder writable?");
    {
      H5 model(CKPT_H5(H5Gcreate2(file.get(), "model", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
      for (const auto& key : store.state_dict_order()) {
        using K = model::ParameterStore::Kind;
        if (key.kind == K::parameter) {
          const auto& e = store.parameters()[key.index];
          write_dataset(model.get(), e.name, H5T_NATIVE_FLOAT, dims_of(e.shape), params.data() + e.offset);
        } else if (key.kind == K::buffer) {
          const auto& e = store.buffers()[key.index];
          write_dataset(model.get(), e.name, H5T_NATIVE_FLOAT, dims_of(e.shape), buffers.data() + e.offset);
        } else {
          const auto& c = store.counters()[key.index];
          const long long value = c.value;
          write_dataset(model.get(), c.name, H5T_NATIVE_LLONG, {}, &value);
        }
      }
    }
    if (optimizer != nullptr) {
      H5 opt(CKPT_H5(H5Gcreate2(file.get(), "optimizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
      write_attr_string(opt.get(), "type", optimizer->config().type);
      write_attr_double(opt.get(), "weight_decay", optimizer->config().weight_decay);
      for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) {
        const auto& g = optimizer->group(id);
        const std::string prefix = model::group_name(id);
        write_attr_int(opt.get(), (prefix + "_step").c_str(), g.step);
        write_attr_double(opt.get(), (prefix + "_lr").c_str(), g.lr);
        write_attr_int(opt.get(), (prefix + "_active").c_str(), g.active ? 1 : 0);
      }
      H5 gm(CKPT_H5(H5Gcreate2(opt.get(), "exp_avg", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
      H5 gv(CKPT_H5(H5Gcreate2(opt.get(), "exp_avg_sq", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
      for (const auto& e : store.parameters()) {
        write_dataset(gm.get(), e.name, H5T_NATIVE_FLOAT, dims_of(e.shape), m.data() + e.offset);
        write_dataset(gv.get(), e.name, H5T_NATIVE_FLOAT, dims_of(e.shape), v.data() + e.offset);
      }
    }
    {
      H5 st(CKPT_H5(H5Gcreate2(file.get(), "state", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
      write_attr_int(st.get(), "epochs_completed", state.epochs_completed);
      write_attr_int(st.get(), "global_step", state.global_step);
      write_attr_double(st.get(), "best_val_loss", state.best_val_loss);
      write_attr_int(st.get(), "bad_checks", state.bad_checks);
      write_attr_int(st.get(), "world_size", state.world_size);
      write_attr_int(st.get(), "rng_seed_data_pt", (long long)state.rng_seed_data);
      write_attr_int(st.get(), "rng_seed_model_pt", (long long)state.rng_seed_model);
      write_attr_string(st.get(), "config", state.config_text);
      write_attr_string(st.get(), "backbone", state.backbone);
      write_attr_int(st.get(), "num_keypoints", state.num_keypoints);
      write_attr_int(st.get(), "downsample_factor", state.downsample_factor);
      write_attr_string(st.get(), "format", "trainer-checkpoint-1");
    }
    CKPT_H5(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    file.close();
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw SystemError("cannot rename '" + temp + "' to '" + path + "'");
  }
}

void save_named_tensors(const std::string& path, const std::vector<NamedTensor>& tensors) {
  quiet_hdf5();
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  try {
    H5 file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (file.get() < 0) throw UserError("cannot create '" + temp + "'", "is the folder writable?");
    for (const auto& t : tensors) write_dataset(file.get(), t.name, H5T_NATIVE_FLOAT, dims_of(t.shape), t.values.data());
    file.close();
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw SystemError("cannot rename '" + temp + "' to '" + path + "'");
  }
}

TrainingState load_training_state(const std::string& path) {
  H5 file = open_checkpoint(path);
  if (!exists(file.get(), "state"))
    throw UserError("'" + path + "' is not a trainer checkpoint (no /state group)",
                    "for backbone weights alone use --init-weights");
  H5 st(CKPT_H5(H5Gopen2(file.get(), "state", H5P_DEFAULT)), H5Gclose);
  TrainingState s;
  s.epochs_completed = int(read_attr_int(st.get(), "epochs_completed", 0));
  s.global_step = long(read_attr_int(st.get(), "global_step", 0));
  s.best_val_loss = read_attr_double(st.get(), "best_val_loss", s.best_val_loss);
  s.bad_checks = int(read_attr_int(st.get(), "bad_checks", 0));
  s.world_size = int(read_attr_int(st.get(), "world_size", 1));
  s.rng_seed_data = std::uint64_t(read_attr_int(st.get(), "rng_seed_data_pt", 0));
  s.rng_seed_model = std::uint64_t(read_attr_int(st.get(), "rng_seed_model_pt", 0));
  s.config_text = read_attr_string(st.get(), "config");
  s.backbone = read_attr_string(st.get(), "backbone");
  s.num_keypoints = int(read_attr_int(st.get(), "num_keypoints", 0));
  s.downsample_factor = int(read_attr_int(st.get(), "downsample_factor", 0));
  return s;
}

void load_model(const std::string& path, model::ParameterStore& store, compute::Stream& stream) {
  H5 file = open_checkpoint(path);
  if (!exists(file.get(), "model"))
    throw UserError("'" + path + "' has no /model group", "is it a checkpoint written by `trainer train`?");
  H5 group(CKPT_H5(H5Gopen2(file.get(), "model", H5P_DEFAULT)), H5Gclose);
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
    if (!exists(group.get(), c.name)) continue;  // torch state_dicts may lack it (old versions)
    H5 set(CKPT_H5(H5Dopen2(group.get(), c.name.c_str(), H5P_DEFAULT)), H5Dclose);
    long long v = 0;
    CKPT_H5(H5Dread(set.get(), H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v));
    c.value = v;
  }
}

int load_backbone_weights(const std::string& path, model::ParameterStore& store, compute::Stream& stream) {
  H5 file = open_checkpoint(path);
  if (!exists(file.get(), "model"))
    throw UserError("'" + path + "' has no /model group",
                    "convert torchvision weights with scripts/torchvision_to_h5.py");
  H5 group(CKPT_H5(H5Gopen2(file.get(), "model", H5P_DEFAULT)), H5Gclose);
  int loaded = 0;
  std::vector<float> values;
  for (std::size_t i = 0; i < store.parameters().size(); ++i) {
    const auto& e = store.parameters()[i];
    if (e.group != model::ParamGroup::backbone || !exists(group.get(), e.name)) continue;
    read_floats(group.get(), path, e.name, e.shape, values);
    store.upload_param(i, values, stream);
    ++loaded;
  }
  for (std::size_t i = 0; i < store.buffers().size(); ++i) {
    const auto& e = store.buffers()[i];
    if (e.group != model::ParamGroup::backbone || !exists(group.get(), e.name)) continue;
    read_floats(group.get(), path, e.name, e.shape, values);
    store.upload_buffer(i, values, stream);
    ++loaded;
  }
  if (loaded == 0)
    throw UserError("'" + path + "' holds no tensor named like this backbone (backbone.conv1.weight, ...)",
                    "convert torchvision weights with scripts/torchvision_to_h5.py --arch <backbone>");
  return loaded;
}

void load_optimizer(const std::string& path, Optimizer& optimizer, compute::Stream& stream) {
  H5 file = open_checkpoint(path);
  if (!exists(file.get(), "optimizer"))
    throw UserError("checkpoint '" + path + "' has no optimizer state", "it cannot be resumed; use --init-weights");
  H5 opt(CKPT_H5(H5Gopen2(file.get(), "optimizer", H5P_DEFAULT)), H5Gclose);
  for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) {
    auto& g = optimizer.group(id);
    const std::string prefix = model::group_name(id);
    g.step = long(read_attr_int(opt.get(), (prefix + "_step").c_str(), 0));
    g.lr = read_attr_double(opt.get(), (prefix + "_lr").c_str(), 0);
    g.active = read_attr_int(opt.get(), (prefix + "_active").c_str(), 0) != 0;
  }
  H5 gm(CKPT_H5(H5Gopen2(opt.get(), "exp_avg", H5P_DEFAULT)), H5Gclose);
  H5 gv(CKPT_H5(H5Gopen2(opt.get(), "exp_avg_sq", H5P_DEFAULT)), H5Gclose);
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
}

}  // namespace trainer::train
