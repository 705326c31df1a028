#include "attnscope/Model.h"
#include "attnscope/CpuKernels.h"

#include "checkpoint/ConfigSources.h"
#include "checkpoint/Families.h"
#include "checkpoint/ModelLoader.h"
#include "image/Preprocess.h"
#include "io/LoadError.h"
#include "io/TensorImpl.h"
#include "vit/AttentionProducts.h"
#include "vit/ModelImpl.h"
#include "vit/PackedLinear.h"
#include "vit/Threads.h"
#include "vit/VisionTransformer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <dlfcn.h>
#include <mutex>
#include <unistd.h>

#ifdef ATTNSCOPE_HAVE_DNNL
#include "vit/OneDnnSupport.h"
#endif

#ifndef ATTNSCOPE_SOURCE_RESOURCES
#define ATTNSCOPE_SOURCE_RESOURCES ""
#endif
#ifndef ATTNSCOPE_INSTALL_DATADIR
#define ATTNSCOPE_INSTALL_DATADIR ""
#endif
#ifndef ATTNSCOPE_VERSION
#define ATTNSCOPE_VERSION "0.0.0"
#endif

namespace attnscope {

namespace fs = std::filesystem;

namespace {

std::string executableDir()
{
    std::error_code ec;
    auto p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.parent_path().string();
}

std::once_flag g_threadsChosen;

// With the linear layers on oneDNN (PackedLinear.h) OpenBLAS is left only the attention's small products, which
// the OpenMP team spreads over heads when oneDNN has no kernel for them (AttentionProducts.h); its pthread pool
// spinning beside LibTorch's OpenMP team costs more than it gains (a 2-thread ViT-S forward 80 -> 97-117 ms), so
// it keeps one thread. Where oneDNN has no fast kernel on this CPU, OpenBLAS runs the linear layers and gets the
// threads.
int blasThreadsFor(int threads) { return PackedLinears::kernelHere().empty() ? threads : 1; }

// A count the user gave OpenBLAS in its environment is theirs.
void alignBlasThreads()
{
    std::call_once(g_threadsChosen, [] {
        if (!std::getenv("OPENBLAS_NUM_THREADS"))
            setBlasThreads(blasThreadsFor(at::get_num_threads()));
    });
}

// One forward over a group of same-sized inputs [C, H, W], split into one Trace per input.
std::vector<Trace> forwardGroup(const Model& model, const std::vector<at::Tensor>& xs, const RunOptions& options)
{
    const at::Tensor x = xs.size() == 1 ? xs.front().unsqueeze(0) : at::stack(xs);
    return hostTraces(model, forwardBatch(model, x, options), x, {});
}

// `builtin:NAME` as the folder of the embedded model NAME (builtinModelDir); any other path as it is.
std::string embeddedModelFolder(const std::string& given)
{
    if (given.rfind("builtin:", 0) != 0)
        return given;
    const std::string name = given.substr(8);
    const std::string path = (fs::path(builtinModelDir()) / name).string();
    if (name.empty() || name.find('/') != std::string::npos || !fs::is_directory(path))
        throw LoadError(given + ": no such embedded model (see attnscope-cli info --list)");
    return path;
}

// What every forward at the model's input size shares, made once: each token's position row and the rotary angles.
void makeGridTables(Model::Impl& impl)
{
    const ModelConfig& c = impl.info.config;
    if (impl.swin) // its position biases and masks are made for the one input size it runs at (loadHierarchical)
        return;
    torch::NoGradGuard noGrad;
    if (c.posEmbed)
        impl.positions = impl.net->tokenPositions(c.gridHeight(), c.gridWidth());
    impl.rope = ropeAngles(c, c.gridHeight(), c.gridWidth(), impl.net->ropeFreqs, impl.device);
}

// The parameters of `module` from `tensors`, each checked finite, as set_data (no copy on the CPU); the count.
int64_t loadParameters(torch::nn::Module& module, const TensorMap& tensors, const std::string& weightsPath, const at::Device& device)
{
    std::map<std::string, std::vector<int64_t>> expected;
    for (const auto& p : module.named_parameters())
        expected[p.key()] = p.value().sizes().vec();
    checkTensorsAgainst(expected, tensors, weightsPath);
    int64_t count = 0;
    for (auto& p : module.named_parameters()) {
        const at::Tensor& src = tensors.at(p.key());
        if (!allFinite(src))
            throw LoadError(weightsPath + ": " + p.key() + " holds NaN or Inf values");
        p.value().set_data(src.to(device, at::kFloat));
        p.value().set_requires_grad(false);
        count += src.numel();
    }
    return count;
}

// A hierarchical model (Swin): its module, its weights, and its blocks' position biases and masks for its input size,
// the one size it runs at.
std::unique_ptr<Model::Impl> loadHierarchical(std::unique_ptr<Model::Impl> impl, const TensorMap& tensors,
                                              const std::string& weightsPath, const at::Device& device,
                                              const LoadOptions& options)
{
    ModelInfo& info = impl->info;
    if (!options.acceptHierarchical)
        throw LoadError(info.path + ": a " + (info.config.hierarchy == Hierarchy::SwinV2 ? "Swin v2" : "Swin")
                        + " (hierarchical windowed attention), whose traces are per window and per stage: a program that reads "
                          "them as a ViT's does not take it (LoadOptions::acceptHierarchical; attnscope-cli, the window, "
                          "Python and the remote host do)");
    if ((options.inputHeight != 0 || options.inputWidth != 0)
        && (options.inputHeight != info.config.imageHeight || options.inputWidth != info.config.imageWidth))
        throw LoadError(info.path + ": a Swin runs at its input size " + std::to_string(info.config.imageHeight) + "x"
                        + std::to_string(info.config.imageWidth) + " only (its windows and masks are made for that grid)");
    {
        SkipParameterInit uninitialised;
        impl->swin = SwinTransformer(info.config);
    }
    info.parameterCount = loadParameters(*impl->swin, tensors, weightsPath, device);
    impl->swin->eval();
    {
        torch::NoGradGuard noGrad;
        impl->swin->makeBlockTables(device);
    }
    impl->device = device;
    info.trainedHeight = info.config.imageHeight;
    info.trainedWidth = info.config.imageWidth;
    impl->trainedPreprocess = info.preprocess;
    return impl;
}

} // namespace

at::Device parseDevice(const std::string& spec)
{
    if (spec == "cpu")
        return at::kCPU;
    if (spec == "auto")
        return torch::cuda::is_available() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
        if (!torch::cuda::is_available())
            throw LoadError("device " + spec + ": this build of LibTorch has no CUDA, or no GPU is present (use --device cpu)");
        int index = 0;
        if (spec.size() > 5) {
            try {
                index = std::stoi(spec.substr(5));
            } catch (...) {
                throw LoadError("device " + spec + ": not a device (auto, cpu, cuda, cuda:<i>)");
            }
        }
        if (index < 0 || size_t(index) >= torch::cuda::device_count())
            throw LoadError("device " + spec + ": only " + std::to_string(torch::cuda::device_count()) + " CUDA devices");
        return at::Device(at::kCUDA, int8_t(index));
    }
    throw LoadError("device " + spec + ": not a device (auto, cpu, cuda, cuda:<i>)");
}

