#pragma once

// What the benchmark executables share: ViT shapes with random weights written once to a temporary model folder
// (timm naming, safetensors: the file a user would load), the sample image, peak RSS.

#include <attnscope/Image.h>
#include <attnscope/Model.h>

#include <fstream>
#include <string>
#include <vector>

namespace attnscope::bench {

struct Shape {
    const char* name;
    int width, depth, heads;
    // Multiply-adds of one 224x224 forward, x2 for FLOPs: the linear layers (qkv 3D^2, proj D^2, MLP 8D^2 per
    // token per block) and the two attention products (2 N^2 D per block), plus the patch embedding.
    double flops() const
    {
        const double n = 197, d = width, l = depth;
        return 2.0 * (12 * d * d * n * l + 2 * n * n * d * l + 196.0 * 768 * d);
    }
};
inline constexpr Shape kShapes[] = { { "deit_tiny", 192, 12, 3 }, { "vit_small", 384, 12, 6 }, { "vit_base", 768, 12, 12 } };

// The shape of that name, or null.
inline const Shape* findShape(const std::string& name)
{
    for (const auto& s : kShapes)
        if (name == s.name)
            return &s;
    return nullptr;
}

// The model folder of `shape` in the temporary directory, written on first use (random N(0, 0.02) weights).
std::string modelFolder(const Shape& shape);
std::shared_ptr<const Model> loadShape(const Shape& shape);

// resources/samples/photos/chelsea.png, decoded once.
const Image& sampleImage();

// A distinct image for index i of a synthetic stream: the sample rolled down by 7 i rows, every other one mirrored.
Image streamImage(int i);

// The first n images of the stream prepared for `model`, with the pointers and indices AnalysisRun::stage takes.
struct StreamBatch {
    std::vector<Model::Prepared> prepared;
    std::vector<const Model::Prepared*> images;
    std::vector<int64_t> indices;
};
StreamBatch streamBatch(const Model& model, int n);

// VmHWM of /proc/self/status in MB (the peak resident set so far).
double peakRssMb();

} // namespace attnscope::bench
