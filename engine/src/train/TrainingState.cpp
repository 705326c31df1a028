#include "train/TrainingState.h"

#include "io/AtomicFile.h"
#include "io/LoadError.h"

#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>
#include <torch/serialize/archive.h>

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace attnscope {

namespace {

const char* const kMetaKey = "attnscope_training_state";

// Everything that changes what the run computes (not the card's name, the thread count, the command line, where the
// images lie or the device: a run may go on on a GPU, or back on the CPU, with the same tensors and generator).
nlohmann::ordered_json settings(const TrainOptions& o, const std::string& images)
{
    return { { "training_images", images }, { "variant", o.variant },
             { "neutreno_lambda", o.neutrenoLambda }, { "boost_t", o.boostT }, { "image_size", o.imageSize },
             { "patch", o.patchSize }, { "width", o.width }, { "depth", o.depth }, { "heads", o.heads },
             { "mlp", o.mlpHidden }, { "epochs", o.epochs }, { "batch", o.batchSize }, { "lr", o.learningRate },
             { "weight_decay", o.weightDecay }, { "label_smoothing", o.labelSmoothing }, { "seed", o.seed },
             { "limit_train", o.limitTrain }, { "limit_test", o.limitTest }, { "augment", o.augment },
             { "bf16", o.bf16 } };
}

std::string shown(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The key an optimiser's state map holds a parameter under: its TensorImpl's address, as text in LibTorch 1.x, as the
// pointer itself in 2.x.
template <typename StateMap>
typename StateMap::key_type stateKey(const StateMap&, const at::Tensor& param)
{
    using Key = typename StateMap::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream text; // as c10::guts::to_string writes a pointer, the key AdamW::step looks up
        text << static_cast<void*>(param.unsafeGetTensorImpl());
        return text.str();
    } else {
        return static_cast<Key>(param.unsafeGetTensorImpl());
    }
}

// AdamW's moments and step, read from the archive Optimizer::save writes, parameter by parameter in the groups' order.
// Optimizer::load pairs a saved state with its parameter through the key it was saved under, the parameter's address
// as text: LibTorch 1.x writes it in hex, 2.x in decimal and parses it back as a number, so 2.x gives every parameter
// of a 1.x state the same moments. By position, a state goes on under either LibTorch.
void loadAdamW(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimiser)
{
    torch::serialize::InputArchive states, groups;
    archive.read("state", states);
    archive.read("param_groups", groups);
    at::Tensor count;
    groups.read("param_groups/size", count);
    if (count.item<int64_t>() != int64_t(optimiser.param_groups().size()))
        throw std::runtime_error("the optimiser's state has " + std::to_string(count.item<int64_t>()) + " parameter groups, not " +
                                 std::to_string(optimiser.param_groups().size()));
    auto& live = optimiser.state();
    for (size_t g = 0; g < optimiser.param_groups().size(); ++g) {
        torch::serialize::InputArchive group;
        groups.read("param_groups/" + std::to_string(g), group);
        const std::vector<at::Tensor>& params = optimiser.param_groups()[g].params();
        group.read("params/size", count);
        if (count.item<int64_t>() != int64_t(params.size()))
            throw std::runtime_error("the optimiser's state has another number of parameters");
        for (size_t i = 0; i < params.size(); ++i) {
            c10::IValue key;
            group.read("params/" + std::to_string(i), key);
            torch::serialize::InputArchive saved;
            if (!states.try_read(key.toStringRef(), saved))
                continue; // no step taken yet
            auto state = std::make_unique<torch::optim::AdamWParamState>();
            state->serialize(saved);
            if (!state->exp_avg().defined() || state->exp_avg().sizes() != params[i].sizes()
                || state->exp_avg_sq().sizes() != params[i].sizes())
                throw std::runtime_error("the optimiser's state of parameter " + std::to_string(i) + " of group " +
                                         std::to_string(g) + " has another shape");
            live[stateKey(live, params[i])] = std::move(state);
        }
    }
}

} // namespace

std::string trainingImagesFingerprint(const LabelledImages& images)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    for (const Image& image : images.images) {
        const int32_t shape[3] = { image.height, image.width, image.channels };
        crc = crc32(crc, reinterpret_cast<const Bytef*>(shape), sizeof shape);
        crc = crc32(crc, image.pixels.data(), uInt(image.pixels.size()));
    }
    crc = crc32(crc, reinterpret_cast<const Bytef*>(images.labels.data()), uInt(images.labels.size() * sizeof(int)));
    char text[64];
    std::snprintf(text, sizeof text, "%zu images, crc32 %08lx", images.images.size(), static_cast<unsigned long>(crc));
    return text;
}