bool RecordSpec::wants(int layer) const
{
    return layers.empty() || std::find(layers.begin(), layers.end(), layer) != layers.end();
}

Model::Model(std::unique_ptr<Impl> impl)
    : m_impl(std::move(impl))
{
}

Model::~Model() = default;

const ModelInfo& Model::info() const { return m_impl->info; }

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const LoadOptions& options)
{
    alignBlasThreads(); // one thread count for OpenMP and OpenBLAS unless setNumThreads chose one
    tuneAllocatorForForwards();
    try {
        const at::Device device = parseDevice(options.device);
        ModelFiles files = locateModelFiles(embeddedModelFolder(path), options.descriptionPath);
        checkNamedFamily(files.sources); // before a tensor is read: never run as the nearest family it resembles
        TensorMap tensors = readCheckpoint(files);
        DescribedNames described;
        if (files.sources.description)
            tensors = applyDescriptionRenames(std::move(tensors), *files.sources.description,
                                              files.sources.descriptionPath, &described);
        NamingHints hints;
        tensors = toCanonicalNames(std::move(tensors), hints, files.weights,
                                   files.sources.description ? &described : nullptr);
        ResolvedConfig resolved;
        try {
            resolved = resolveConfig(tensors, hints, files.sources, files.weights);
        } catch (const nlohmann::json::exception& e) {
            // A config value of the wrong JSON type ("model_type": 7): name the file that holds it. Which key is
            // not known here; nlohmann's message says which type was wanted.
            std::string where;
            for (const auto* f : { &files.sources.descriptionPath, &files.sources.configPath, &files.sources.preprocessorPath })
                where += (f->empty() ? "" : (where.empty() ? "" : " or ") + *f);
            throw LoadError((where.empty() ? files.weights : where) + ": a value has the wrong JSON type (" + e.what() + ")");
        }

        auto impl = std::make_unique<Impl>();
        ModelInfo& info = impl->info;
        info.path = path;
        info.weightsPath = files.weights;
        info.format = files.format;
        // "described" only where a description's rules made the names; one that only states the architecture (a
        // vit-pytorch model's heads) leaves the naming the tensors' own.
        const bool renamed = files.sources.description
                             && (files.sources.description->contains("rename") || files.sources.description->contains("concatenate"));
        info.naming = renamed ? "described (" + hints.naming + " after renaming)" : hints.naming;
        info.family = !resolved.family.empty() ? resolved.family : hints.family.empty() ? "vit" : hints.family;
        info.recognition = !resolved.recognition.empty() ? resolved.recognition : "tensor names (" + hints.naming + " naming)";
        info.inferred = resolved.inferred;
        if (!files.taken.empty())
            info.inferred.insert(info.inferred.begin(), "tensors: the checkpoint's " + files.taken);
        info.configSource = resolved.source;
        info.guesses = resolved.guesses;
        info.ignoredConfigKeys = resolved.ignoredConfigKeys;
        info.config = resolved.model;
        info.preprocess = resolved.preprocess;
        info.labels = resolved.labels;
        info.device = device.str();

        if (info.config.hierarchical())
            return std::shared_ptr<const Model>(new Model(loadHierarchical(std::move(impl), tensors, files.weights, device, options)));
        {
            SkipParameterInit uninitialised; // every parameter is replaced below: no random initialisation
            impl->net = VisionTransformer(info.config);
        }
        if (info.config.posFixedSinCos) // made, not read (no state dict holds it)
            tensors["pos_embed"] = sinCosPositions(info.config.gridHeight(), info.config.gridWidth(), info.config.width);
        std::map<std::string, std::vector<int64_t>> expected;
        for (const auto& p : impl->net->named_parameters())
            expected[p.key()] = p.value().sizes().vec();
        if (files.sources.description) {
            // A tensor the model has no place for, after a description's rules: a rule missed it or renamed it wrongly.
            // Named as the checkpoint names it, so that the rule to write is plain.
            std::vector<std::string> unused;
            for (const auto& [name, t] : tensors)
                if (!expected.count(name))
                    unused.push_back(name);
            if (!unused.empty())
                throw LoadError(unusedNamesError(unused, described, files.weights));
        }
        checkTensorsAgainst(expected, tensors, files.weights);
        for (auto& p : impl->net->named_parameters()) {
            const at::Tensor& src = tensors.at(p.key());
            if (!allFinite(src))
                throw LoadError(files.weights + ": " + p.key() + " holds NaN or Inf values");
            // set_data shares the checkpoint's memory (a memory map for float32 safetensors): no copy on the CPU.
            p.value().set_data(src.to(device, at::kFloat));
            p.value().set_requires_grad(false);
            if (!(info.config.posFixedSinCos && p.key() == "pos_embed"))
                info.parameterCount += src.numel();
        }
        if (info.config.attention == AttentionKind::Quadratic)
            for (int l = 0; l < info.config.depth; ++l) {
                const std::string prefix = "blocks." + std::to_string(l) + ".attn.";
                const at::Tensor centre = tensors.at(prefix + "centre").to(at::kDouble).contiguous();
                const at::Tensor alpha = tensors.at(prefix + "alpha").to(at::kDouble).contiguous();
                auto& heads = info.quadraticHeads.emplace_back();
                for (int h = 0; h < info.config.numHeads; ++h)
                    heads.push_back({ centre[h][0].item<double>(), centre[h][1].item<double>(), alpha[h].item<double>() });
            }
        impl->net->eval();
        impl->device = device;
        info.trainedHeight = info.config.imageHeight;
        info.trainedWidth = info.config.imageWidth;
        impl->trainedPreprocess = info.preprocess;
        makeGridTables(*impl);
        std::shared_ptr<const Model> model(new Model(std::move(impl)));
        if (options.inputHeight != 0 || options.inputWidth != 0)
            return model->withInputSize(options.inputHeight, options.inputWidth);
        return model;
    } catch (const LoadError& e) {
        return Error { e.what(), false, e.missing };
    } catch (const c10::Error& e) {
        return Error { path + ": " + e.what_without_backtrace() };
    } catch (const std::exception& e) {
        return Error { path + ": " + e.what() };
    }
}

