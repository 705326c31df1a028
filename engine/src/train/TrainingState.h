#pragma once

#include "attnscope/Result.h"
#include "attnscope/Trainer.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <optional>
#include <string>
#include <vector>

namespace attnscope {

// Where a training run stands after an epoch: enough to go on from the next epoch and end with exactly the weights an
// uninterrupted run writes (the model's and the optimiser's tensors, the random generator that draws the order and
// the augmentations, the schedule's step) plus what the card reports (the epochs' lines, the seconds so far).
struct TrainingState {
    int epoch = 0; // epochs done
    int64_t step = 0;
    std::string rng; // std::mt19937_64's state, as its operator<< writes it
    std::vector<std::string> epochLines;
    double seconds = 0;
};

// Writes the state atomically (a kill leaves the previous epoch's state or this one, never half of one), with the
// settings the run was started with.
Status saveTrainingState(const TrainOptions& o, const TrainingState& state, const torch::nn::Module& model,
                         const torch::optim::Optimizer& optimiser);

// The state a run with the same settings left, loaded into `model` and `optimiser` on `device`; nullopt when there is
// none. A state of other settings is an error naming the first that differs (`--fresh` discards it).
Result<std::optional<TrainingState>> loadTrainingState(const TrainOptions& o, torch::nn::Module& model,
                                                       torch::optim::Optimizer& optimiser, const c10::Device& device);

} // namespace attnscope
