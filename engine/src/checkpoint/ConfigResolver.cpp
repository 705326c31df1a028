#include "checkpoint/ConfigResolver.h"

#include "checkpoint/ConfigFields.h"
#include "checkpoint/ConfigSources.h"
#include "checkpoint/SwinCheckpoint.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace attnscope {

using namespace fields;

namespace {

bool has(const TensorMap& t, const std::string& key) { return t.count(key) != 0; }

std::optional<int> perfectSquareRoot(int64_t n)
{
    if (n <= 0)
        return std::nullopt;
    const auto r = int64_t(std::llround(std::sqrt(double(n))));
    return r * r == n ? std::optional<int>(int(r)) : std::nullopt;
}

// What the tensors say: the architecture, as far as the parameters show it.
void readTensors(const TensorMap& t, const NamingHints& hints, const std::string& weightsPath, StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    if (has(t, "patch_embed.linear.weight")) {
        // A linear layer over flattened patches: the width is known, the patch side and channels are settled later
        // (settleLinearPatch) from what is stated.
        const auto& linear = t.at("patch_embed.linear.weight");
        if (linear.dim() != 2 || linear.size(0) < 1 || linear.size(1) < 1)
            fail(weightsPath, "patch_embed.linear.weight: shape " + shapeString(linear) + ", expected [D, P*P*C]");
        c.width = int(linear.size(0));
        c.patchEmbedding = PatchEmbedding::LinearChannelsLast;
        c.patchNormIn = has(t, "patch_embed.norm_in.weight");
        c.patchBias = has(t, "patch_embed.linear.bias");
    } else {
        if (!has(t, "patch_embed.proj.weight"))
            fail(weightsPath, "no patch embedding (patch_embed.proj.weight or its equivalent) among the tensors");
        const auto& patch = t.at("patch_embed.proj.weight");
        // An empty kernel (a zero dimension) would later divide by a zero patch size.
        if (patch.dim() != 4 || patch.size(2) != patch.size(3) || patch.size(0) < 1 || patch.size(1) < 1 || patch.size(2) < 1)
            fail(weightsPath, "patch_embed.proj.weight: shape " + shapeString(patch) + ", expected [D, C, P, P]");
        c.width = int(patch.size(0));
        c.channels = int(patch.size(1));
        c.patchSize = int(patch.size(2));
        c.patchBias = has(t, "patch_embed.proj.bias");
    }
    c.patchNormOut = has(t, "patch_embed.norm.weight");
    c.relativePositionBias = has(t, "blocks.0.attn.relative_position_bias_table");
    const auto hasBlock = [&](int i) {
        auto it = t.lower_bound("blocks." + std::to_string(i) + ".");
        return it != t.end() && it->first.rfind("blocks." + std::to_string(i) + ".", 0) == 0;
    };
    c.depth = 0;
    while (hasBlock(c.depth))
        ++c.depth;
    if (c.depth == 0)
        fail(weightsPath, "no transformer blocks (blocks.0.attn.qkv.weight or its equivalent)");
    // The attention kind and block kind show in the parameters they own (docs/analyses.md section 6).
    c.attention = has(t, "blocks.0.attn.log_hy") ? AttentionKind::Bilateral
        : has(t, "blocks.0.attn.centre")         ? AttentionKind::Quadratic
                                                 : AttentionKind::Standard;
    c.block = has(t, "blocks.0.mlp.fc1.weight") ? BlockKind::Standard : BlockKind::AttentionOnly;
    c.mlpHidden = has(t, "blocks.0.mlp.fc1.weight") ? int(t.at("blocks.0.mlp.fc1.weight").size(0)) : 4 * c.width;
    if (has(t, "blocks.0.mlp.fc1.weight") && has(t, "blocks.0.mlp.fc2.weight")) {
        // A gated MLP shows in its shapes: fc1 makes twice the width fc2 reads (the gate and the value).
        const auto& fc1 = t.at("blocks.0.mlp.fc1.weight");
        const auto& fc2 = t.at("blocks.0.mlp.fc2.weight");
        if (fc1.dim() == 2 && fc2.dim() == 2 && fc2.size(1) > 0 && fc1.size(0) == 2 * fc2.size(1)) {
            c.mlpGated = true;
            c.mlpHidden = int(fc2.size(1));
        }
    }
    c.mlpNorm = has(t, "blocks.0.mlp.norm.weight");
    c.attnNorm = has(t, "blocks.0.attn.norm.weight");
    c.classToken = has(t, "cls_token");
    c.distToken = has(t, "dist_token");
    c.numRegisters = has(t, "reg_token") ? int(t.at("reg_token").size(1)) : 0;
    c.posEmbed = has(t, "pos_embed");
    c.qkvBias = has(t, "blocks.0.attn.qkv.bias") || has(t, "blocks.0.attn.v.bias");
    c.projBias = has(t, "blocks.0.attn.proj.bias");
    c.preNorm = has(t, "norm_pre.weight");
    c.layerScale = has(t, "blocks.0.ls1.gamma");
    c.finalNorm = has(t, "norm.weight") ? FinalNorm::AllTokens : has(t, "fc_norm.weight") ? FinalNorm::Pooled : FinalNorm::None;
    c.numClasses = has(t, "head.weight") ? int(t.at("head.weight").size(0)) : 0;
    c.headIsProjection = hints.headIsProjection;
    if (has(t, "head_dist.weight"))
        c.pooling = Pooling::Distilled;
    else if (has(t, "head.weight") && t.at("head.weight").dim() == 2 && t.at("head.weight").size(1) == 2 * c.width)
        c.pooling = Pooling::TokenAndPatchMean;
    else if (!c.classToken)
        c.pooling = Pooling::PatchMean;
    if (has(t, "attn_pool.latent")) {
        // SigLIP's attention-pool head: one learned query over the patches, then an MLP of its own width.
        const auto& latent = t.at("attn_pool.latent");
        if (latent.dim() != 3 || latent.size(0) != 1 || latent.size(1) != 1 || latent.size(2) != c.width)
            fail(weightsPath, "attn_pool.latent: shape " + shapeString(latent) + ", expected [1, 1, " + std::to_string(c.width)
                                  + "] (attnscope runs an attention-pool head of one query)");
        if (!has(t, "attn_pool.mlp.fc1.weight") || t.at("attn_pool.mlp.fc1.weight").dim() != 2)
            fail(weightsPath, "attn_pool.latent without attn_pool.mlp.fc1.weight: an attention-pool head without its MLP");
        c.pooling = Pooling::AttentionPool;
        c.poolMlpHidden = int(t.at("attn_pool.mlp.fc1.weight").size(0));
    }
    if (has(t, "blocks.0.attn.qkv.weight") && has(t, "blocks.0.attn.proj.weight") && c.attention == AttentionKind::Standard) {
        // q, k and v of another width a than the model's (vit-pytorch's heads * dim_head): qkv [3a, D] and proj [D, a]
        // agree on it. Anything else is left to the shape check, which names the tensor and both shapes.
        const auto& qkv = t.at("blocks.0.attn.qkv.weight");
        const auto& proj = t.at("blocks.0.attn.proj.weight");
        const int64_t a = qkv.dim() == 2 ? qkv.size(0) / 3 : 0;
        if (a > 0 && a != c.width && qkv.size(0) == 3 * a && qkv.size(1) == c.width && proj.dim() == 2
            && proj.size(0) == c.width && proj.size(1) == a) {
            c.attentionWidth = int(a);
            out.inferred.push_back("attention width " + std::to_string(a) + " (q, k, v; the model's is "
                                   + std::to_string(c.width) + "): blocks.0.attn.qkv.weight and attn.proj.weight");
        }
    }
    stated.meanOverAllTokens = hints.naming == "vit-pytorch";
    if (hints.position) {
        stated.position = *hints.position;
        stated.positionSource = hints.family + "'s layout";
    }
    c.layerNormEps = hints.layerNormEps.value_or(1e-6); // timm, torchvision and DINO use 1e-6
    if (hints.quickGelu.value_or(false))
        c.activation = Activation::QuickGelu;
    stated.heads = hints.numHeads;
    stated.posHasPrefix = hints.posEmbedHasPrefix;
    out.source = "inferred from tensor shapes";
}

// The head count: stated, or width/64 as a warned guess; then what the attention kind allows.
void settleHeads(const ConfigSources& src, const std::string& weightsPath, StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    auto& heads = stated.heads;
    const int attnWidth = c.attnWidth(); // the width the heads split
    if (!heads) {
        if (attnWidth % 64 != 0)
            fail(weightsPath, "the number of heads is not recorded and width " + std::to_string(attnWidth)
                                  + " is not a multiple of 64; give num_heads in config.json, metadata or a description");
        heads = attnWidth / 64; // a head width of 64, the usual one, when nothing says otherwise (warned below)
        out.source += "; heads = width/64";
        out.guesses.push_back("num_heads guessed as width/64 = " + std::to_string(*heads)
                              + ": nothing records it (give architecture.num_heads in a model description to be sure)");
    }
    if (*heads <= 0 || attnWidth % *heads != 0)
        fail(src.configPath.empty() ? weightsPath : src.configPath,
             std::to_string(*heads) + " heads do not divide width " + std::to_string(attnWidth));
    c.numHeads = *heads;

    if (c.attention == AttentionKind::Quadratic && c.numPrefixTokens() > 0)
        fail(weightsPath, "quadratic positional attention acts on patch tokens only; this model has prefix tokens");
}

// The grid: the position table must fit the image size (when one is stated) and the prefix tokens.
void settleGrid(const TensorMap& t, const ConfigSources& src, const std::string& weightsPath, StatedConfig& stated, ModelConfig& c)
{
    auto& imageSize = stated.imageSize;
    auto& posHasPrefix = stated.posHasPrefix;
    const int prefix = c.numPrefixTokens();
    if (c.posFixedSinCos && !imageSize)
        fail(src.descriptionPath.empty() ? weightsPath : src.descriptionPath,
             "a fixed sin-cos position table is made for the image size: state architecture.image_size");
    if (c.posEmbed && !c.posFixedSinCos) {
        const auto& pos = t.at("pos_embed");
        if (pos.dim() != 3 || pos.size(0) != 1 || pos.size(2) != c.width)
            fail(weightsPath, "pos_embed: shape " + shapeString(pos) + ", expected [1, tokens, " + std::to_string(c.width) + "]");
        const int64_t rows = pos.size(1);
        if (imageSize) {
            if (imageSize->first % c.patchSize || imageSize->second % c.patchSize)
                fail(src.configPath.empty() ? weightsPath : src.configPath,
                     "image size " + std::to_string(imageSize->first) + "x" + std::to_string(imageSize->second)
                         + " is not a multiple of the patch size " + std::to_string(c.patchSize));
            const int64_t grid = int64_t(imageSize->first / c.patchSize) * (imageSize->second / c.patchSize);
            if (!posHasPrefix)
                posHasPrefix = rows == grid + prefix;
            const int64_t expect = grid + (*posHasPrefix ? prefix : 0);
            if (rows != expect)
                fail(weightsPath, "pos_embed: shape " + shapeString(pos) + ", expected [1, " + std::to_string(expect) + ", "
                                      + std::to_string(c.width) + "] for a " + std::to_string(imageSize->first) + "x"
                                      + std::to_string(imageSize->second) + " image with patch " + std::to_string(c.patchSize)
                                      + " and " + std::to_string(prefix) + " prefix tokens");
            c.imageHeight = imageSize->first;
            c.imageWidth = imageSize->second;
        } else {
            std::optional<int> side;
            if (posHasPrefix) {
                side = perfectSquareRoot(rows - (*posHasPrefix ? prefix : 0));
            } else if ((side = perfectSquareRoot(rows - prefix))) {
                posHasPrefix = true;
            } else if ((side = perfectSquareRoot(rows))) {
                posHasPrefix = false;
            }
            if (!side)
                fail(weightsPath, "pos_embed: " + std::to_string(rows) + " rows make no square grid with "
                                      + std::to_string(prefix) + " prefix tokens; state image_size in a config");
            c.imageHeight = c.imageWidth = *side * c.patchSize;
        }
        c.posEmbedHasPrefix = posHasPrefix.value_or(true);
        if (c.attention == AttentionKind::Bilateral && !c.posEmbedHasPrefix && prefix > 0)
            fail(weightsPath, "bilateral attention needs a position row for every token, prefix tokens included");
    } else {
        if (c.relativePositionBias) {
            // The table has (2 gh - 1)(2 gw - 1) + 3 rows: the grid, when it is square and nothing states the size.
            const auto& table = t.at("blocks.0.attn.relative_position_bias_table");
            const auto side = table.dim() == 2 ? perfectSquareRoot(table.size(0) - 3) : std::nullopt;
            if (!imageSize && side && *side % 2 == 1)
                imageSize = std::make_pair((*side + 1) / 2 * c.patchSize, (*side + 1) / 2 * c.patchSize);
            if (!imageSize)
                fail(weightsPath, "blocks.0.attn.relative_position_bias_table: shape " + shapeString(table)
                                      + " is not a square grid's table; state image_size");
        }
        const auto size = imageSize.value_or(std::make_pair(224, 224));
        if (size.first % c.patchSize || size.second % c.patchSize)
            fail(src.descriptionPath.empty() ? weightsPath : src.descriptionPath,
                 "image size " + std::to_string(size.first) + "x" + std::to_string(size.second)
                     + " is not a multiple of the patch size " + std::to_string(c.patchSize));
        c.imageHeight = size.first;
        c.imageWidth = size.second;
    }
}

// "rotary (axial, EVA's, temperature 10000, (y, x) index coordinates rescaled to a 16x16 grid, interleaved pairs, ...)".
std::string ropeDescription(const ModelConfig& c)
{
    std::string s = c.posEmbed ? "the learned pos_embed and a rotary embedding (" : "rotary (";
    switch (c.rope) {
    case ModelConfig::Rope::DinoV3:
        s += "DINOv3's, temperature " + shortNumber(c.ropeTemperature) + ", patch centres in [-1, 1], rotated in halves";
        break;
    case ModelConfig::Rope::Axial:
        s += "axial, temperature " + shortNumber(c.ropeTemperature) + ", " + (c.ropeXY ? "(x, y)" : "(y, x)") + " patch indices";
        if (c.ropeReferenceGridH > 0)
            s += " rescaled to a " + std::to_string(c.ropeReferenceGridH) + "x" + std::to_string(c.ropeReferenceGridW) + " grid";
        s += c.ropeHalf ? ", rotated in halves" : ", rotated in interleaved pairs";
        break;
    case ModelConfig::Rope::Mixed:
        s += "RoPE-Mixed, learned frequencies per layer and head (rope.freqs) over (x, y) patch indices";
        break;
    case ModelConfig::Rope::None:
        break;
    }
    return s + "; on the patch tokens' queries and keys)";
}

// A gated MLP (fc1 twice as wide as what fc2 reads) runs only where its activation is stated (timm's registry): the
// tensors cannot tell SwiGLU from a GeGLU. A stated one whose tensors are not gated is an error too.
void settleGatedMlp(const ConfigSources& src, const std::string& weightsPath, const StatedConfig& stated, ResolvedConfig& out)
{
    const ModelConfig& c = out.model;
    if (c.mlpGated && !stated.gatedMlp)
        fail(weightsPath, "blocks.0.mlp.fc1.weight makes twice the width blocks.0.mlp.fc2.weight reads: a gated MLP "
                          "(SwiGLU), whose activation nothing states; attnscope runs the gated MLPs of the timm "
                          "architectures its registry names (attnscope-cli info --list-families)");
    if (!c.mlpGated && stated.gatedMlp)
        fail(src.configPath.empty() ? weightsPath : src.configPath,
             "the architecture has a gated MLP (SwiGLU), but blocks.0.mlp.fc1.weight is not twice as wide as what fc2 reads");
    if (c.mlpGated)
        out.inferred.push_back(std::string("MLP: gated, ") + toString(c.activation) + "(gate) x value (fc1's rows: gate, then "
                               "value)" + (c.mlpNorm ? ", a LayerNorm before fc2" : "") + ": the tensors' shapes and "
                               + out.recognition);
}

// The position scheme. A learned table is a tensor; a scheme with no tensor (rotary, fixed sin-cos, none) must be stated,
// never inferred from the table's absence: DINOv3 and EVA-02 have none and their positions are rotary.
void settlePosition(const ConfigSources& src, const std::string& weightsPath, const StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    if (stated.position) {
        const std::string& p = *stated.position;
        const std::string& where = src.descriptionPath.empty() ? weightsPath : src.descriptionPath;
        if (p == "none" && c.posEmbed)
            fail(where, "architecture.position is \"none\" but the checkpoint has a pos_embed tensor");
        if (p == "learned" && !c.posEmbed)
            fail(where, "architecture.position is \"learned\" but no tensor is pos_embed after renaming");
        if (p == "rotary" || p == "learned+rotary") {
            if (c.posEmbed && p == "rotary")
                fail(where, "the model's positions are rotary alone (" + stated.positionSource + "), but the checkpoint has a pos_embed tensor");
            if (!c.posEmbed && p == "learned+rotary")
                fail(where, "the model adds a learned position table to its rotary embedding (" + stated.positionSource
                                + "), but the checkpoint has no pos_embed tensor");
            if (c.attention != AttentionKind::Standard)
                fail(where, "a rotary position embedding needs standard attention");
        }
        if (p == "sincos2d") {
            if (c.posEmbed)
                fail(where, "the position is a fixed 2-D sin-cos table, but the checkpoint has a pos_embed tensor");
            if (c.width % 4 != 0 || c.width < 8)
                fail(where, "a 2-D sin-cos position table needs a width divisible by 4 (width " + std::to_string(c.width) + ")");
            c.posEmbed = c.posFixedSinCos = true; // made at load (Model.cpp), for the patches only
            c.posEmbedHasPrefix = false;
        }
        const std::string scheme = p == "sincos2d" ? "fixed 2-D sin-cos (posemb_sincos_2d)"
                                   : p == "rotary" || p == "learned+rotary" ? ropeDescription(c) : p;
        out.inferred.push_back("position: " + scheme + ", " + stated.positionSource);
        return;
    }
    if (c.relativePositionBias) {
        if (c.attention != AttentionKind::Standard || !c.classToken || c.numPrefixTokens() != 1)
            fail(weightsPath, "a relative position bias needs standard attention and one CLS token as its only prefix token");
        out.inferred.push_back(std::string("position: a relative position bias in every layer's attention "
                                           "(relative_position_bias_table)") + (c.posEmbed ? " and the learned pos_embed" : ""));
    } else if (c.posEmbed) {
        out.inferred.push_back("position: learned, the pos_embed tensor");
    } else if (c.attention != AttentionKind::Standard) {
        out.inferred.push_back(std::string("position: inside the ") + toString(c.attention) + " attention's own parameters");
    } else {
        fail(weightsPath, "no position embedding tensor (pos_embed), and nothing states the model has none: rotary "
                          "(RoPE) models such as DINOv3 and EVA-02 have none either, and are not run as a model without "
                          "positions. If it has no positions, say \"position\": \"none\" in a model description's "
                          "architecture (docs/model-description.md)");
    }
}

// A linear patch embedding's weight is [D, P*P*C]: the patch side and the channels come from what is stated (patch_size
// or channels), or from the image size and the position table's rows, or, failing both, are guessed (RGB, else grey)
// and said so. A convolution's are its kernel's; a statement that contradicts them is an error.
void settleLinearPatch(const TensorMap& t, const std::string& where, const StatedConfig& stated, ResolvedConfig& out)
{
    ModelConfig& c = out.model;
    if (c.patchEmbedding == PatchEmbedding::Convolution) {
        if ((stated.patchSize && *stated.patchSize != c.patchSize) || (stated.channels && *stated.channels != c.channels))
            fail(where, "patch_size/channels contradict patch_embed.proj.weight " + shapeString(t.at("patch_embed.proj.weight")));
        return;
    }
    const int64_t pixels = t.at("patch_embed.linear.weight").size(1);
    std::optional<int> side = stated.patchSize, channels = stated.channels;
    std::string how = "the model description";
    if (!side && !channels && stated.imageSize && stated.imageSize->first == stated.imageSize->second && c.posEmbed
        && !c.posFixedSinCos) {
        const int64_t rows = t.at("pos_embed").size(1);
        for (const int64_t count : { rows - c.numPrefixTokens(), rows }) {
            const auto grid = perfectSquareRoot(count);
            if (grid && stated.imageSize->first % *grid == 0) {
                side = stated.imageSize->first / *grid;
                how = "the image size and pos_embed's " + std::to_string(rows) + " rows";
                break;
            }
        }
    }
    if (side && !channels && *side > 0 && pixels % (int64_t(*side) * *side) == 0)
        channels = int(pixels / (int64_t(*side) * *side));
    else if (channels && !side && *channels > 0 && pixels % *channels == 0)
        side = perfectSquareRoot(pixels / *channels);
    if (!side && !channels) {
        for (const int guess : { 3, 1 })
            if (pixels % guess == 0 && (side = perfectSquareRoot(pixels / guess))) {
                channels = guess;
                break;
            }
        if (!side)
            fail(where, "patch_embed.linear.weight takes " + std::to_string(pixels)
                            + " values per patch; state architecture.patch_size and channels");
        out.guesses.push_back("patch " + std::to_string(*side) + "x" + std::to_string(*side) + " of " + std::to_string(*channels)
                              + " channels, from the " + std::to_string(pixels) + " values per patch: state "
                                "architecture.patch_size and channels in a model description to be sure");
    } else {
        out.inferred.push_back("patch " + std::to_string(side.value_or(0)) + ", " + std::to_string(channels.value_or(0))
                               + " channels: " + how);
    }
    if (!side || !channels || int64_t(*side) * *side * *channels != pixels)
        fail(where, "patch_embed.linear.weight: shape " + shapeString(t.at("patch_embed.linear.weight"))
                        + " is not [D, P*P*C] for the stated patch size and channels");
    c.patchSize = *side;
    c.channels = *channels;
}

} // namespace