Result<Model::Prepared> Model::prepare(const Image& image) const
{
    if (image.empty() || image.width <= 0 || image.height <= 0)
        return Error { "empty image" };
    try {
        c10::InferenceMode guard;
        Prepared out;
        out.input = wrap(preprocessImage(image, info().preprocess, info().config.channels, &out.shown));
        return out;
    } catch (const c10::Error& e) {
        return Error { std::string("preprocessing failed: ") + e.what_without_backtrace() };
    }
}

Result<std::shared_ptr<const Model>> Model::withInputSize(int height, int width) const
{
    const Impl& from = *m_impl;
    const ModelConfig& trained = from.info.config;
    const int p = trained.patchSize;
    const std::string size = std::to_string(height) + "x" + std::to_string(width);
    // The side limit of the configs (ConfigResolver.cpp): a grid beyond it is a mistake, not a model to run.
    constexpr int kMaxSide = 16384;
    if (height <= 0 || width <= 0 || height % p != 0 || width % p != 0 || height > kMaxSide || width > kMaxSide)
        return Error { "input size " + size + ": height and width must be multiples of the patch size " + std::to_string(p)
                       + " from " + std::to_string(p) + " to " + std::to_string(kMaxSide - kMaxSide % p) };
    if (from.swin && (height != from.info.trainedHeight || width != from.info.trainedWidth))
        return Error { "input size " + size + ": a Swin runs at its input size " + std::to_string(from.info.trainedHeight) + "x"
                       + std::to_string(from.info.trainedWidth) + " only (its windows and masks are made for that grid)" };
    if (trained.relativePositionBias && (height != from.info.trainedHeight || width != from.info.trainedWidth))
        return Error { "input size " + size + ": this model's relative position bias tables are for its trained "
                       + std::to_string(from.info.trainedHeight) + "x" + std::to_string(from.info.trainedWidth)
                       + " input only (resampling them is not supported)" };
    try {
        auto impl = std::make_unique<Impl>();
        impl->info = from.info;
        impl->net = from.net; // the same module: weights, and the trained position table, shared
        impl->swin = from.swin;
        impl->device = from.device;
        impl->linears = from.linears;
        impl->products = from.products;
        impl->trainedPreprocess = from.trainedPreprocess;
        ModelInfo& info = impl->info;
        info.config.imageHeight = height;
        info.config.imageWidth = width;
        if (height == from.info.trainedHeight && width == from.info.trainedWidth) {
            info.preprocess = from.trainedPreprocess;
        } else {
            info.preprocess = preprocessAtInputSize(from.trainedPreprocess, height, width);
            info.preprocess.source += ", for the input size " + size;
        }
        makeGridTables(*impl);
        return std::shared_ptr<const Model>(new Model(std::move(impl)));
    } catch (const c10::Error& e) {
        return Error { "input size " + size + ": " + e.what_without_backtrace() };
    } catch (const std::exception& e) {
        return Error { "input size " + size + ": " + e.what() };
    }
}

