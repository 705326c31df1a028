#include "io/TensorImpl.h"

#include <ATen/ATen.h>

#include <cassert>
#include <cstring>

namespace attnscope {

Tensor::Tensor() = default;

Tensor::Tensor(std::shared_ptr<const Impl> impl)
    : m_impl(std::move(impl))
{
}

Tensor Tensor::fromData(std::vector<int64_t> shape, const float* data)
{
    auto t = at::empty(shape, at::kFloat);
    if (t.numel() > 0) // memcpy with a null pointer is undefined even for 0 bytes (an empty tensor has none)
        std::memcpy(t.data_ptr<float>(), data, sizeof(float) * t.numel());
    return wrap(t);
}

Tensor Tensor::fromVector(std::vector<int64_t> shape, std::vector<float> data)
{
    auto t = at::empty(shape, at::kFloat);
    assert(size_t(t.numel()) == data.size());
    if (!data.empty())
        std::memcpy(t.data_ptr<float>(), data.data(), sizeof(float) * data.size());
    return wrap(t);
}

bool Tensor::empty() const { return !m_impl; }

const std::vector<int64_t>& Tensor::shape() const
{
    static const std::vector<int64_t> none;
    return m_impl ? m_impl->shape : none;
}

int64_t Tensor::dim() const { return int64_t(shape().size()); }

int64_t Tensor::size(int64_t axis) const
{
    const auto& s = shape();
    if (axis < 0)
        axis += int64_t(s.size());
    assert(axis >= 0 && axis < int64_t(s.size()));
    return s[size_t(axis)];
}

int64_t Tensor::numel() const { return m_impl ? m_impl->tensor.numel() : 0; }

const float* Tensor::data() const { return m_impl ? m_impl->tensor.data_ptr<float>() : nullptr; }

Tensor wrap(const at::Tensor& t)
{
    if (!t.defined())
        return {};
    auto impl = std::make_shared<Tensor::Impl>();
    impl->tensor = t.detach().to(at::kCPU, at::kFloat).contiguous();
    impl->shape = impl->tensor.sizes().vec();
    return Tensor(std::move(impl));
}

at::Tensor unwrap(const Tensor& t) { return t.impl() ? t.impl()->tensor : at::Tensor(); }

} // namespace attnscope
