#pragma once
// The names of the unsupervised losses model.losses_to_use accepts (lightning-pose's
// names), exported by the layer that implements them (train/unsupervised_losses.cpp).
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::train {

// "temporal", "pca_singleview", "pca_multiview".
const std::vector<std::string>& unsupervised_loss_names();

}  // namespace trainer::train