std::string Model::describePreparation(int width, int height, int channels) const
{
    return attnscope::describePreparation(width, height, channels, info().preprocess, info().config.channels);
}

std::vector<ClassProbability> topClasses(const Tensor& logits, int k)
{
    const int64_t n = logits.numel();
    if (n == 0 || k <= 0)
        return {};
    const float* z = logits.data();
    const double zmax = *std::max_element(z, z + n);
    std::vector<ClassProbability> all(static_cast<size_t>(n));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        all[size_t(i)] = { int(i), std::exp(double(z[i]) - zmax) };
        sum += all[size_t(i)].probability;
    }
    for (auto& c : all)
        c.probability /= sum;
    const size_t top = size_t(std::min<int64_t>(k, n));
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(top), all.end(), [](const ClassProbability& a, const ClassProbability& b) {
        return a.probability > b.probability || (a.probability == b.probability && a.index < b.index);
    });
    all.resize(top);
    return all;
}

Result<Tensor> Model::normalise(const Image& image) const
{
    if (image.empty())
        return Error { "empty image" };
    try {
        c10::InferenceMode guard;
        PreprocessConfig p = info().preprocess;
        p.resize = ResizeMode::None;
        p.centerCrop = false;
        return wrap(preprocessImage(image, p, info().config.channels, nullptr));
    } catch (const c10::Error& e) {
        return Error { std::string("preprocessing failed: ") + e.what_without_backtrace() };
    }
}

