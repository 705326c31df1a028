#pragma once

#include "SafeTensors.h"

#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// What the tensor names of a checkpoint say about the model beyond the shapes.
struct NamingHints {
    std::string naming; // timm | huggingface | torchvision | openai-clip | dinov2-original
    std::string family; // vit | deit | dinov2 | clip | ...
    std::optional<bool> posEmbedHasPrefix;
    bool headIsProjection = false;
    std::optional<double> layerNormEps;
    std::optional<int> numHeads;
    std::optional<bool> quickGelu;
};

// Renames a checkpoint's tensors onto the engine's names (timm's: `blocks.3.attn.qkv.weight`), detecting the
// convention from sentinel keys (NAMING.md section 1). This is the one place where foreign names are mapped.
// Separate q/k/v tensors are fused, HF CLIP's [D] / [N+1, D] shapes get timm's batch dimensions, tensors that
// play no part at inference (mask tokens, position ids, poolers, CLIP's text tower) are dropped.
// Throws LoadError("<path>: ...") when the convention is not recognised.
TensorMap toCanonicalNames(TensorMap tensors, NamingHints& hints, const std::string& path);

// The leading "module." of a DistributedDataParallel save, and similar wrappers, removed from every key.
TensorMap stripCommonPrefix(TensorMap tensors);

} // namespace attnscope
