// Turns a DatasetSpec into a Dataset: synthetic sets, IDX folders (Fashion-MNIST, MNIST) and
// CSV tables, with normalisation from the train split and a NaN/inf check on everything.
#pragma once
#include "core/data/dataset.h"
#include "core/train/train_config.h"

namespace mpwb {

// Debian's dataset-fashion-mnist installs here.
inline constexpr const char* kDefaultFashionMnistPath = "/usr/share/datasets/fashion-mnist";

Dataset load_dataset(const DatasetSpec& spec);

}  // namespace mpwb
