#pragma once

#include "attnscope/Image.h"
#include "attnscope/Result.h"

#include <string>
#include <vector>

namespace attnscope {

// A labelled image set held in memory (small data sets: Fashion-MNIST is 55 MB as 8-bit pixels).
struct LabelledImages {
    std::vector<Image> images;
    std::vector<int> labels;
    std::vector<std::string> classNames;
};

// Debian's dataset-fashion-mnist installs here.
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST in its IDX files (gzip-compressed or not): `split` is "train" (60,000) or "test" (10,000);
// `limit` > 0 keeps the first `limit` images. Grey 28x28 images, classes T-shirt/top ... Ankle boot.
Result<LabelledImages> readFashionMnist(const std::string& dir, const std::string& split, int limit = 0);

// The class an image's folder names (a folder per class, as readImageFolder reads): the index among `labels` of the
// name of the image's parent folder, compared without case and without anything but letters and digits (a folder
// "t-shirt_top" is the class "T-shirt/top"); -1 when it names none.
int classOfFolder(const std::string& imagePath, const std::vector<std::string>& labels);
// classOfFolder of each path (AnalysisOptions::trueClasses).
std::vector<int> classesOfFolders(const std::vector<std::string>& imagePaths, const std::vector<std::string>& labels);

// A folder with one sub-folder per class (sorted names are the classes), images decoded with decodeImage.
Result<LabelledImages> readImageFolder(const std::string& dir, int limit = 0);

} // namespace attnscope
