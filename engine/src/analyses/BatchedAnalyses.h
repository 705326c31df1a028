#pragma once

// The analyses of a whole batch where its forward left the taps (the GPU, or the CPU), in float64 tensor operations
// over the batch: no host round trip per layer or per image, one copy of the per-image values at the end. The
// numbers are those of Analyses.cpp and SignalToNoise.cpp (the host loops) up to float64 rounding.

#include "vit/VisionTransformer.h"
#include "attnscope/AnalysisRun.h"

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace attnscope {

// How the inputs of one batched forward are laid out (AnalysisRun::addImages): `images` images, each its clean input
// followed by its `noisyPerImage` perturbed copies, perturbation by perturbation and draw by draw.
struct BatchLayout {
    int64_t images = 0;
    int64_t noisyPerImage = 0;
    int gridHeight = 0, gridWidth = 0;
    int prefixTokens = 0;
    int patchSize = 0;
    int depth = 0;
    bool classToken = false; // the prefix's first token is a CLS token
    int registers = 0;       // the prefix's last tokens are registers
};

// Every per-image value the options ask for, as columns: `values` [images, keys.size()] float64 where the taps are (the
// caller copies it to the host: AnalysisRun, in one copy that does not wait for the device). A key
// may repeat (an SNR key once per draw, in draw order); a value that is not finite is not a sample (the host path
// leaves those out too).
struct BatchedValues {
    std::vector<std::string> keys;
    at::Tensor values;
};
// What the analyses make from a batch's shape alone (the head centres' tables, on the device), kept by a run between
// its batches so that they are made and uploaded once: AnalysisRun holds one. Null: made for this batch only.
struct CentresTables;
struct AnalysisTables {
    std::shared_ptr<const CentresTables> centres;
};
BatchedValues analyseBatch(const ForwardState& state, const BatchLayout& layout, const AnalysisOptions& options,
                           AnalysisTables* tables = nullptr);

} // namespace attnscope