Result<Trace> Model::run(const Tensor& input, const RunOptions& options) const
{
    auto traces = runBatch({ input }, options);
    if (!traces)
        return traces.error();
    return std::move(traces->front());
}

Result<std::vector<at::Tensor>> checkedBatchInputs(const ModelConfig& c, const std::vector<Tensor>& inputs)
{
    if (inputs.empty())
        return Error { "no input" };
    std::vector<at::Tensor> xs;
    for (const auto& input : inputs) {
        at::Tensor x = unwrap(input);
        if (!x.defined())
            return Error { "no input" };
        if (x.dim() == 4 && x.size(0) == 1)
            x = x[0];
        if (x.dim() != 3 || x.size(0) != c.channels)
            return Error { "input must be [" + std::to_string(c.channels) + ", H, W] for this model" };
        if (x.size(1) % c.patchSize || x.size(2) % c.patchSize || x.size(1) == 0 || x.size(2) == 0)
            return Error { "input size " + std::to_string(x.size(1)) + "x" + std::to_string(x.size(2))
                           + " is not a multiple of the patch size " + std::to_string(c.patchSize) };
        if (!xs.empty() && x.sizes() != xs.front().sizes())
            return Error { "a batch needs inputs of one size" };
        xs.push_back(x);
    }
    return xs;
}