std::string trainingStatePath(const std::string& out)
{
    std::string folder = out;
    while (folder.size() > 1 && folder.back() == '/')
        folder.pop_back();
    return folder + ".train-state";
}

Status saveTrainingState(const TrainOptions& o, const std::string& images, const TrainingState& state, const torch::nn::Module& model,
                         const torch::optim::Optimizer& optimiser)
{
    const std::string path = trainingStatePath(o.out);
    try {
        torch::serialize::OutputArchive archive, modelArchive, optimiserArchive;
        model.save(modelArchive);
        optimiser.save(optimiserArchive);
        archive.write("model", modelArchive);
        archive.write("optimiser", optimiserArchive);
        std::ostringstream rng;
        rng << state.rng;
        const nlohmann::ordered_json meta = { { "settings", settings(o, images) }, { "epoch", state.epoch }, { "step", state.step },
                                              { "rng", rng.str() }, { "epoch_lines", state.epochLines },
                                              { "epoch_devices", state.epochDevices }, { "seconds", state.seconds } };
        archive.write(kMetaKey, c10::IValue(meta.dump()));
        std::ostringstream bytes;
        archive.save_to(bytes);
        const auto parent = std::filesystem::path(path).parent_path();
        if (!parent.empty())
            std::filesystem::create_directories(parent);
        writeFileAtomically(path, bytes.str());
    } catch (const LoadError& e) {
        return Error { path + ": cannot write the training state: " + e.what() };
    } catch (const std::exception& e) {
        return Error { path + ": cannot write the training state: " + e.what() };
    }
    return Done {};
}

Result<std::optional<TrainingState>> loadTrainingState(const TrainOptions& o, const std::string& images, torch::nn::Module& model,
                                                       torch::optim::Optimizer& optimiser, const c10::Device& device)
{
    const std::string path = trainingStatePath(o.out);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return std::optional<TrainingState> {};
    nlohmann::json meta;
    torch::serialize::InputArchive archive;
    try {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return Error { path + ": cannot read the training state" };
        archive.load_from(in, device);
        c10::IValue text;
        if (!archive.try_read(kMetaKey, text) || !text.isString())
            return Error { path + ": not a training state of attnscope-train (--fresh starts again)" };
        meta = nlohmann::json::parse(text.toStringRef());
    } catch (const std::exception& e) {
        return Error { path + ": unreadable training state (--fresh starts again): " + e.what() };
    }
    const nlohmann::json now = settings(o, images);
    const nlohmann::json& then = meta.at("settings");
    for (const auto& [key, value] : now.items()) {
        // States written before the images were fingerprinted named their folder instead (and their device).
        if (key == "training_images" && !then.contains(key) && then.contains("fashion_mnist_dir"))
            continue;
        if (!then.contains(key) || then.at(key) != value)
            return Error { path + ": the unfinished run there has other settings (" + key + " " +
                           (then.contains(key) ? shown(then.at(key)) : std::string("unset")) + ", now " + shown(value) +
                           "); run it with those to go on, or give --fresh to start again" };
    }
    try {
        torch::serialize::InputArchive modelArchive, optimiserArchive;
        archive.read("model", modelArchive);
        archive.read("optimiser", optimiserArchive);
        model.load(modelArchive);
        loadAdamW(optimiserArchive, optimiser);
        TrainingState s;
        s.epoch = meta.at("epoch").get<int>();
        s.step = meta.at("step").get<int64_t>();
        std::istringstream rng(meta.at("rng").get<std::string>());
        rng >> s.rng;
        if (!rng)
            throw std::runtime_error("its random generator's state is unreadable");
        s.epochLines = meta.at("epoch_lines").get<std::vector<std::string>>();
        if (meta.contains("epoch_devices"))
            s.epochDevices = meta.at("epoch_devices").get<std::vector<std::string>>();
        else
            s.epochDevices.assign(s.epochLines.size(), then.at("device").get<std::string>());
        s.seconds = meta.at("seconds").get<double>();
        return std::optional<TrainingState>(std::move(s));
    } catch (const std::exception& e) {
        return Error { path + ": the training state does not fit this model (--fresh starts again): " + e.what() };
    }
}

} // namespace attnscope
