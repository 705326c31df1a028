#pragma once

// The attention analyses of a hierarchical model (Swin; docs/analyses.md, "Hierarchical models"): its maps are per
// window, [nW, H_l, n, n] at block l, over the stage's grid rolled by the block's shift and padded to whole windows.
// Analyses.cpp hands a hierarchical trace to these.

#include "attnscope/Analyses.h"

#include <vector>

namespace attnscope {

AttentionMap windowAttentionMap(const Trace& trace, int layer, int head, int query, bool renormalise);
// A hierarchical trace's rows of out.query: out.windows, out.windowMaps, and numHeads the most of any block.
void addWindowRows(const Trace& trace, QueryRows& out);
AttentionMap windowAttentionMap(const QueryRows& rows, int layer, int head, bool renormalise);
std::vector<AttentionSimilarityPoint> windowAttentionSimilarity(const Trace& trace);
// Offsets and distances in the stage's tokens (2^stage patches on a side; meanDistancePx in pixels), each key put back
// where the block's shift took it; keys in the padding are no tokens and left out, as a ViT's prefix tokens are.
std::vector<HeadCentre> windowHeadCentres(const Trace& trace, int patchSize, int radius);

} // namespace attnscope
