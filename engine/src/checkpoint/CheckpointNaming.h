#pragma once

#include "checkpoint/SafeTensors.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// What the tensor names of a checkpoint say about the model beyond the shapes.
struct NamingHints {
    std::string naming; // timm | huggingface | torchvision | openai-clip | dinov2-original | vit-pytorch
    std::string family; // vit | deit | dinov2 | clip | ...
    std::optional<bool> posEmbedHasPrefix;
    bool headIsProjection = false;
    std::optional<double> layerNormEps;
    std::optional<int> numHeads;
    std::optional<bool> quickGelu;
    std::optional<std::string> position; // a scheme without a tensor that the layout fixes ("sincos2d": SimpleViT)
};

// What a model description's rename rules made of a checkpoint's names (applyDescriptionRenames), so that a tensor no
// rule turned into one of attnscope's names is reported under the name the checkpoint gives it.
struct DescribedNames {
    std::string descriptionPath;
    // name after the rules (and after stripCommonPrefix) -> the name in the file
    std::map<std::string, std::string> checkpointName;
};

// "<description>: after its rename rules, 8 tensors of <path> have names attnscope does not use: a (not renamed),
// b (renamed to c), ...; add ...": `unused` are names after the rules. A name that recurs in every block is listed once
// ("layers.{0..11}.self_attn.in_proj_weight"): a forgotten rule misses it in all of them.
std::string unusedNamesError(const std::vector<std::string>& unused, const DescribedNames& described,
                             const std::string& path);

// Renames a checkpoint's tensors onto the engine's names (timm's: `blocks.3.attn.qkv.weight`), detecting the
// convention from sentinel keys (docs/models.md, "Recognising the convention"). This is the one place where foreign
// names are mapped.
// Separate q/k/v tensors are fused, HF CLIP's [D] / [N+1, D] shapes get timm's batch dimensions, tensors that
// play no part at inference (mask tokens, position ids, poolers, CLIP's text tower) are dropped.
// Throws LoadError("<path>: ...") when the convention is not recognised; for a described checkpoint (`described`: its
// names went through a description's rules) the error names the tensors that no rule renamed onto attnscope's names.
TensorMap toCanonicalNames(TensorMap tensors, NamingHints& hints, const std::string& path,
                           const DescribedNames* described = nullptr);

// The leading "module." of a DistributedDataParallel save, and similar wrappers, removed from every key.
TensorMap stripCommonPrefix(TensorMap tensors);

} // namespace attnscope
