#pragma once

// Swin and Swin v2 checkpoints (docs/models.md, "Swin"): timm's names (SwinTransformer, SwinTransformerV2) and
// transformers' (Swin, Swinv2, renamed to timm's), and the architecture they and their config.json state.
#include "checkpoint/ConfigResolver.h"

namespace attnscope {

// The tensors are a Swin's (timm's or transformers' names).
bool isSwinLayout(const TensorMap& t);
// timm's names, `head.fc` as `head`, q and v biases folded into `attn.qkv.bias` (a zero key bias between them); hints
// say the family ("swin" or "swinv2") and the naming.
TensorMap fromSwin(TensorMap t, NamingHints& hints, const std::string& path);
// The architecture from the tensors (stages, widths, heads, the v1 tables' windows) and the config.json (timm's or
// Hugging Face's: windows, Swin v2's pretraining windows, the input size), each checked against the other.
ResolvedConfig resolveSwinConfig(const TensorMap& t, const NamingHints& hints, const ConfigSources& src,
                                 const std::string& weightsPath);

} // namespace attnscope
