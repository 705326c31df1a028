#pragma once

// The query-key joint embedding of docs/analyses.md section 9 (AttentionViz, Yeh et al. 2023): for one layer and head,
// the query and key rows of every token of a set of images, normalised (keys translated onto the queries' mean, queries
// and keys scaled to equal mean norms, neither of which changes the attention) and projected jointly to a plane, by
// principal components or by t-SNE.

#include "attnscope/Model.h"
#include "attnscope/Result.h"
#include "attnscope/Tensor.h"

#include <string>
#include <vector>

namespace attnscope {

// The raw rows of one head: Q_l[h] and K_l[h] of each input, [N, d] each (before the 1/sqrt(d) of the logits). A Swin
// block's are over its stage's grid (docs/analyses.md, "Hierarchical models"), Swin v2's normalised (its logits are
// cosines).
struct QueryKeyRows {
    std::vector<Tensor> queries, keys;
};
// For inputs [C, H, W] of one size. Errors: a layer or head outside the model, an attention kind without queries and
// keys (quadratic: its logits come from positions alone).
Result<QueryKeyRows> queryKeyRows(const Model& model, const std::vector<Tensor>& inputs, int layer, int head);

enum class QueryKeyMethod { Pca, Tsne };
const char* toString(QueryKeyMethod method); // pca | tsne
Result<QueryKeyMethod> parseQueryKeyMethod(const std::string& name);

struct QueryKeyOptions {
    QueryKeyMethod method = QueryKeyMethod::Pca;
    uint64_t seed = 0;     // t-SNE's initial embedding
    int iterations = 1000; // t-SNE's
};

struct QueryKeyPoint {
    int image = 0;     // position among the inputs
    int token = 0;     // 0.. N-1, prefix tokens first
    bool key = false;  // a key row (else a query row)
    int row = -1, col = -1; // the patch's place in the grid; -1 for prefix tokens
    double x = 0, y = 0;
};

struct QueryKeyMap {
    int layer = 0, head = 0;
    int images = 0, tokens = 0;
    QueryKeyMethod method = QueryKeyMethod::Pca;
    // The patch tokens' queries and keys are the rotated ones (a rotary position embedding turns them before their
    // products: DINOv3, EVA-02, the RoPE ViTs), as the model's logits are made of them; the figures say so.
    bool rotated = false;
    bool cosine = false;         // Swin v2: each head's unit q and k, as its logits are their cosines
    int stage = -1;              // a Swin block's stage (0-based); -1 for a ViT, whose tokens have no stages
    int gridHeight = 0, gridWidth = 0; // the grid of the points' rows and columns: the stage's for a Swin
    double scale = 1;            // a: q'' = a q, k'' = (k - mean k + mean q) / a
    std::vector<double> components; // PCA: the two principal directions, 2 x d row-major, each signed so that its
                                    // largest-magnitude loading is positive; t-SNE: none
    double tsneKl = 0;               // t-SNE: KL(P || Q) of the embedding
    std::vector<QueryKeyPoint> points; // every image's queries, then every image's keys, tokens in order
    // The mean over queries (of every image) of the Spearman rank correlation, over the keys of the query's image,
    // between q . k and minus the distance of q'' and k'' in the plane: 1 when the plane keeps each query's order of
    // attention exactly. A Swin query's over the keys of its window in the block, the ones its attention ranges over.
    double agreement = 0;
};
// The maps of one model's heads over a set of images, with what their figures name: the one-head figure draws
// maps[focus], the global view every map as a layers x heads grid.
struct QueryKeyFigure {
    std::string model;
    std::vector<std::string> images; // the images' names (file stems), by QueryKeyPoint::image
    std::vector<QueryKeyMap> maps;
    size_t focus = 0;
};

// The joint embedding of the normalised rows of head `head` (0-based) of layer `layer` (1..L) over `inputs`, in
// float64: PCA, or t-SNE (exact, perplexity 30, seeded; at most 10,000 points, 2 x images x tokens).
Result<QueryKeyMap> queryKeyMap(const Model& model, const std::vector<Tensor>& inputs, int layer, int head,
                                const QueryKeyOptions& options = {});
// Several heads from one batched forward of `inputs` (the global view: every head of every layer); in `heads`' order.
Result<std::vector<QueryKeyMap>> queryKeyMaps(const Model& model, const std::vector<Tensor>& inputs, const std::vector<HeadRef>& heads,
                                              const QueryKeyOptions& options = {});

} // namespace attnscope
