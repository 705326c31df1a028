#include "train/ModelWriter.h"

#include "checkpoint/SafeTensors.h"
#include "io/AtomicFile.h"

#include <filesystem>

namespace attnscope {

void writeModelFolder(const std::string& dir, VisionTransformerImpl& net, const PreprocessConfig& p,
                      const std::vector<std::string>& labels, const nlohmann::json& attnscopeSection)
{
    std::filesystem::create_directories(dir);
    const ModelConfig& c = net.config;
    TensorMap tensors;
    for (const auto& param : net.named_parameters())
        tensors[param.key()] = param.value().detach();
    writeSafetensors(dir + "/model.safetensors", tensors, { { "format", "pt" }, { "num_heads", std::to_string(c.numHeads) } });

    const bool pooledMean = c.pooling == Pooling::PatchMean;
    const nlohmann::json interpolation = toString(p.interpolation);
    nlohmann::json config = {
        { "architecture", "attnscope_vit" },
        { "num_classes", c.numClasses },
        { "num_features", c.width },
        { "global_pool", pooledMean ? "avg" : "token" },
        { "model_args",
          { { "img_size", c.imageHeight }, { "patch_size", c.patchSize }, { "in_chans", c.channels },
            { "embed_dim", c.width }, { "depth", c.depth }, { "num_heads", c.numHeads },
            { "mlp_ratio", double(c.mlpHidden) / c.width }, { "class_token", c.classToken },
            { "no_embed_class", !c.posEmbedHasPrefix }, { "global_pool", pooledMean ? "avg" : "token" } } },
        { "pretrained_cfg",
          { { "input_size", { c.channels, c.imageHeight, c.imageWidth } }, { "interpolation", interpolation },
            { "crop_pct", 1.0 }, { "crop_mode", "center" }, { "mean", p.mean }, { "std", p.std },
            { "num_classes", c.numClasses }, { "first_conv", "patch_embed.proj" }, { "classifier", "head" } } },
        { "attnscope", attnscopeSection },
    };
    if (!labels.empty())
        config["label_names"] = labels;
    writeFileAtomically(dir + "/config.json", config.dump(2) + "\n");

    const int resample = p.interpolation == Interpolation::Nearest ? 0 : p.interpolation == Interpolation::Bilinear ? 2 : 3;
    nlohmann::json pre = {
        // The same steps as the pretrained_cfg above: shortest edge to the input size, centre crop.
        { "image_processor_type", "BitImageProcessor" },
        { "do_convert_rgb", c.channels == 3 },
        { "do_resize", true },
        { "size", { { "shortest_edge", std::min(c.imageHeight, c.imageWidth) } } },
        { "do_center_crop", true },
        { "crop_size", { { "height", c.imageHeight }, { "width", c.imageWidth } } },
        { "resample", resample },
        { "do_rescale", true },
        { "rescale_factor", p.rescale },
        { "do_normalize", true },
        { "image_mean", p.mean },
        { "image_std", p.std },
    };
    writeFileAtomically(dir + "/preprocessor_config.json", pre.dump(2) + "\n");
}

} // namespace attnscope
