#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope {

// A read-only float32 array in host memory, C order. Copies share the data (cheap); the data never changes
// after construction, so a Tensor may be read from any thread.
class Tensor {
public:
    Tensor();
    // Copies `data` (numel(shape) floats).
    static Tensor fromData(std::vector<int64_t> shape, const float* data);
    static Tensor fromVector(std::vector<int64_t> shape, std::vector<float> data);

    bool empty() const;
    const std::vector<int64_t>& shape() const;
    int64_t dim() const;
    int64_t size(int64_t axis) const; // negative axes count from the end
    int64_t numel() const;
    const float* data() const;

    struct Impl; // engine-internal: holds the backing at::Tensor
    explicit Tensor(std::shared_ptr<const Impl> impl);
    const std::shared_ptr<const Impl>& impl() const { return m_impl; }

private:
    std::shared_ptr<const Impl> m_impl;
};

} // namespace attnscope
