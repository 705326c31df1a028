#include "checkpoint/CheckpointNaming.h"

#include "checkpoint/NamingRules.h"
#include "checkpoint/SwinCheckpoint.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <regex>

namespace attnscope {

using namespace naming;

namespace {

std::string listSome(const TensorMap& t, size_t n)
{
    std::string s;
    size_t i = 0;
    for (const auto& [name, tensor] : t) {
        if (i++ == n) {
            s += ", ...";
            break;
        }
        s += (s.empty() ? "" : ", ") + name;
    }
    return s;
}

// attnscope's tensor names (docs/model-description.md), the variants' parameters and DeiT-3's gamma_1/2 included. Only
// messages use it: which tensors to name when a described checkpoint follows no convention.
bool isAttnscopeName(const std::string& name)
{
    static const std::regex names(
        "^(cls_token|dist_token|reg_token|pos_embed|patch_embed\\.(proj|linear|norm_in|norm)\\.(weight|bias)"
        "|(norm_pre|norm|fc_norm|head|head_dist)\\.(weight|bias)|rope\\.freqs|attn_pool\\.latent"
        "|attn_pool\\.(q|kv|proj|norm|mlp\\.fc1|mlp\\.fc2)\\.(weight|bias)"
        "|blocks\\.\\d+\\.((norm1|norm2|attn\\.(qkv|q|k|v|proj|norm)|mlp\\.(fc1|fc2|norm))\\.(weight|bias)"
        "|ls[12]\\.gamma|gamma_[12]|attn\\.(log_hy|log_hp|centre|alpha|q_bias|v_bias|relative_position_bias_table)))$");
    return std::regex_match(name, names);
}

// The first numeric component of a dotted name ("layers.3.x" -> 3 at offset 7), the block index in every convention.
struct NumberAt {
    size_t offset = std::string::npos;
    size_t length = 0;
    std::string digits;
};

NumberAt firstNumber(const std::string& name)
{
    static const std::regex number("(^|\\.)(\\d+)(?=\\.|$)");
    std::smatch m;
    if (!std::regex_search(name, m, number))
        return {};
    return { size_t(m.position(2)), size_t(m.length(2)), m.str(2) };
}

// "0..3" for 0, 1, 2, 3; "0,2" otherwise; runs of three or more are shortened.
std::string indexRanges(std::vector<long> v)
{
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::string s;
    for (size_t i = 0; i < v.size();) {
        size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1)
            ++j;
        s += (s.empty() ? "" : ",") + std::to_string(v[i]);
        if (j >= i + 2)
            s += ".." + std::to_string(v[j]);
        else if (j == i + 1)
            s += "," + std::to_string(v[j]);
        i = j + 1;
    }
    return s;
}

// BEiT's and EVA's attention has biases for the query and the value but none for the key (timm: attn.q_bias, attn.v_bias
// beside a bias-free attn.qkv): they become attn.qkv.bias with zeros for the key, as their forward concatenates them.
void fuseQueryValueBiases(TensorMap& t, const std::string& path)
{
    for (int i = 0; has(t, "blocks." + std::to_string(i) + ".attn.q_bias"); ++i) {
        const std::string p = "blocks." + std::to_string(i) + ".attn.";
        if (!has(t, p + "v_bias") || has(t, p + "qkv.bias"))
            throw LoadError(path + ": " + p + "q_bias needs " + p + "v_bias beside it and no " + p + "qkv.bias");
        const at::Tensor q = t.at(p + "q_bias"), v = t.at(p + "v_bias");
        if (q.dim() != 1 || !q.sizes().equals(v.sizes()))
            throw LoadError(path + ": " + p + "q_bias and v_bias must be vectors of one size");
        t[p + "qkv.bias"] = at::cat({ q, at::zeros_like(q), v });
        t.erase(p + "q_bias");
        t.erase(p + "v_bias");
    }
}

// timm's SwiGLU keeps the gate and the value apart (mlp.fc1_g, mlp.fc1_x): one fc1 with the gate's rows first, as timm's
// packed GluMlp has them (ModelConfig::mlpGated).
void stackGateAndValue(TensorMap& t, const std::string& path)
{
    for (int i = 0; has(t, "blocks." + std::to_string(i) + ".mlp.fc1_g.weight"); ++i) {
        const std::string p = "blocks." + std::to_string(i) + ".mlp.";
        for (const char* part : { "weight", "bias" }) {
            const std::string g = p + "fc1_g." + part, x = p + "fc1_x." + part;
            if (has(t, g) != has(t, x))
                throw LoadError(path + ": " + (has(t, g) ? g : x) + " has no matching " + (has(t, g) ? x : g));
            if (!has(t, g))
                continue;
            if (!t.at(g).sizes().equals(t.at(x).sizes()))
                throw LoadError(path + ": " + g + " and " + x + " differ in shape");
            t[p + "fc1." + part] = at::cat({ t.at(g), t.at(x) }, 0);
            t.erase(g);
            t.erase(x);
        }
    }
}

// Folds the CLS position into the CLS token and leaves the position table to the patches, so that registers,
// which never get a position, can sit between CLS and the patches (timm's DINOv2-register conversion, NAMING 4.7).
void foldClassPosition(TensorMap& t, NamingHints& hints)
{
    auto& pos = t.at("pos_embed");
    t["cls_token"] = t.at("cls_token") + pos.slice(1, 0, 1);
    pos = pos.slice(1, 1).contiguous();
    hints.posEmbedHasPrefix = false;
}

TensorMap fromHuggingFaceVit(TensorMap t, NamingHints& hints, const std::string& prefix, const std::string& path)
{
    const std::string p = std::regex_replace(prefix, std::regex("\\."), "\\.");
    t = applyRules(std::move(t), {
        // BEiT's pooler is its norm of the mean of the patch tokens (use_mean_pooling); ViT's, a dense layer no
        // classifier reads, is dropped.
        rename("^" + p + "pooler\\.layernorm\\.", "fc_norm."),
        drop("^" + p + "embeddings\\.mask_token$"),
        drop("^pooler\\."),
        drop("^" + p + "pooler\\."),
        rename("^" + p + "embeddings\\.cls_token$", "cls_token"),
        rename("^" + p + "embeddings\\.distillation_token$", "dist_token"),
        rename("^" + p + "embeddings\\.register_tokens$", "reg_token"),
        rename("^" + p + "embeddings\\.position_embeddings$", "pos_embed"),
        rename("^" + p + "embeddings\\.patch_embeddings\\.projection\\.", "patch_embed.proj."),
        rename("^" + p + "encoder\\.layer\\.(\\d+)\\.", "blocks.$1."),
        rename("^(blocks\\.\\d+\\.)layernorm_before\\.", "$1norm1."),
        rename("^(blocks\\.\\d+\\.)layernorm_after\\.", "$1norm2."),
        rename("^(blocks\\.\\d+\\.)attention\\.attention\\.", "$1attn."),
        rename("^(blocks\\.\\d+\\.)attention\\.output\\.dense\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)intermediate\\.dense\\.", "$1mlp.fc1."),
        rename("^(blocks\\.\\d+\\.)output\\.dense\\.", "$1mlp.fc2."),
        rename("^(blocks\\.\\d+\\.)layer_scale1\\.lambda1$", "$1ls1.gamma"),
        rename("^(blocks\\.\\d+\\.)layer_scale2\\.lambda1$", "$1ls2.gamma"),
        rename("^(blocks\\.\\d+\\.)lambda_1$", "$1ls1.gamma"), // BEiT
        rename("^(blocks\\.\\d+\\.)lambda_2$", "$1ls2.gamma"),
        drop("\\.relative_position_bias\\.relative_position_index$"),
        rename("^(blocks\\.\\d+\\.attn\\.)relative_position_bias\\.relative_position_bias_table$", "$1relative_position_bias_table"),
        rename("^" + p + "layernorm\\.", "norm."),
        rename("^cls_classifier\\.", "head."),
        rename("^distillation_classifier\\.", "head_dist."),
        rename("^classifier\\.", "head."),
    });
    fuseQkv(t, "attn.query.", "attn.key.", "attn.value.", "attn.qkv.", path);
    for (const auto& [name, tensor] : t)
        if (name.find("mlp.weights_in") != std::string::npos)
            throw LoadError(path + ": " + name + ": SwiGLU MLPs (DINOv2 giant) are not supported yet");
    if (has(t, "reg_token") && has(t, "pos_embed") && has(t, "cls_token"))
        foldClassPosition(t, hints);
    return t;
}

// transformers' DINOv3ViTModel (or its Backbone): `layer.N.` (the hub's files; `model.layer.N.` in memory since
// transformers 5), q/k/v projections apart (a key bias only where key_bias), layer scales, an MLP of up/down projections
// or a gated one (act(gate_proj) * up_proj: timm's SwiGLU fc1_g and fc1_x), a mask token used only in pre-training. Its
// rotary embedding has no tensor: config.json's model_type states it (readConfigJson).
TensorMap fromHuggingFaceDinov3(TensorMap t, NamingHints& hints, const std::string& prefix, const std::string& path)
{
    const std::string p = std::regex_replace(prefix, std::regex("\\."), "\\.");
    const bool gated = has(t, prefix + "layer.0.mlp.gate_proj.weight") || has(t, prefix + "model.layer.0.mlp.gate_proj.weight");
    t = applyRules(std::move(t), {
        drop("^" + p + "embeddings\\.mask_token$"),
        rename("^" + p + "embeddings\\.cls_token$", "cls_token"),
        rename("^" + p + "embeddings\\.register_tokens$", "reg_token"),
        rename("^" + p + "embeddings\\.patch_embeddings\\.", "patch_embed.proj."),
        rename("^" + p + "(model\\.)?layer\\.(\\d+)\\.", "blocks.$2."),
        rename("^(blocks\\.\\d+\\.)attention\\.o_proj\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)attention\\.", "$1attn."),
        rename("^(blocks\\.\\d+\\.)layer_scale1\\.lambda1$", "$1ls1.gamma"),
        rename("^(blocks\\.\\d+\\.)layer_scale2\\.lambda1$", "$1ls2.gamma"),
        rename("^(blocks\\.\\d+\\.mlp\\.)gate_proj\\.", "$1fc1_g."),
        rename("^(blocks\\.\\d+\\.mlp\\.)up_proj\\.", gated ? "$1fc1_x." : "$1fc1."),
        rename("^(blocks\\.\\d+\\.mlp\\.)down_proj\\.", "$1fc2."),
        rename("^" + p + "norm\\.", "norm."),
    });
    if (has(t, "reg_token") && t.at("reg_token").numel() == 0)
        t.erase("reg_token"); // num_register_tokens 0 saves a [1, 0, D] tensor
    fuseQkv(t, "attn.q_proj.", "attn.k_proj.", "attn.v_proj.", "attn.qkv.", path);
    stackGateAndValue(t, path);
    hints.naming = "huggingface";
    hints.family = "dinov3";
    return t;
}

TensorMap fromHuggingFaceClip(TensorMap t, NamingHints& hints, const std::string& path)
{
    const bool classifier = has(t, "classifier.weight");
    t = applyRules(std::move(t), {
        drop("^text_model\\."),
        drop("^text_projection\\."),
        drop("^logit_scale$"),
        drop("^vision_model\\.embeddings\\.position_ids$"),
        rename("^vision_model\\.embeddings\\.class_embedding$", "cls_token"),
        rename("^vision_model\\.embeddings\\.patch_embedding\\.", "patch_embed.proj."),
        rename("^vision_model\\.embeddings\\.position_embedding\\.weight$", "pos_embed"),
        rename("^vision_model\\.pre_layrnorm\\.", "norm_pre."),
        rename("^vision_model\\.encoder\\.layers\\.(\\d+)\\.", "blocks.$1."),
        rename("^(blocks\\.\\d+\\.)layer_norm1\\.", "$1norm1."),
        rename("^(blocks\\.\\d+\\.)layer_norm2\\.", "$1norm2."),
        rename("^(blocks\\.\\d+\\.)self_attn\\.out_proj\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)self_attn\\.", "$1attn."),
        rename("^visual_projection\\.", "head."),
        rename("^classifier\\.", "head."),
    });
    // CLIPForImageClassification classifies the mean of the un-normalised patches: post_layernorm plays no part.
    if (classifier)
        t = applyRules(std::move(t), { drop("^vision_model\\.post_layernorm\\.") });
    else
        t = applyRules(std::move(t), { rename("^vision_model\\.post_layernorm\\.", "fc_norm.") });
    fuseQkv(t, "attn.q_proj.", "attn.k_proj.", "attn.v_proj.", "attn.qkv.", path);
    if (has(t, "cls_token"))
        t["cls_token"] = t.at("cls_token").reshape({ 1, 1, -1 });
    if (has(t, "pos_embed"))
        t["pos_embed"] = t.at("pos_embed").unsqueeze(0);
    hints.headIsProjection = !classifier && has(t, "head.weight");
    hints.family = "clip";
    return t;
}

// transformers' SiglipVisionModel (or SiglipModel's vision tower): CLIP-like blocks without a CLS token, a final norm on
// every token (post_layernorm) and the attention-pool head, whose nn.MultiheadAttention keeps q, k and v in one
// in_proj: its first rows are the query's, the rest timm's kv.
TensorMap fromHuggingFaceSiglip(TensorMap t, NamingHints& hints, const std::string& path)
{
    t = applyRules(std::move(t), {
        drop("^text_model\\."),
        drop("^logit_(scale|bias)$"),
        drop("^vision_model\\.embeddings\\.position_ids$"),
        rename("^vision_model\\.embeddings\\.patch_embedding\\.", "patch_embed.proj."),
        rename("^vision_model\\.embeddings\\.position_embedding\\.weight$", "pos_embed"),
        rename("^vision_model\\.encoder\\.layers\\.(\\d+)\\.", "blocks.$1."),
        rename("^(blocks\\.\\d+\\.)layer_norm1\\.", "$1norm1."),
        rename("^(blocks\\.\\d+\\.)layer_norm2\\.", "$1norm2."),
        rename("^(blocks\\.\\d+\\.)self_attn\\.out_proj\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)self_attn\\.", "$1attn."),
        rename("^vision_model\\.post_layernorm\\.", "norm."),
        rename("^vision_model\\.head\\.probe$", "attn_pool.latent"),
        rename("^vision_model\\.head\\.attention\\.out_proj\\.", "attn_pool.proj."),
        rename("^vision_model\\.head\\.layernorm\\.", "attn_pool.norm."),
        rename("^vision_model\\.head\\.mlp\\.", "attn_pool.mlp."),
    });
    fuseQkv(t, "attn.q_proj.", "attn.k_proj.", "attn.v_proj.", "attn.qkv.", path);
    for (const char* part : { "weight", "bias" }) {
        const std::string name = std::string("vision_model.head.attention.in_proj_") + part;
        if (!has(t, name))
            continue;
        const at::Tensor packed = t.at(name);
        if (packed.size(0) % 3 != 0)
            throw LoadError(path + ": " + name + ": " + std::to_string(packed.size(0)) + " rows are not q, k and v of one width");
        const int64_t d = packed.size(0) / 3;
        t[std::string("attn_pool.q.") + part] = packed.slice(0, 0, d);
        t[std::string("attn_pool.kv.") + part] = packed.slice(0, d);
        t.erase(name);
    }
    if (has(t, "pos_embed"))
        t["pos_embed"] = t.at("pos_embed").unsqueeze(0);
    hints.family = "siglip";
    return t;
}

TensorMap fromTorchvision(TensorMap t, const std::string& path)
{
    for (const auto& [name, tensor] : t)
        if (name.rfind("heads.pre_logits", 0) == 0)
            throw LoadError(path + ": " + name + ": torchvision's representation layer (heads.pre_logits) is not supported");
    return applyRules(std::move(t), {
        rename("^class_token$", "cls_token"),
        rename("^conv_proj\\.", "patch_embed.proj."),
        rename("^encoder\\.pos_embedding$", "pos_embed"),
        rename("^encoder\\.layers\\.encoder_layer_(\\d+)\\.", "blocks.$1."),
        rename("^(blocks\\.\\d+\\.)ln_1\\.", "$1norm1."),
        rename("^(blocks\\.\\d+\\.)ln_2\\.", "$1norm2."),
        rename("^(blocks\\.\\d+\\.)self_attention\\.in_proj_weight$", "$1attn.qkv.weight"),
        rename("^(blocks\\.\\d+\\.)self_attention\\.in_proj_bias$", "$1attn.qkv.bias"),
        rename("^(blocks\\.\\d+\\.)self_attention\\.out_proj\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)mlp\\.(0|linear_1)\\.", "$1mlp.fc1."),
        rename("^(blocks\\.\\d+\\.)mlp\\.(3|linear_2)\\.", "$1mlp.fc2."),
        rename("^encoder\\.ln\\.", "norm."),
        rename("^heads\\.head\\.", "head."),
    });
}

TensorMap fromOpenAiClip(TensorMap t, NamingHints& hints)
{
    t = applyRules(std::move(t), {
        rename("^module\\.", ""),
        drop("^(?!visual\\.)"), // the text tower and logit scale
        rename("^visual\\.conv1\\.", "patch_embed.proj."),
        rename("^visual\\.class_embedding$", "cls_token"),
        rename("^visual\\.positional_embedding$", "pos_embed"),
        rename("^visual\\.ln_pre\\.", "norm_pre."),
        rename("^visual\\.ln_post\\.", "fc_norm."),
        rename("^visual\\.proj$", "head.weight"),
        rename("^visual\\.transformer\\.resblocks\\.(\\d+)\\.", "blocks.$1."),
        rename("^(blocks\\.\\d+\\.)ln_1\\.", "$1norm1."),
        rename("^(blocks\\.\\d+\\.)ln_2\\.", "$1norm2."),
        rename("^(blocks\\.\\d+\\.)attn\\.in_proj_weight$", "$1attn.qkv.weight"),
        rename("^(blocks\\.\\d+\\.)attn\\.in_proj_bias$", "$1attn.qkv.bias"),
        rename("^(blocks\\.\\d+\\.)attn\\.out_proj\\.", "$1attn.proj."),
        rename("^(blocks\\.\\d+\\.)mlp\\.c_fc\\.", "$1mlp.fc1."),
        rename("^(blocks\\.\\d+\\.)mlp\\.c_proj\\.", "$1mlp.fc2."),
    });
    t["cls_token"] = t.at("cls_token").reshape({ 1, 1, -1 });
    t["pos_embed"] = t.at("pos_embed").unsqueeze(0);
    if (has(t, "head.weight"))
        t["head.weight"] = t.at("head.weight").t().contiguous(); // OpenAI stores proj as [D, E] (x @ proj)
    hints.family = "clip";
    hints.headIsProjection = true;
    hints.quickGelu = true;
    hints.layerNormEps = 1e-5;
    const int64_t width = t.at("patch_embed.proj.weight").size(0);
    hints.numHeads = int(width / 64); // OpenAI's own rule: heads = width // 64
    return t;
}

} // namespace

