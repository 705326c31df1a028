#pragma once

#include "attnscope/Result.h"
#include "attnscope/Datasets.h"
#include "attnscope/Trainer.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace attnscope {

// Where a training run stands after an epoch: enough to go on from the next epoch and end with exactly the weights an
// uninterrupted run writes (the model's and the optimiser's tensors, the random generator that draws the order and
// the augmentations, the schedule's step) plus what the card reports (the epochs' lines, the seconds so far).
struct TrainingState {
    int epoch = 0; // epochs done
    int64_t step = 0;
    std::mt19937_64 rng; // kept as the text its operator<< writes
    std::vector<std::string> epochLines;
    std::vector<std::string> epochDevices; // where each epoch ran: a run may go on on another device
    double seconds = 0;
};

// What the run trains on, by content rather than by path (a run goes on with the same images in another folder, on
// another machine): the count and a CRC-32 of the images' pixels and labels.
std::string trainingImagesFingerprint(const LabelledImages& images);

// Writes the state atomically (a kill leaves the previous epoch's state or this one, never half of one), with the
// settings the run was started with and the fingerprint of its training images.
Status saveTrainingState(const TrainOptions& o, const std::string& images, const TrainingState& state, const torch::nn::Module& model,
                         const torch::optim::Optimizer& optimiser);

// The state a run with the same settings and training images left, loaded into `model` and `optimiser` on `device`
// (which need not be the device it was saved from); nullopt when there is none. A state of other settings is an error
// naming the first that differs (`--fresh` discards it).
Result<std::optional<TrainingState>> loadTrainingState(const TrainOptions& o, const std::string& images, torch::nn::Module& model,
                                                       torch::optim::Optimizer& optimiser, const c10::Device& device);

} // namespace attnscope
