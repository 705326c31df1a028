#include "BenchModels.h"

#include "checkpoint/SafeTensors.h"
#include "io/AtomicFile.h"
#include "vit/SwinTransformer.h"
#include "train/ModelWriter.h"
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

namespace {

// The architecture each family's registry entry states, at ViT-S size (what the tensors show must agree with it).
ModelConfig familyConfig(const std::string& name)
{
    ModelConfig c;
    c.width = 384;
    c.depth = 12;
    c.numHeads = 6;
    c.mlpHidden = 4 * 384;
    c.numClasses = 1000;
    if (name == "beit_small") { // relative position bias per layer, layer scale, mean pooling through fc_norm
        c.posEmbed = false;
        c.relativePositionBias = c.layerScale = true;
        c.pooling = Pooling::PatchMean;
        c.finalNorm = FinalNorm::Pooled;
    } else if (name == "dinov3_small") { // rotary, 4 registers, layer scale
        c.posEmbed = false;
        c.rope = ModelConfig::Rope::DinoV3;
        c.numRegisters = 4;
        c.layerScale = true;
        c.layerNormEps = 1e-5;
        c.pooling = Pooling::PatchMean;
    } else if (name == "eva02_small_p16") { // axial rotary beside the table, SwiGLU of 8/3 D (the same multiply-adds)
        c.rope = ModelConfig::Rope::Axial;
        c.ropeTemperature = 10000;
        c.ropeReferenceGridH = c.ropeReferenceGridW = 16;
        c.mlpGated = true;
        c.mlpHidden = 1024;
        c.activation = Activation::Silu;
        c.pooling = Pooling::PatchMean;
        c.finalNorm = FinalNorm::Pooled;
    } else if (name == "rope_mixed_small") { // learned frequencies per layer and head, layer scale
        c.posEmbed = false;
        c.rope = ModelConfig::Rope::Mixed;
        c.ropeXY = c.layerScale = true;
    }
    return c;
}

// `net`'s parameters drawn from N(0, 0.02) (seed 0), written as dir/model.safetensors beside dir/config.json.
void writeRandomFolder(const std::string& dir, torch::nn::Module& net, const nlohmann::json& config)
{
    TensorMap tensors;
    {
        torch::NoGradGuard g;
        at::manual_seed(0);
        for (auto& p : net.named_parameters()) {
            p.value().normal_(0, 0.02);
            tensors[p.key()] = p.value().detach();
        }
    }
    fs::create_directories(dir);
    writeSafetensors(dir + "/model.safetensors", tensors, { { "format", "pt" } });
    writeFileAtomically(dir + "/config.json", config.dump(2) + "\n");
}

std::string familyFolder(const Family& f)
{
    const std::string dir = (fs::temp_directory_path() / ("attnscope-bench-" + std::string(f.name))).string();
    if (fs::exists(dir + "/model.safetensors"))
        return dir;
    VisionTransformer net(familyConfig(f.name));
    const nlohmann::json config = { { "architecture", f.architecture },
                                    { "num_classes", 1000 },
                                    { "model_args", { { "num_heads", 6 }, { "img_size", 224 } } } };
    writeRandomFolder(dir, *net, config);
    return dir;
}

} // namespace

std::shared_ptr<const Model> loadFamily(const Family& f)
{
    auto loaded = Model::load(familyFolder(f));
    if (!loaded) {
        std::fprintf(stderr, "bench: %s\n", loaded.message().c_str());
        std::exit(1);
    }
    return *loaded;
}

std::string swinTinyFolder()
{
    const std::string dir = (fs::temp_directory_path() / "attnscope-bench-swin_tiny").string();
    if (fs::exists(dir + "/model.safetensors"))
        return dir;
    ModelConfig c;
    c.hierarchy = Hierarchy::Swin;
    c.patchSize = 4;
    c.numClasses = 1000;
    c.imageHeight = c.imageWidth = 224;
    for (int s = 0; s < 4; ++s)
        c.stages.push_back({ s == 2 ? 6 : 2, 3 << s, 96 << s, 4 * (96 << s), 7, 0 });
    SwinTransformer net(c);
    writeRandomFolder(dir, *net, { { "architecture", "swin_tiny_patch4_window7_224" }, { "num_classes", 1000 } });
    return dir;
}

std::shared_ptr<const Model> loadSwinTiny()
{
    LoadOptions options;
    options.acceptHierarchical = true;
    auto loaded = Model::load(swinTinyFolder(), options);
    if (!loaded) {
        std::fprintf(stderr, "bench: %s\n", loaded.message().c_str());
        std::exit(1);
    }
    return *loaded;
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
