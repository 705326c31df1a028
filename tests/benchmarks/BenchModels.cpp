#include "BenchModels.h"

#include "checkpoint/ModelWriter.h"
#include "vit/VisionTransformer.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#ifndef ATTNSCOPE_SAMPLES_DIR
#define ATTNSCOPE_SAMPLES_DIR ""
#endif

namespace attnscope::bench {

namespace fs = std::filesystem;

std::string modelFolder(const Shape& s)
{
    const std::string dir = (fs::temp_directory_path() / ("attnscope-bench-" + std::string(s.name))).string();
    if (fs::exists(dir + "/model.safetensors"))
        return dir;
    ModelConfig c;
    c.width = s.width;
    c.depth = s.depth;
    c.numHeads = s.heads;
    c.mlpHidden = 4 * s.width;
    c.numClasses = 1000;
    VisionTransformer net(c);
    {
        torch::NoGradGuard g;
        at::manual_seed(0);
        for (auto& p : net->parameters())
            p.normal_(0, 0.02);
    }
    writeModelFolder(dir, *net, PreprocessConfig {}, {}, nlohmann::json::object());
    return dir;
}

std::shared_ptr<const Model> loadShape(const Shape& s)
{
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const Model>> cache;
    std::lock_guard lock(mutex);
    auto& m = cache[s.name];
    if (!m) {
        auto loaded = Model::load(modelFolder(s));
        if (!loaded) {
            std::fprintf(stderr, "bench: %s\n", loaded.message().c_str());
            std::exit(1);
        }
        m = *loaded;
    }
    return m;
}

StreamBatch streamBatch(const Model& model, int n)
{
    StreamBatch b;
    for (int i = 0; i < n; ++i)
        b.prepared.push_back(*model.prepare(streamImage(i)));
    for (int i = 0; i < n; ++i) { // after the vector has its size: the pointers stay valid
        b.images.push_back(&b.prepared[size_t(i)]);
        b.indices.push_back(i);
    }
    return b;
}

const Image& sampleImage()
{
    static const Image image = [] {
        const char* env = std::getenv("ATTNSCOPE_BENCH_IMAGE");
        const std::string path = env ? env : std::string(ATTNSCOPE_SAMPLES_DIR) + "/photos/chelsea.png";
        auto decoded = decodeImage(path);
        if (!decoded) {
            std::fprintf(stderr, "bench: %s\n", decoded.message().c_str());
            std::exit(1);
        }
        return *decoded;
    }();
    return image;
}

Image streamImage(int i)
{
    const Image& base = sampleImage();
    Image out = base;
    const size_t row = size_t(base.width) * size_t(base.channels);
    const int shift = (i * 7) % base.height;
    for (int y = 0; y < base.height; ++y) {
        const uint8_t* src = base.pixels.data() + size_t((y - shift + base.height) % base.height) * row;
        uint8_t* dst = out.pixels.data() + size_t(y) * row;
        if (i % 2 == 0) {
            std::copy(src, src + row, dst);
            continue;
        }
        for (int x = 0; x < base.width; ++x)
            std::copy(src + size_t(base.width - 1 - x) * base.channels, src + size_t(base.width - x) * base.channels,
                      dst + size_t(x) * base.channels);
    }
    return out;
}

double peakRssMb()
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0; // kB
    return 0;
}

} // namespace attnscope::bench