// Mean/std lists fit the model's channel count: one value per channel, a single value broadcast.
void fitChannels(PreprocessConfig& p, int channels, const std::string& path)
{
    for (auto* v : { &p.mean, &p.std }) {
        if (int(v->size()) == channels)
            continue;
        if (v->size() == 1)
            v->assign(size_t(channels), v->front());
        else if (channels == 1) // a grey model with RGB statistics: the luma-weighted mean is the closest
            *v = { 0.299 * (*v)[0] + 0.587 * (*v)[1] + 0.114 * (*v)[2] };
        else
            throw LoadError(path + ": preprocessing mean/std have " + std::to_string(v->size()) + " values for "
                            + std::to_string(channels) + " channels");
    }
    for (double s : p.std)
        if (!(s > 0))
            throw LoadError(path + ": preprocessing std must be positive");
}

PreprocessConfig defaultPreprocess(int height, int width)
{
    // docs/design.md section 4: absent any config, resize the shortest edge to image_size / 0.875, bicubic, centre
    // crop, ImageNet mean/std (timm's defaults).
    PreprocessConfig p;
    p.resize = ResizeMode::ShortestEdge;
    p.resizeShortest = int(std::floor(std::min(height, width) / 0.875));
    p.cropPct = 0.875;
    p.cropHeight = height;
    p.cropWidth = width;
    p.centerCrop = true;
    p.interpolation = Interpolation::Bicubic;
    p.source = "default (no preprocessing config)";
    return p; // resolveConfig fits mean/std to the channel count for every source
}