std::string unusedNamesError(const std::vector<std::string>& unused, const DescribedNames& described,
                             const std::string& path)
{
    // Tensors that differ only in their block index form one group, shown once with the indices in braces.
    struct Group {
        std::string from, to; // the checkpoint's name and the name after the rules, "{}" for the index
        bool known = false;   // false: a name attnscope's own conversion made (a fused attn.qkv)
        bool renamed = false;
        std::vector<long> indices;
    };
    std::vector<Group> groups;
    for (const auto& name : unused) {
        const auto it = described.checkpointName.find(name);
        const bool known = it != described.checkpointName.end();
        Group g { known ? it->second : name, name, known, false, {} };
        g.renamed = g.from != g.to;
        const NumberAt a = firstNumber(g.from), b = firstNumber(g.to);
        // Grouped only when the rules kept the index: a rule that renumbers blocks is shown tensor by tensor.
        const bool keptIndex = !g.renamed || (b.offset != std::string::npos && b.digits == a.digits);
        if (a.offset != std::string::npos && a.length <= 9 && keptIndex) {
            g.indices.push_back(std::stol(a.digits));
            g.from.replace(a.offset, a.length, "{}");
            if (g.renamed)
                g.to.replace(b.offset, b.length, "{}");
            else
                g.to = g.from;
        }
        const auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& o) {
            return !g.indices.empty() && !o.indices.empty() && o.from == g.from && o.to == g.to;
        });
        if (same != groups.end())
            same->indices.push_back(g.indices.front());
        else
            groups.push_back(std::move(g));
    }
    const auto shown = [](std::string name, const std::vector<long>& indices) {
        if (const auto at = name.find("{}"); at != std::string::npos)
            name.replace(at, 2,
                         indices.size() == 1 ? std::to_string(indices.front()) : "{" + indexRanges(indices) + "}");
        return name;
    };
    constexpr size_t kShown = 6; // one line: the first few groups say what the rules miss
    std::string list;
    for (size_t i = 0; i < groups.size() && i < kShown; ++i) {
        const Group& g = groups[i];
        const std::string what = !g.known ? std::string()
            : g.renamed                    ? " (renamed to " + shown(g.to, g.indices) + ")"
                                           : std::string(" (not renamed)");
        list += (i ? ", " : "") + shown(g.from, g.indices) + what;
    }
    if (groups.size() > kShown)
        list += ", ... (" + std::to_string(groups.size() - kShown) + " more)";
    const bool one = unused.size() == 1;
    return described.descriptionPath + ": after its rename rules, " + std::to_string(unused.size())
        + (one ? " tensor of " : " tensors of ") + path + (one ? " has a name" : " have names")
        + " attnscope does not use: " + list + "; add or fix a rename rule for " + (one ? "it" : "them") + ", or drop "
        + (one ? "it" : "them") + " (attnscope's names: docs/model-description.md)";
}

