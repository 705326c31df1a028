#pragma once

// The query-key joint embedding of ANALYSES.md section 9 (AttentionViz, Yeh et al. 2023): for one layer and head, the
// query and key rows of every token of a set of images, normalised (keys translated onto the queries' mean, queries
// and keys scaled to equal mean norms, neither of which changes the attention) and projected jointly to a plane.

#include "attnscope/Model.h"
#include "attnscope/Result.h"
#include "attnscope/Tensor.h"

#include <string>
#include <vector>

namespace attnscope {

// The raw rows of one head: Q_l[h] and K_l[h] of each input, [N, d] each (before the 1/sqrt(d) of the logits).
struct QueryKeyRows {
    std::vector<Tensor> queries, keys;
};
// For inputs [C, H, W] of one size. Errors: a layer or head outside the model, an attention kind without queries and
// keys (quadratic: its logits come from positions alone).
Result<QueryKeyRows> queryKeyRows(const Model& model, const std::vector<Tensor>& inputs, int layer, int head);

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
    double scale = 1;            // a: q'' = a q, k'' = (k - mean k + mean q) / a
    std::vector<double> components; // the two principal directions, 2 x d row-major, each signed so that its
                                    // largest-magnitude loading is positive
    std::vector<QueryKeyPoint> points; // every image's queries, then every image's keys, tokens in order
    // The mean over queries (of every image) of the Spearman rank correlation, over the keys of the query's image,
    // between q . k and minus the distance of q'' and k'' in the plane: 1 when the plane keeps each query's order of
    // attention exactly.
    double agreement = 0;
};
// The joint PCA of the normalised rows of head `head` (0-based) of layer `layer` (1..L) over `inputs`, in float64.
Result<QueryKeyMap> queryKeyMap(const Model& model, const std::vector<Tensor>& inputs, int layer, int head);

} // namespace attnscope