PreprocessConfig preprocessFromTimm(const json& cfg, int channels)
{
    const std::string path = "pretrained_cfg";
    PreprocessConfig p;
    int h = 224, w = 224;
    if (cfg.contains("input_size")) {
        const auto& s = cfg["input_size"];
        if (!s.is_array() || s.size() != 3)
            throw LoadError("pretrained_cfg.input_size must be [C, H, W]");
        h = sideField(s[1], path, "input_size");
        w = sideField(s[2], path, "input_size");
    }
    const double cropPct = cfg.value("crop_pct", 0.875);
    // floor(size / crop_pct) must be a size too: crop_pct 0 made it infinite, and its int conversion undefined.
    if (!(cropPct > 0) || std::floor(std::min(h, w) / cropPct) < 1 || std::floor(std::max(h, w) / cropPct) > kMaxSide)
        throw LoadError(path + ": crop_pct " + std::to_string(cropPct) + " gives no plausible resize of " + std::to_string(h)
                        + "x" + std::to_string(w));
    const std::string mode = cfg.value("crop_mode", "center");
    // timm: scale = floor(size / crop_pct); centre mode resizes the shorter side, squash both sides.
    const int scaleH = int(std::floor(h / cropPct));
    const int scaleW = int(std::floor(w / cropPct));
    if (mode == "squash") {
        p.resize = ResizeMode::Exact;
        p.resizeHeight = scaleH;
        p.resizeWidth = scaleW;
    } else {
        p.resize = ResizeMode::ShortestEdge;
        p.resizeShortest = h == w ? scaleH : std::min(scaleH, scaleW);
    }
    p.centerCrop = true;
    p.cropHeight = h;
    p.cropWidth = w;
    p.cropPct = cropPct;
    p.cropOffsetFloor = false;
    p.interpolation = interpolationFromName(cfg.value("interpolation", "bicubic"));
    if (cfg.contains("mean"))
        p.mean = doubles(cfg["mean"], path, "mean");
    if (cfg.contains("std"))
        p.std = doubles(cfg["std"], path, "std");
    p.source = "timm pretrained_cfg";
    fitChannels(p, channels, path);
    return p;
}