TensorMap stripCommonPrefix(TensorMap tensors)
{
    for (const char* prefix : { "module.", "_orig_mod." }) {
        const std::string p = prefix;
        bool all = !tensors.empty();
        for (const auto& [name, t] : tensors)
            all = all && name.rfind(p, 0) == 0;
        if (all) {
            TensorMap out;
            for (auto& [name, t] : tensors)
                out[name.substr(p.size())] = t;
            tensors = std::move(out);
        }
    }
    return tensors;
}

// lucidrains' vit-pytorch: ViT and SimpleViT (vit_pytorch/vit.py, simple_vit.py). The patch embedding is a Sequential of
// Rearrange to (p1 p2 c) patches, LayerNorm, Linear, LayerNorm; each layer a pair (Attention with its own norm and
// to_qkv without bias, FeedForward's Sequential of LayerNorm, Linear, GELU, [Dropout,] Linear); the transformer's final
// norm. Its versions differ in shapes, not names: cls_token [1, 1, D] (always present) or [1, D] ([0, D] when pooling
// by the mean), pos_embedding [1, N, D] or [N, D]; before 1.x the head was a Sequential of LayerNorm and Linear.
TensorMap fromVitPytorch(TensorMap t, NamingHints& hints)
{
    hints.naming = "vit-pytorch";
    const bool simple = has(t, "linear_head.weight");
    hints.family = simple ? "vit-pytorch SimpleViT" : "vit-pytorch ViT";
    hints.layerNormEps = 1e-5; // nn.LayerNorm's default
    const bool oldHead = has(t, "mlp_head.1.weight");
    const std::string fc2 = has(t, "transformer.layers.0.1.net.4.weight") ? "4" : "3"; // after a Dropout, or not
    std::vector<Rule> rules {
        rename("^to_patch_embedding\\.1\\.", "patch_embed.norm_in."),
        rename("^to_patch_embedding\\.2\\.", "patch_embed.linear."),
        rename("^to_patch_embedding\\.3\\.", "patch_embed.norm."),
        rename("^pos_embedding$", "pos_embed"),
        rename("^transformer\\.layers\\.(\\d+)\\.0\\.norm\\.", "blocks.$1.norm1."),
        rename("^transformer\\.layers\\.(\\d+)\\.0\\.to_qkv\\.", "blocks.$1.attn.qkv."),
        rename("^transformer\\.layers\\.(\\d+)\\.0\\.to_out\\.(0\\.)?", "blocks.$1.attn.proj."),
        rename("^transformer\\.layers\\.(\\d+)\\.1\\.net\\.0\\.", "blocks.$1.norm2."),
        rename("^transformer\\.layers\\.(\\d+)\\.1\\.net\\.1\\.", "blocks.$1.mlp.fc1."),
        rename("^transformer\\.layers\\.(\\d+)\\.1\\.net\\." + fc2 + "\\.", "blocks.$1.mlp.fc2."),
        rename("^transformer\\.norm\\.", "norm."),
        rename("^linear_head\\.", "head."),
    };
    if (oldHead) {
        rules.push_back(rename("^mlp_head\\.0\\.", "fc_norm."));
        rules.push_back(rename("^mlp_head\\.1\\.", "head."));
    } else {
        rules.push_back(rename("^mlp_head\\.", "head."));
    }
    t = applyRules(std::move(t), rules);
    if (has(t, "cls_token")) {
        const auto cls = t.at("cls_token");
        if (cls.dim() == 2 && cls.size(0) == 0)
            t.erase("cls_token"); // pooled by the mean: no CLS
        else if (cls.dim() == 2)
            t["cls_token"] = cls.unsqueeze(0);
    }
    if (has(t, "pos_embed") && t.at("pos_embed").dim() == 2)
        t["pos_embed"] = t.at("pos_embed").unsqueeze(0);
    if (simple)
        hints.position = "sincos2d"; // SimpleViT's posemb_sincos_2d: fixed, in no state dict
    return t;
}

