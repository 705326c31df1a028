// Precompiled header of the engine's torch translation units (and of the tests that use torch directly).
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/functional.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <map>
#include <memory>
#include <string>
#include <vector>
