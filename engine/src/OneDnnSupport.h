#pragma once

// What the engine's two oneDNN paths (PackedLinear, AttentionProducts) share. Include only under ATTNSCOPE_HAVE_DNNL.

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnscope::onednn {

// Whether oneDNN picked one of its generated kernels: its reference kernels are slower than LibTorch's own path.
inline bool isFastKernel(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).find("ref") == std::string::npos; }

// Runs a primitive made with scratchpad_mode::user on the calling thread, with that thread's scratch memory (one
// buffer per thread, grown to the largest need), and waits for it.
inline void execute(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd, const dnnl::engine& engine,
                    std::unordered_map<int, dnnl::memory> args)
{
    thread_local std::vector<uint8_t> scratch;
    const size_t need = pd.scratchpad_desc().get_size();
    if (scratch.size() < need)
        scratch.resize(need);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), engine, scratch.data()));
    dnnl::stream stream(engine);
    primitive.execute(stream, args);
    stream.wait();
}

} // namespace attnscope::onednn