TensorMap toCanonicalNames(TensorMap t, NamingHints& hints, const std::string& path, const DescribedNames* described)
{
    t = stripCommonPrefix(std::move(t));

    if (has(t, "vision_model.head.probe")) {
        hints.naming = "huggingface";
        return fromHuggingFaceSiglip(std::move(t), hints, path);
    }
    if (has(t, "vision_model.embeddings.class_embedding") || has(t, "vision_model.pre_layrnorm.weight")) {
        hints.naming = "huggingface";
        return fromHuggingFaceClip(std::move(t), hints, path);
    }
    if (auto p = prefixOf(t, "encoder.layer.0.attention.attention.relative_position_bias.relative_position_bias_table",
                          { "beit.", "data2vec_vision.", "" })) {
        hints.naming = "huggingface";
        hints.family = "beit";
        return fromHuggingFaceVit(std::move(t), hints, *p, path);
    }
    if (isSwinLayout(t))
        return fromSwin(std::move(t), hints, path);
    if (auto p = prefixOf(t, "embeddings.patch_embeddings.weight", { "" });
        p && (has(t, *p + "layer.0.attention.q_proj.weight") || has(t, *p + "model.layer.0.attention.q_proj.weight")))
        return fromHuggingFaceDinov3(std::move(t), hints, *p, path);
    if (auto p = prefixOf(t, "encoder.layer.0.layer_scale1.lambda1", { "dinov2_with_registers.", "dinov2.", "" })) {
        hints.naming = "huggingface";
        hints.family = "dinov2";
        return fromHuggingFaceVit(std::move(t), hints, *p, path);
    }
    if (auto p = prefixOf(t, "embeddings.distillation_token", { "deit.", "" })) {
        hints.naming = "huggingface";
        hints.family = "deit";
        return fromHuggingFaceVit(std::move(t), hints, *p, path);
    }
    if (auto p = prefixOf(t, "embeddings.patch_embeddings.projection.weight", { "vit.", "deit.", "" })) {
        hints.naming = "huggingface";
        hints.family = *p == "deit." ? "deit" : "vit";
        return fromHuggingFaceVit(std::move(t), hints, *p, path);
    }
    if (has(t, "conv_proj.weight") && has(t, "encoder.pos_embedding")) {
        hints.naming = "torchvision";
        hints.family = "vit";
        return fromTorchvision(std::move(t), path);
    }
    if (has(t, "to_patch_embedding.2.weight") && has(t, "transformer.layers.0.0.to_qkv.weight"))
        return fromVitPytorch(std::move(t), hints);
    if (has(t, "visual.class_embedding")) {
        hints.naming = "openai-clip";
        return fromOpenAiClip(std::move(t), hints);
    }
    if ((has(t, "patch_embed.proj.weight") || has(t, "patch_embed.linear.weight"))
        && (has(t, "blocks.0.attn.qkv.weight") || has(t, "blocks.0.attn.q.weight") || has(t, "blocks.0.attn.v.weight")
            || has(t, "blocks.0.attn.q_proj.weight"))) {
        if (has(t, "mask_token")) {
            // The original DINOv2 release: timm names plus a mask token; registers are `register_tokens` and
            // the position table still covers CLS (docs/models.md, "DINOv2's registers and position table").
            hints.naming = "dinov2-original";
            hints.family = "dinov2";
            t.erase("mask_token");
            if (has(t, "register_tokens")) {
                t["reg_token"] = t.at("register_tokens");
                t.erase("register_tokens");
                foldClassPosition(t, hints);
            }
            return t;
        }
        hints.naming = "timm";
        if (hints.family.empty())
            hints.family = has(t, "dist_token") ? "deit" : has(t, "blocks.0.ls1.gamma") || has(t, "reg_token") ? "dinov2" : has(t, "norm_pre.weight") ? "clip" : "vit";
        // Original DeiT-3 files name layer scales gamma_1/gamma_2 (timm's checkpoint_filter_fn renames them).
        t = applyRules(std::move(t), { rename("^(blocks\\.\\d+\\.)gamma_1$", "$1ls1.gamma"),
                                       rename("^(blocks\\.\\d+\\.)gamma_2$", "$1ls2.gamma") });
        // Separate projections (a described model's attn.q/k/v) are fused as the blocks expect.
        fuseQkv(t, "attn.q.", "attn.k.", "attn.v.", "attn.qkv.", path);
        fuseQkv(t, "attn.q_proj.", "attn.k_proj.", "attn.v_proj.", "attn.qkv.", path); // EVA-02 with q, k, v apart
        fuseQueryValueBiases(t, path);
        stackGateAndValue(t, path);
        return t;
    }
    if (described) {
        // The description's rules were meant to give attnscope's names: name the tensors they did not.
        std::vector<std::string> unused;
        for (const auto& [name, tensor] : t)
            if (!isAttnscopeName(name))
                unused.push_back(name);
        if (!unused.empty())
            throw LoadError(unusedNamesError(unused, *described, path));
        throw LoadError(described->descriptionPath + ": after its rename and drop rules, " + path + " has no "
                        + (has(t, "patch_embed.proj.weight") || has(t, "patch_embed.linear.weight")
                               ? "blocks.0.attn.qkv.weight (or attn.q/k/v)"
                               : "patch_embed.proj.weight (or patch_embed.linear.weight)")
                        + "; first names: " + listSome(t, 6) + " (attnscope's names: docs/model-description.md)");
    }
    throw LoadError(path + ": tensor names follow no known ViT convention (timm, Hugging Face, torchvision, "
                           "OpenAI CLIP); first names: " + listSome(t, 6)
                        + "; describe the model with an attnscope.json (docs/model-description.md)",
                    Error::Missing::Description);
}

} // namespace attnscope
