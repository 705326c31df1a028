// Cordonnier, Loukas, Jaggi (ICLR 2020), Lemma 1: a multi-head self-attention layer with K^2 heads whose
// quadratic positional attention is centred on the K^2 shifts of a K x K kernel computes that convolution.
#include "attnscope/Trainer.h"

#include "io/LoadError.h"
#include "io/TensorImpl.h"
#include "train/ModelWriter.h"
#include "vit/VisionTransformer.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

namespace attnscope {

Status buildConvolutionAsAttention(const Tensor& kernelIn, const Tensor& biasIn, int imageSize, double alpha,
                                         const std::string& outDir)
{
    const at::Tensor kernel = unwrap(kernelIn);
    if (!kernel.defined() || kernel.dim() != 4 || kernel.size(2) != kernel.size(3) || kernel.size(2) % 2 == 0)
        return Error { "the kernel must be [C_out, C_in, K, K] with K odd" };
    const int64_t cOut = kernel.size(0), cIn = kernel.size(1), k = kernel.size(2);
    const at::Tensor bias = biasIn.empty() ? at::zeros({ cOut }) : unwrap(biasIn);
    if (bias.dim() != 1 || bias.size(0) != cOut)
        return Error { "the bias must be [C_out]" };
    if (imageSize < k || alpha <= 0)
        return Error { "the image must be at least as large as the kernel, and alpha positive" };

    // Each head carries d = max(C_in, C_out) channels; the width is H * d with H = K^2 heads.
    const int64_t heads = k * k, d = std::max(cIn, cOut), width = heads * d;
    ModelConfig c;
    c.width = int(width);
    c.depth = 1;
    c.numHeads = int(heads);
    c.mlpHidden = int(width);
    c.patchSize = 1;
    c.imageHeight = c.imageWidth = imageSize;
    c.channels = int(cIn);
    c.numClasses = 0;
    c.classToken = false;
    c.posEmbed = false;
    c.patchBias = false;
    c.attention = AttentionKind::Quadratic;
    c.block = BlockKind::AttentionOnly;
    c.finalNorm = FinalNorm::None;
    c.pooling = Pooling::PatchMean;
    try {
        torch::NoGradGuard noGrad;
        VisionTransformer net(c);
        auto& attn = dynamic_cast<QuadraticAttention&>(*net->blocks->ptr<BlockImpl>(0)->attn);
        // Pixel c of each token goes to channel c of the stream (patch size 1, no bias).
        auto embed = at::zeros({ width, cIn, 1, 1 });
        for (int64_t ch = 0; ch < cIn; ++ch)
            embed[ch][ch][0][0] = 1.0;
        net->patch_embed->proj->weight.copy_(embed);
        auto value = at::zeros({ width, width });
        auto proj = at::zeros({ width, width });
        auto centre = at::zeros({ heads, 2 });
        for (int64_t i = 0; i < k; ++i) {
            for (int64_t j = 0; j < k; ++j) {
                const int64_t h = i * k + j;
                centre[h][0] = double(i - k / 2); // dy
                centre[h][1] = double(j - k / 2); // dx
                for (int64_t ch = 0; ch < cIn; ++ch)
                    value[h * d + ch][ch] = 1.0; // head h copies the input channels of the pixel it attends to
                // ... and the output projection weighs them with the kernel tap at that shift.
                proj.slice(0, 0, cOut).slice(1, h * d, h * d + cIn).copy_(kernel.select(3, j).select(2, i));
            }
        }
        attn.v->weight.copy_(value);
        attn.v->bias.zero_();
        attn.proj->weight.copy_(proj);
        attn.proj->bias.zero_();
        attn.proj->bias.slice(0, 0, cOut).copy_(bias);
        attn.centre.copy_(centre);
        attn.alpha.fill_(alpha);

        PreprocessConfig p;
        p.resize = ResizeMode::ShortestEdge;
        p.resizeShortest = imageSize;
        p.centerCrop = true;
        p.cropHeight = p.cropWidth = imageSize;
        p.interpolation = Interpolation::Bilinear;
        p.mean.assign(size_t(cIn), 0.0);
        p.std.assign(size_t(cIn), 1.0);
        nlohmann::json section = { { "variant", "conv-as-attention" }, { "attention", "quadratic" },
                                   { "kernel_size", k }, { "in_channels", cIn }, { "out_channels", cOut }, { "alpha", alpha },
                                   { "about", "Cordonnier et al. (ICLR 2020), Lemma 1: the first out_channels channels of U_1 "
                                              "are the convolution at interior pixels" } };
        writeModelFolder(outDir, *net, p, {}, section);
    } catch (const LoadError& e) {
        return Error { e.what() };
    } catch (const c10::Error& e) {
        return Error { std::string("building the model failed: ") + e.what_without_backtrace() };
    }
    return Done {};
}

} // namespace attnscope