PreprocessConfig preprocessFromHuggingFace(const json& pre, const std::string& path)
{
    PreprocessConfig p;
    const std::string type = pre.value("image_processor_type", pre.value("feature_extractor_type", ""));
    const bool clipLike = type.find("CLIP") != std::string::npos || type.find("Bit") != std::string::npos;
    // Class defaults apply to absent fields (docs/models.md, "Preprocessing").
    const bool defaultToSquare = !clipLike;
    p.mean = clipLike ? std::vector<double> { 0.48145466, 0.4578275, 0.40821073 } : std::vector<double> { 0.5, 0.5, 0.5 };
    p.std = clipLike ? std::vector<double> { 0.26862954, 0.26130258, 0.27577711 } : std::vector<double> { 0.5, 0.5, 0.5 };
    p.interpolation = Interpolation::Bilinear;
    if (clipLike || type.find("DeiT") != std::string::npos)
        p.interpolation = Interpolation::Bicubic;
    if (pre.contains("resample") && pre["resample"].is_number_integer()) {
        // PIL codes: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming.
        const int r = pre["resample"].get<int>();
        p.interpolation = r == 0 ? Interpolation::Nearest : (r == 2 || r == 4 || r == 5) ? Interpolation::Bilinear : Interpolation::Bicubic;
    }
    if (!pre.value("do_resize", true)) {
        p.resize = ResizeMode::None;
    } else if (pre.contains("size")) {
        const auto& s = pre["size"];
        if (s.is_number_integer()) {
            if (defaultToSquare) {
                p.resize = ResizeMode::Exact;
                p.resizeHeight = p.resizeWidth = sideField(s, path, "size");
            } else {
                p.resize = ResizeMode::ShortestEdge;
                p.resizeShortest = sideField(s, path, "size");
            }
        } else if (s.is_object() && s.contains("shortest_edge")) {
            p.resize = ResizeMode::ShortestEdge;
            p.resizeShortest = sideField(s["shortest_edge"], path, "size.shortest_edge");
        } else if (s.is_object() && s.contains("height") && s.contains("width")) {
            p.resize = ResizeMode::Exact;
            p.resizeHeight = sideField(s["height"], path, "size.height");
            p.resizeWidth = sideField(s["width"], path, "size.width");
        } else {
            throw LoadError(path + ": size " + s.dump() + " is not understood (height/width or shortest_edge)");
        }
    } else {
        p.resize = clipLike ? ResizeMode::ShortestEdge : ResizeMode::Exact;
        p.resizeShortest = 224;
        p.resizeHeight = p.resizeWidth = 224;
    }
    p.centerCrop = pre.value("do_center_crop", clipLike || type.find("DeiT") != std::string::npos);
    if (p.centerCrop) {
        const auto crop = pre.contains("crop_size") ? sizePair(pre["crop_size"].is_object()
                                                                    ? json::array({ pre["crop_size"].value("height", json(224)), pre["crop_size"].value("width", json(224)) })
                                                                    : pre["crop_size"],
                                                                path, "crop_size")
                                                    : std::pair<int, int> { 224, 224 };
        p.cropHeight = crop.first;
        p.cropWidth = crop.second;
    } else if (p.resize == ResizeMode::Exact) {
        p.cropHeight = p.resizeHeight;
        p.cropWidth = p.resizeWidth;
    }
    p.cropOffsetFloor = true;
    p.rescale = pre.value("do_rescale", true) ? pre.value("rescale_factor", 1.0 / 255.0) : 1.0;
    if (pre.value("do_normalize", true)) {
        if (pre.contains("image_mean"))
            p.mean = doubles(pre["image_mean"], path, "image_mean");
        if (pre.contains("image_std"))
            p.std = doubles(pre["image_std"], path, "image_std");
    } else {
        p.mean = { 0.0 };
        p.std = { 1.0 };
    }
    p.source = "preprocessor_config.json";
    return p;
}

