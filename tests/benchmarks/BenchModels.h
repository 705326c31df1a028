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

// ViT-S-sized models (width 384, 12 layers, 6 heads, 224 x 224 at patch 16) of the families with position terms inside
// the attention or gated MLPs, each with the FLOPs of the plain vit_small within 3% (the MLPs' multiply-adds equal, a few
// prefix tokens more), written as timm's hub folder of the named architecture: engine_bench's rows beside vit_small.
struct Family {
    const char* name;         // "beit_small": the bench label
    const char* architecture; // the timm registry name config.json gives
};
inline constexpr Family kFamilies[] = { { "beit_small", "beit_base_patch16_224" },
                                        { "dinov3_small", "vit_small_patch16_dinov3" },
                                        { "eva02_small_p16", "eva02_small_patch14_224" },
                                        { "rope_mixed_small", "vit_small_patch16_rope_mixed_224" } };
std::shared_ptr<const Model> loadFamily(const Family& family);
// Swin-T (timm's swin_tiny_patch4_window7_224: 224 x 224, patch 4, window 7, blocks 2, 2, 6, 2, widths 96 to 768) with
// random weights, written as timm's hub folder; its folder for tests/benchmarks/swin_peer.py, which times timm's forward
// of the same weights.
std::string swinTinyFolder();
std::shared_ptr<const Model> loadSwinTiny();

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
