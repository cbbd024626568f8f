// The gradient dump (see gradient_dump.hpp).
#include "train/gradient_dump.hpp"

#include <vector>  // std::vector

#include "util/h5.hpp"              // h5::Handle, H5_OWN
#include "util/h5_atomic_file.hpp"  // h5::AtomicFile
#include "util/h5_io.hpp"           // h5::write_dataset, h5::write_int_attribute, h5::write_strings

namespace trainer::train {

void write_gradient_dump(const std::string& path, model::ParameterStore& store, bool backbone_trained,
                         long global_step, int world_size, compute::Stream& stream) {
  std::vector<float> grads(store.parameter_count());
  store.backend().download(grads.data(), store.grads_data(), grads.size(), stream);
  stream.synchronize();

  h5::AtomicFile file(path, "gradient dump file");
  {
    h5::Handle group = H5_OWN(group, H5Gcreate2(file.get(), "gradients", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5::write_int_attribute(group.get(), "global_step", global_step);
    h5::write_int_attribute(group.get(), "world_size", world_size);
    std::vector<std::string> order;
    for (const auto& e : store.parameters()) {
      // A frozen backbone's gradient buffer holds nothing of this step.
      if (!backbone_trained && e.group == model::ParamGroup::backbone) continue;
      h5::write_dataset(group.get(), e.name, std::vector<hsize_t>(e.shape.begin(), e.shape.end()),
                        grads.data() + e.offset);
      order.push_back(e.name);
    }
    // HDF5 lists a group's members by name; this keeps the network's order.
    h5::write_strings(file.get(), "parameter_order", order);
  }
  file.commit();
}

}  // namespace trainer::train