Result<std::vector<Trace>> Model::runBatch(const std::vector<Tensor>& inputs, const RunOptions& options) const
{
    const ModelConfig& c = config();
    auto checked = checkedBatchInputs(c, inputs);
    if (!checked)
        return checked.error();
    const std::vector<at::Tensor>& xs = *checked;
    // Refused before anything is allocated when it cannot fit; the weights are loaded already, so what must fit
    // in MemAvailable is what the run adds (per image of the batch).
    {
        const int64_t h = xs.front().size(1), w = xs.front().size(2), n = int64_t(xs.size());
        const RunMemory one = estimateRunMemory(c, options.record, h, w);
        const int64_t taps = one.taps > INT64_MAX / n ? INT64_MAX : one.taps * n;
        const int64_t working = one.working > INT64_MAX / n ? INT64_MAX : one.working * n;
        const int64_t available = availableMemoryBytes();
        if (available >= 0 && double(taps) + double(working) > double(available))
            return Error { "run refused: an input of " + std::to_string(h) + "x" + std::to_string(w) + " ("
                           + std::to_string(one.tokens) + " tokens) needs about " + formatBytes(taps + std::min(working, INT64_MAX - taps))
                           + " (recorded taps " + formatBytes(taps) + ", working " + formatBytes(working)
                           + ") but only " + formatBytes(available) + " is available (MemAvailable); record fewer layers or use a smaller input" };
    }
    if (!options.ablatedHeads.empty()) {
        if (options.ablatedHeads.size() != xs.size())
            return Error { "head ablation: " + std::to_string(options.ablatedHeads.size()) + " heads named for " + std::to_string(xs.size()) + " inputs" };
        for (const HeadRef& h : options.ablatedHeads)
            if (h.layer < 0 || h.layer > c.depth || h.head < 0 || h.head >= (h.layer > 0 ? c.headsAt(h.layer) : c.maxHeads()))
                return Error { "head ablation: layer " + std::to_string(h.layer) + " head " + std::to_string(h.head) + " is outside the model's layers 1.."
                               + std::to_string(c.depth) + " and heads 0.." + std::to_string(c.headsAt(std::max(h.layer, 1)) - 1) };
    }
    return catchForwardErrors([&]() -> Result<std::vector<Trace>> {
        const int threads = m_impl->device.is_cpu() ? interOpThreads() : 1;
        if (threads <= 1 || xs.size() < 2)
            return forwardGroup(*this, xs, options);
        // Inter-op: with several inputs and threads, each input gets a single-threaded forward of its own on the next
        // free thread, which keeps every core in the matrix kernels instead of waiting at each operator's join
        // (docs/performance.md, Thread policy). The traces are those of one forward at a time, in input order.
        std::vector<Trace> traces(xs.size());
        runInterOp(xs.size(), threads, [&](size_t i) {
            if (options.ablatedHeads.empty()) {
                traces[i] = std::move(forwardGroup(*this, { xs[i] }, options).front());
                return;
            }
            RunOptions one = options; // the head this input runs with ablated
            one.ablatedHeads = { options.ablatedHeads[i] };
            traces[i] = std::move(forwardGroup(*this, { xs[i] }, one).front());
        });
        return traces;
    });
}

std::string builtinModelDir()
{
    if (const char* env = std::getenv("ATTNSCOPE_RESOURCES"))
        return (fs::path(env) / "models").string();
    const std::string exeDir = executableDir();
    if (!exeDir.empty()) {
        const auto installed = fs::path(exeDir) / ".." / "share" / "attnscope" / "models";
        if (fs::is_directory(installed))
            return installed.lexically_normal().string();
    }
    if (fs::is_directory(fs::path(ATTNSCOPE_SOURCE_RESOURCES) / "models"))
        return (fs::path(ATTNSCOPE_SOURCE_RESOURCES) / "models").string();
    return (fs::path(ATTNSCOPE_INSTALL_DATADIR) / "models").string();
}

std::vector<std::string> builtinModelNames()
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(builtinModelDir(), ec))
        if (e.is_directory())
            names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

void setNumThreads(int threads)
{
    if (threads <= 0)
        return;
    std::call_once(g_threadsChosen, [] {});
    at::set_num_threads(threads);
    setBlasThreads(blasThreadsFor(threads));
    setInterOpThreads(threads);
}

CpuKernels cpuKernels()
{
    CpuKernels k;
#ifdef ATTNSCOPE_HAVE_DNNL
    k.isa = onednn::effectiveIsa();
#endif
    k.blas = blasCoreName();
    k.linear = PackedLinears::kernelHere().empty() ? "at::linear" : "oneDNN " + PackedLinears::kernelHere();
    k.attention = AttentionProducts::pathHere();
    return k;
}

std::string libtorchVersion() { return TORCH_VERSION; }

bool libtorchHasCuda() { return torch::cuda::is_available() || at::hasCUDA(); }

Result<std::string> resolveDevice(const std::string& spec)
{
    try {
        return parseDevice(spec).str();
    } catch (const std::exception& e) {
        return Error { e.what() };
    }
}

ThreadSetup threadSetup() { return { std::max(1, at::get_num_threads()), interOpThreads() }; }

const char* version() { return ATTNSCOPE_VERSION; }

std::vector<std::string> supportedModelFamilies() { return supportedFamilies(); }

} // namespace attnscope
