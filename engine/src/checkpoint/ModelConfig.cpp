// The names of ModelConfig.h's enumerations (config.json, info and the manifest spell them so).
#include "attnscope/ModelConfig.h"

#include <algorithm>

namespace attnscope {

const char* toString(Activation a)
{
    switch (a) {
    case Activation::Gelu: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::QuickGelu: return "quick_gelu";
    case Activation::Relu: return "relu";
    case Activation::Silu: return "silu";
    }
    return "?";
}
const char* toString(BlockNorm n) { return n == BlockNorm::Pre ? "pre" : "post"; }
const char* toString(Pooling p)
{
    switch (p) {
    case Pooling::Token: return "token";
    case Pooling::PatchMean: return "patch-mean";
    case Pooling::TokenAndPatchMean: return "token+patch-mean";
    case Pooling::Distilled: return "distilled (mean of cls and dist heads)";
    case Pooling::AllTokensMean: return "all-tokens-mean";
    case Pooling::AttentionPool: return "attention-pool";
    }
    return "?";
}
const char* toString(FinalNorm n)
{
    switch (n) {
    case FinalNorm::AllTokens: return "all tokens";
    case FinalNorm::Pooled: return "pooled";
    case FinalNorm::None: return "none";
    }
    return "?";
}
const char* toString(AttentionKind k)
{
    switch (k) {
    case AttentionKind::Standard: return "standard";
    case AttentionKind::Bilateral: return "bilateral";
    case AttentionKind::Quadratic: return "quadratic";
    }
    return "?";
}
const char* toString(BlockKind k) { return k == BlockKind::Standard ? "standard" : "attention-only"; }
const char* toString(PatchEmbedding p)
{
    switch (p) {
    case PatchEmbedding::Convolution: return "convolution";
    case PatchEmbedding::LinearChannelsLast: return "linear (p1 p2 c)";
    case PatchEmbedding::LinearChannelsFirst: return "linear (c p1 p2)";
    }
    return "?";
}
const char* toString(ResizeMode m)
{
    switch (m) {
    case ResizeMode::ShortestEdge: return "shortest-edge";
    case ResizeMode::Exact: return "exact";
    case ResizeMode::None: return "none";
    case ResizeMode::Cover: return "cover";
    }
    return "?";
}
const char* toString(Interpolation i)
{
    switch (i) {
    case Interpolation::Nearest: return "nearest";
    case Interpolation::Bilinear: return "bilinear";
    case Interpolation::Bicubic: return "bicubic";
    }
    return "?";
}

const char* toString(Hierarchy h) { return h == Hierarchy::Swin ? "swin" : h == Hierarchy::SwinV2 ? "swinv2" : "none"; }

std::vector<WindowBlock> windowBlocks(const ModelConfig& c)
{
    std::vector<WindowBlock> out;
    int gh = c.gridHeight(), gw = c.gridWidth();
    for (size_t s = 0; s < c.stages.size(); ++s) {
        const SwinStage& stage = c.stages[s];
        if (s > 0) { // patch merging pads an odd side by one
            gh = (gh + 1) / 2;
            gw = (gw + 1) / 2;
        }
        for (int b = 0; b < stage.depth; ++b) {
            WindowBlock w;
            w.stage = int(s);
            w.index = b;
            w.gridH = gh;
            w.gridW = gw;
            // timm's _calc_window_shift: a grid no larger than the window is one window, and is not shifted
            w.windowH = std::min(gh, stage.window);
            w.windowW = std::min(gw, stage.window);
            const int shift = b % 2 == 1 ? stage.window / 2 : 0;
            w.shiftH = gh <= w.windowH ? 0 : shift;
            w.shiftW = gw <= w.windowW ? 0 : shift;
            w.heads = stage.heads;
            w.width = stage.width;
            out.push_back(w);
        }
    }
    return out;
}

int ModelConfig::headsAt(int layer) const
{
    for (const SwinStage& s : stages) {
        if (layer <= s.depth)
            return s.heads;
        layer -= s.depth;
    }
    return numHeads;
}

int ModelConfig::maxHeads() const
{
    int most = numHeads;
    for (const SwinStage& s : stages)
        most = std::max(most, s.heads);
    return most;
}

WindowBlock::Place WindowBlock::place(int y, int x) const
{
    const int ry = ((y - shiftH) % gridH + gridH) % gridH, rx = ((x - shiftW) % gridW + gridW) % gridW;
    return { (ry / windowH) * windowsAcross() + rx / windowW, (ry % windowH) * windowW + rx % windowW };
}

int WindowBlock::tokenOf(int window, int key) const
{
    const int ry = (window / windowsAcross()) * windowH + key / windowW;
    const int rx = (window % windowsAcross()) * windowW + key % windowW;
    if (ry >= gridH || rx >= gridW)
        return -1;
    return ((ry + shiftH) % gridH) * gridW + (rx + shiftW) % gridW;
}

const char* ModelConfig::positionScheme() const
{
    if (hierarchy == Hierarchy::Swin)
        return "relative-bias";
    if (hierarchy == Hierarchy::SwinV2)
        return "continuous-relative-bias";
    if (rope != Rope::None)
        return posEmbed ? "learned+rotary" : "rotary";
    if (relativePositionBias)
        return posEmbed ? "learned+relative-bias" : "relative-bias";
    if (posFixedSinCos)
        return "sincos2d";
    if (posEmbed)
        return "learned";
    return attention == AttentionKind::Standard ? "none" : "attention";
}

} // namespace attnscope
