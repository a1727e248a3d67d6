// Turns a DatasetSpec into a Dataset: synthetic sets, IDX folders (Fashion-MNIST, MNIST), CSV
// tables and image folders, with normalisation from the train split and a NaN/inf check on everything.
#pragma once
#include "core/data/dataset.h"
#include "core/data/image_folder.h"
#include "core/train/train_config.h"

namespace mpwb {

// Debian's dataset-fashion-mnist installs here.
inline constexpr const char* kDefaultFashionMnistPath = "/usr/share/datasets/fashion-mnist";

// The image-folder reader's options from a spec (the widget's folder check uses them too);
// ConfigError naming the field for values out of range.
ImageFolderOptions image_folder_options(const DatasetSpec& spec);

Dataset load_dataset(const DatasetSpec& spec);

}  // namespace mpwb
