// libFuzzer harness of the torch.save() reader: any input must end in a result or in LoadError. Any other
// exception escapes and is reported as a crash, as are memory errors under the sanitizers.
//
// Inputs starting with "PK" go through the whole reader (zip + pickle). Others are fed straight to the
// restricted unpickler as data.pkl, with storages made up on demand: a mutated pickle inside a zip mostly fails
// the zip's CRC check, so without this path the fuzzer would rarely get past libzip.
//
// Build: make fuzz (the fuzz preset, clang-14; tests/fuzz/CMakeLists.txt), or the replay test of any build.
// Seeds: tests/fuzz/corpus/torch_checkpoint: tests/engine/data/pt/*.pt and their data.pkl records (make_seeds.py).
#include "checkpoint/RestrictedUnpickler.h"
#include "checkpoint/TorchCheckpoint.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>

namespace {

// Touches the last byte of every tensor so one aliasing freed memory would be caught by ASan.
void touch(const at::Tensor& tensor)
{
    if (tensor.defined() && tensor.numel() > 0)
        (void)static_cast<const volatile uint8_t*>(tensor.data_ptr())[tensor.nbytes() - 1];
}

void fuzzPickle(const uint8_t* data, size_t size)
{
    const auto loader = [](const std::string& key, at::ScalarType dtype, int64_t numel) {
        if (numel > (int64_t(1) << 16))
            throw attnscope::LoadError("fuzz-input: storage '" + key + "' too large for the fuzzer");
        return at::zeros({numel}, at::TensorOptions().dtype(dtype));
    };
    attnscope::detail::RestrictedUnpickler unpickler(data, size, "fuzz-input", loader);
    const attnscope::detail::PickleValue& result = unpickler.load();
    if (result.kind == attnscope::detail::PickleValue::Kind::Dict) {
        for (const auto& entry : result.entries)
            touch(entry.second->tensor);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
            for (const auto& entry : attnscope::readTorchCheckpointFromMemory(data, size, "fuzz-input"))
                touch(entry.second);
        } else {
            fuzzPickle(data, size);
        }
    } catch (const attnscope::LoadError&) {
    }
    return 0;
}
