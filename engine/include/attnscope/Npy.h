#pragma once

#include "attnscope/Result.h"
#include "attnscope/Tensor.h"

#include <string>

namespace attnscope {

// NumPy .npy (format 1.0), little-endian float32, C order: the tensor exchange format (docs/design.md section 8).
// The file is written under a temporary name and renamed, so a reader never sees half a file.
Status writeNpy(const std::string& path, const Tensor& tensor);
// Reads float32 (<f4) files, and float64 (<f8) converted to float32. Refuses Fortran order and other dtypes.
Result<Tensor> readNpy(const std::string& path);

} // namespace attnscope