ResolvedConfig resolveConfig(const TensorMap& t, const NamingHints& hints, const ConfigSources& src, const std::string& weightsPath)
{
    if (hints.family == "swin" || hints.family == "swinv2")
        return resolveSwinConfig(t, hints, src, weightsPath);
    ResolvedConfig out;
    StatedConfig stated;
    readTensors(t, hints, weightsPath, stated, out);
    readMetadata(src.metadata, weightsPath, stated, out);
    readConfigJson(src, t, stated, out);
    if (src.config && src.config->contains("attnscope") && (*src.config)["attnscope"].is_object())
        readVariants((*src.config)["attnscope"], src.configPath, out.model); // attnscope's own models' variants
    if (src.description)
        readDescription(*src.description, src.descriptionPath, stated, out);
    settlePosition(src, weightsPath, stated, out);
    settleGatedMlp(src, weightsPath, stated, out);
    settleHeads(src, weightsPath, stated, out); // and refuses a quadratic model with prefix tokens
    if (out.model.rope != ModelConfig::Rope::None && out.model.headDim() % 4 != 0)
        fail(src.configPath.empty() ? weightsPath : src.configPath,
             "a rotary position embedding needs a head width divisible by 4, not " + std::to_string(out.model.headDim()));
    settleLinearPatch(t, src.descriptionPath.empty() ? weightsPath : src.descriptionPath, stated, out);
    ModelConfig& c = out.model;
    settleGrid(t, src, weightsPath, stated, c);
    if (c.numClasses > 0 && !out.labels.empty() && int(out.labels.size()) != c.numClasses)
        out.labels.clear(); // labels that do not fit the head are worse than none
    if (src.preprocessor && !stated.preprocess)
        stated.preprocess = preprocessFromHuggingFace(*src.preprocessor, src.preprocessorPath);
    out.preprocess = stated.preprocess ? *stated.preprocess : defaultPreprocess(c.imageHeight, c.imageWidth);
    fitChannels(out.preprocess, c.channels, src.preprocessorPath.empty() ? weightsPath : src.preprocessorPath);
    return out;
}

} // namespace attnscope
