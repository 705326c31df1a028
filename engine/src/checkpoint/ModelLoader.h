#pragma once

#include "checkpoint/ConfigResolver.h"
#include "checkpoint/SafeTensors.h"

#include <string>

namespace attnscope {

// Where a model's files are: the checkpoint, and the config files and description that may sit beside it.
struct ModelFiles {
    std::string weights;
    std::string format; // safetensors | pytorch
    ConfigSources sources;
    // For a torch.save wrapper dict, which entry the tensors came from ("'model_state' (beside 'optimizer', 'epoch')");
    // empty for a plain state dict (readCheckpoint fills it).
    std::string taken;
};

// Resolves what the user named (file, folder or description .json; Model::load has made builtin:NAME a folder) to
// files, and parses the config files. `descriptionPath` is LoadOptions::descriptionPath: empty, the path's own .json or
// an attnscope.json beside the checkpoint. Throws LoadError.
ModelFiles locateModelFiles(const std::string& path, const std::string& descriptionPath);

// Reads the checkpoint's tensors by content (safetensors, or a torch.save zip through the restricted unpickler);
// a safetensors header's __metadata__ goes into files.sources.metadata, and which entry of a wrapper dict was taken into
// files.taken (a description's "weights_key" chooses it).
TensorMap readCheckpoint(ModelFiles& files);

// "blocks.3.attn.qkv.weight: shape [1152, 384], expected [1152, 192]" etc.; throws LoadError listing every
// missing, unexpected and mis-shaped tensor.
void checkTensorsAgainst(const std::map<std::string, std::vector<int64_t>>& expected, const TensorMap& tensors,
                         const std::string& path);

// True when no element is NaN or Inf. Float32 CPU tensors (the memory map of a safetensors file) are scanned in
// place, both threads, without the bool tensor at::isfinite would allocate.
bool allFinite(const at::Tensor& t);

} // namespace attnscope
