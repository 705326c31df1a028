#include "train/TrainingState.h"

#include "io/AtomicFile.h"
#include "checkpoint/LoadError.h"

#include <nlohmann/json.hpp>
#include <torch/serialize/archive.h>

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

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
        const nlohmann::ordered_json meta = { { "settings", settings(o, images) }, { "epoch", state.epoch }, { "step", state.step },
                                              { "rng", state.rng }, { "epoch_lines", state.epochLines },
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
        optimiser.load(optimiserArchive);
        TrainingState s;
        s.epoch = meta.at("epoch").get<int>();
        s.step = meta.at("step").get<int64_t>();
        s.rng = meta.at("rng").get<std::string>();
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
