// The window's methods of the remote server (docs/remote.md): each one's wrong params are refused by name with the
// JSON-RPC code that says whose fault it is, an image that cannot be read is said without stopping a set, and the
// server's bounds (image-set runs kept) hold. In-process: Server::handle, as serve --stdio calls it.
#include "MethodsTestSupport.h"

using namespace methodstest;


TEST(RemoteMethods, WrongParamsAreRefusedByName)
{
    ServerOptions options;
    options.filesDir = (std::filesystem::temp_directory_path() / ("attnscope-methods-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json traced = call(server, "trace", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(traced.contains("result")) << traced.dump();
    const int64_t trace = traced["result"]["trace"];
    const json started = call(server, "set_start", { { "model", model }, { "options", json::object() } });
    ASSERT_TRUE(started.contains("result")) << started.dump();
    const int64_t run = started["result"]["run"];

    const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
        { "explain", { { "model", model }, { "image", kBoot }, { "target_class", "cat" } }, InvalidParams, "\"target_class\"" },
        { "explain", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "ablate", { { "model", model }, { "image", kBoot }, { "layer", 99 }, { "head", 0 } }, Failed, "99" },
        { "ablate", { { "model", model }, { "image", kBoot }, { "head", 0 } }, InvalidParams, "\"layer\" is missing" },
        { "query_key_map", { { "model", model }, { "images", json::array() }, { "layer", 1 }, { "head", 0 } }, InvalidParams, "\"images\"" },
        { "query_key_map", { { "model", model }, { "images", { "/nonexistent/a.png" } }, { "layer", 1 }, { "head", 0 } }, Failed,
          "none of the images could be read" },
        { "query_key_map", { { "model", model }, { "images", { kBoot } }, { "layer", 1 }, { "head", 0 }, { "method", "umap" } },
          InvalidParams, "umap" },
        { "set_start", { { "model", model }, { "options", { { "bogus", 1 } } } }, InvalidParams, "no analysis option \"bogus\"" },
        { "set_add", { { "run", 999 }, { "images", { kBoot } }, { "indices", { 0 } } }, InvalidParams, "no image-set run 999" },
        { "set_add", { { "run", run }, { "images", { kBoot, kBoot } }, { "indices", { 0 } } }, InvalidParams, "two lists" },
        { "set_add", { { "run", run }, { "images", { kBoot } }, { "indices", { -3 } } }, InvalidParams, "\"indices\"" },
        { "attention_rows", { { "trace", trace }, { "query", 0 }, { "norms", -1 } }, InvalidParams, "\"norms\"" },
        { "trace", { { "model", model }, { "image", kBoot }, { "analyse", { { "draws", 0 } } } }, InvalidParams, "\"draws\"" },
    };
    for (const auto& [method, params, code, said] : cases) {
        const json reply = call(server, method, params);
        ASSERT_TRUE(reply.contains("error")) << method << " " << params.dump() << " -> " << reply.dump();
        EXPECT_EQ(reply["error"]["code"], code) << method << " " << reply.dump();
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(said), std::string::npos) << method << " " << reply.dump();
    }

    // An image of a set that cannot be read is said and left out; the others are added.
    const json added = call(server, "set_add", { { "run", run }, { "images", { kBoot, "/nonexistent/b.png" } }, { "indices", { 0, 1 } } });
    ASSERT_TRUE(added.contains("result")) << added.dump();
    EXPECT_EQ(added["result"]["images"], 1);
    ASSERT_EQ(added["result"]["skipped"].size(), 1u);
    EXPECT_EQ(added["result"]["skipped"][0]["index"], 1);
    EXPECT_NE(added["result"]["skipped"][0]["message"].get<std::string>().find("/nonexistent/b.png"), std::string::npos);

    // At most kMaxSetRuns runs are kept; a released one is gone, and so are a released model's.
    for (size_t i = 1; i < Server::kMaxSetRuns; ++i)
        ASSERT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result"));
    const json tooMany = call(server, "set_start", { { "model", model }, { "options", json::object() } });
    ASSERT_TRUE(tooMany.contains("error"));
    EXPECT_NE(tooMany["error"]["message"].get<std::string>().find("already runs 8"), std::string::npos) << tooMany.dump();
    EXPECT_TRUE(call(server, "set_release", { { "run", run } }).contains("result"));
    EXPECT_TRUE(call(server, "set_summary", { { "run", run } }).contains("error"));
    EXPECT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result"));
    EXPECT_TRUE(call(server, "release_model", { { "model", model } }).contains("result"));
    EXPECT_TRUE(call(server, "set_summary", { { "run", run + 1 } }).contains("error"));
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteMethods, PythonsMethodsRefuseWrongParamsByName)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-py-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json forwarded = call(server, "forward", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(forwarded.contains("result")) << forwarded.dump().substr(0, 400);
    const int64_t trace = forwarded["result"]["trace"];
    const int depth = forwarded["result"]["depth"], heads = forwarded["result"]["heads"];
    const json prepared = call(server, "prepare", { { "model", model }, { "image", kBoot } });
    ASSERT_TRUE(prepared.contains("result")) << prepared.dump().substr(0, 400);
    auto input = decodeTensor(prepared["result"]["input"]);
    ASSERT_TRUE(input) << input.message();
    ASSERT_EQ(input->dim(), 3);
    const int64_t C = input->shape()[0], H = input->shape()[1], W = input->shape()[2];
    const auto zeros = [](std::vector<int64_t> shape) {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return encodeTensor(Tensor::fromVector(shape, std::vector<float>(size_t(n), 0.0f)));
    };
    const json image = { { "model", model }, { "image", kBoot } };
    const auto with = [](json params, const json& more) { return params.update(more), params; };
    const std::string lastLayer = std::to_string(depth), layers = "1 to " + lastLayer;

    const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
        // forward: an image or an input tensor, never both nor neither.
        { "forward", { { "model", model } }, InvalidParams, "give one of \"image\"" },
        { "forward", with(image, { { "input", zeros({ C, H, W }) } }), InvalidParams, "give one of \"image\"" },
        { "forward", { { "model", 999 }, { "image", kBoot } }, InvalidParams, "no model 999" },
        { "forward", { { "model", model }, { "input", "pixels" } }, InvalidParams, "\"input\"" },
        // The model's channels first, as Model.run takes it; a tensor of another rank or channels is said with its shape.
        { "forward", { { "model", model }, { "input", zeros({ C + 1, H, W }) } }, InvalidParams,
          "\"input\" is [" + std::to_string(C + 1) + ", " + std::to_string(H) },
        { "forward", { { "model", model }, { "input", zeros({ H, W }) } }, InvalidParams, "\"input\" is [" + std::to_string(H) },
        // Another size is the model at another input size: one that no patch fits is the run's failure, said.
        { "forward", { { "model", model }, { "input", zeros({ C, 1, 1 }) } }, Failed, "patch size" },
        { "forward", { { "model", model }, { "input", zeros({ C, 0, 0 }) } }, Failed, "0x0" },
        { "forward", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "forward", with(image, { { "neutreno_lambda", "high" } }), InvalidParams, "\"neutreno_lambda\"" },
        { "forward", with(image, { { "boost_t", true } }), InvalidParams, "\"boost_t\"" },
        { "forward", with(image, { { "precision", "fp8" } }), InvalidParams, "\"precision\"" },
        { "forward", with(image, { { "precision", 16 } }), InvalidParams, "\"precision\"" },
        { "forward", with(image, { { "ablate", { 1 } } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", { 1, -1 } } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", "1,0" } }), InvalidParams, "\"ablate\"" },
        { "forward", with(image, { { "ablate", { 1, 0 } }, { "ablation", "half" } }), InvalidParams, "\"ablation\"" },
        // A head outside the model is the engine's refusal, naming it (the client cannot know the model's shape first).
        { "forward", with(image, { { "ablate", { depth + 1, 0 } } }), Failed, "layer " + std::to_string(depth + 1) },
        { "forward", with(image, { { "ablate", { 1, heads } } }), Failed, "head " + std::to_string(heads) },
        // prepare: the image, and a perturbation by its spec with a seed from 0.
        { "prepare", { { "model", model } }, InvalidParams, "\"image\" is missing" },
        { "prepare", { { "model", "one" }, { "image", kBoot } }, InvalidParams, "\"model\" is \"one\"" },
        { "prepare", { { "model", model }, { "image", "/nonexistent/cat.png" } }, Failed, "/nonexistent/cat.png" },
        { "prepare", with(image, { { "perturbation", "bogus:x=1" } }), InvalidParams, "\"perturbation\"" },
        { "prepare", with(image, { { "perturbation", 8 } }), InvalidParams, "\"perturbation\" is 8" },
        { "prepare", with(image, { { "perturbation", "gaussian:sigma=8" }, { "seed", -1 } }), InvalidParams, "\"seed\" is -1" },
        { "prepare", with(image, { { "perturbation", "gaussian:sigma=8" }, { "seed", 1.5 } }), InvalidParams, "\"seed\" is 1.5" },
        // trace_tensor: a trace kept, one of the taps by name, a layer in its range, a head of the attention only.
        { "trace_tensor", { { "trace", 999 }, { "tensor", "input" } }, InvalidParams, "no trace 999" },
        { "trace_tensor", { { "tensor", "input" } }, InvalidParams, "\"trace\" is missing" },
        { "trace_tensor", { { "trace", trace } }, InvalidParams, "\"tensor\" is missing" },
        { "trace_tensor", { { "trace", trace }, { "tensor", 5 } }, InvalidParams, "\"tensor\" is 5" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "weights" } }, InvalidParams, "\"tensor\" is \"weights\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" } }, InvalidParams, "\"layer\" is missing" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 0 } }, InvalidParams, "attention of layer 0: the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attn_branch" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "residual" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are " + layers },
        { "trace_tensor", { { "trace", trace }, { "tensor", "block" }, { "layer", -1 } }, InvalidParams, "the trace's layers are 0 to " + lastLayer },
        { "trace_tensor", { { "trace", trace }, { "tensor", "block" }, { "layer", depth + 1 } }, InvalidParams, "the trace's layers are 0 to " + lastLayer },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", heads } }, InvalidParams,
          "\"head\" " + std::to_string(heads) + ": one of the attention's heads 0 to " + std::to_string(heads - 1) },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", -1 } }, InvalidParams, "\"head\" -1" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 }, { "head", "all" } }, InvalidParams, "\"head\" is \"all\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "residual" }, { "layer", 1 }, { "head", 0 } }, InvalidParams, "\"head\" 0" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", "mean" } }, InvalidParams, "\"rollout\" is \"mean\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "fusion", "median" } } } }, InvalidParams, "\"rollout\"" },
        { "trace_tensor", { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "discard", 1 } } } }, InvalidParams, "discard 1" },
    };
    for (const auto& [method, params, code, said] : cases)
        expectRefused(call(server, method, params), code, said, method + " " + params.dump().substr(0, 200));

    // The edges of each range are answered: block 0 (the embedding), the last layer's last head, the rollout.
    for (const json& params : { json { { "trace", trace }, { "tensor", "block" }, { "layer", 0 } },
                                json { { "trace", trace }, { "tensor", "attention" }, { "layer", depth }, { "head", heads - 1 } },
                                json { { "trace", trace }, { "tensor", "rollout" }, { "rollout", { { "fusion", "max" }, { "discard", 0.5 } } } } })
        EXPECT_TRUE(call(server, "trace_tensor", params).contains("result")) << params.dump();

    // An answer that a frame would not hold is refused saying so (and, for the attention, to ask a head at a time);
    // one head of it fits. The server bounded so that the whole attention of a layer does not fit and a head does.
    auto attention = decodeTensor(call(server, "trace_tensor", { { "trace", trace }, { "tensor", "attention" }, { "layer", 1 } })["result"]["tensor"]);
    ASSERT_TRUE(attention) << attention.message();
    const int64_t N = attention->shape()[1];
    ServerOptions bounded = options;
    bounded.limits.maxFrameBytes = (size_t(1) << 20) + size_t(N * N) * 4;
    Server small(bounded);
    const int64_t smallModel = call(small, "load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json smallTrace = call(small, "forward", { { "model", smallModel }, { "image", kBoot } });
    ASSERT_TRUE(smallTrace.contains("result")) << smallTrace.dump().substr(0, 400);
    expectRefused(call(small, "trace_tensor", { { "trace", smallTrace["result"]["trace"] }, { "tensor", "attention" }, { "layer", 1 } }), Failed,
                  "ask one head at a time", "a layer's attention past the frame");
    EXPECT_TRUE(call(small, "trace_tensor", { { "trace", smallTrace["result"]["trace"] }, { "tensor", "attention" }, { "layer", 1 }, { "head", 0 } })
                    .contains("result"));
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteMethods, ARestoreOfAnotherShapeIsRefusedByName)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-restore-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    const json stats = { { "similarity/layer1", { 2, 0.5, 0.25 } } };
    const std::vector<std::tuple<json, std::string>> cases = {
        { 3, "\"restore\": not {\"stats\": ..., \"images\": N}" },
        { { { "images", 2 } }, "\"restore\": the statistics are not an object" },
        { { { "stats", { 1, 2, 3 } }, { "images", 2 } }, "\"restore\": the statistics are not an object" },
        { { { "stats", { { "k", { 1, 2 } } } }, { "images", 2 } }, "\"restore\": the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", { -1, 0.0, 0.0 } } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", { 1, "mean", 0.0 } } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", { { "k", 1 } } }, { "images", 2 } }, "the statistic \"k\" is not [count, mean, m2]" },
        { { { "stats", stats } }, "\"restore\": images is null, not a count" },
        { { { "stats", stats }, { "images", -1 } }, "\"restore\": images is -1, not a count" },
        { { { "stats", stats }, { "images", "2" } }, "\"restore\": images is \"2\", not a count" },
        { { { "stats", stats }, { "images", 1.5 } }, "\"restore\": images is 1.5, not a count" },
    };
    for (const auto& [restore, said] : cases)
        expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() }, { "restore", restore } }), InvalidParams, said,
                      "restore " + restore.dump());
    // A refused start keeps no run: the host still has room for all of its runs.
    for (size_t i = 0; i < Server::kMaxSetRuns; ++i)
        ASSERT_TRUE(call(server, "set_start", { { "model", model }, { "options", json::object() } }).contains("result")) << i;
    // A restore of the right shape is taken, and is what the run's summary then says.
    ASSERT_TRUE(call(server, "release_model", { { "model", model } }).contains("result"));
    const int64_t again = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } })["result"]["model"];
    const json restored = call(server, "set_start", { { "model", again }, { "options", json::object() }, { "restore", { { "stats", stats }, { "images", 2 } } } });
    ASSERT_TRUE(restored.contains("result")) << restored.dump();
    const json summary = call(server, "set_summary", { { "run", restored["result"]["run"] } });
    ASSERT_TRUE(summary.contains("result")) << summary.dump();
    EXPECT_EQ(summary["result"]["images"], 2);
    EXPECT_EQ(summary["result"]["stats"].dump(), stats.dump());
    std::filesystem::remove_all(options.filesDir);
}

TEST(RemoteMethods, ARunRestoredFromItsFirstImagesEndsAsTheUncutRunToTheBit)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-resumed-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    // Analyses whose numbers hang on each image's index (its perturbations' seeds), so that a restore at the wrong
    // place could not pass.
    const json analyses = { { "similarity", true },    { "attention", true }, { "centres", true },
                            { "snr", true },           { "norms", true },     { "perturbations", { "gaussian:sigma=8" } },
                            { "draws", 2 },            { "seed", 7 } };
    const json whole = call(server, "set_start", { { "model", model }, { "options", analyses } });
    ASSERT_TRUE(whole.contains("result")) << whole.dump();
    const int64_t batch = whole["result"]["batch"];
    ASSERT_GE(batch, 1);
    // The samples, again as often as it takes for more than two of the host's batches (64 images on a GPU): each
    // place in the set is an image of its own to the run, whose noise is seeded by its index.
    std::vector<std::string> images;
    while (images.size() < size_t(2 * batch + 3) || images.size() < 6)
        for (const auto& image : samples())
            images.push_back(image);
    const auto feed = [&](const json& run, size_t from, size_t to) {
        json paths = json::array(), indices = json::array();
        for (size_t i = from; i < to; ++i) {
            paths.push_back(images[i]);
            indices.push_back(i);
        }
        const json added = call(server, "set_add", { { "run", run }, { "images", paths }, { "indices", indices } });
        EXPECT_TRUE(added.contains("result")) << added.dump().substr(0, 400);
        EXPECT_TRUE(added["result"]["skipped"].empty()) << added.dump().substr(0, 400);
    };
    const auto summary = [&](const json& run) {
        const json s = call(server, "set_summary", { { "run", run } });
        EXPECT_TRUE(s.contains("result")) << s.dump().substr(0, 400);
        return s["result"];
    };

    // The uncut run: every image.
    feed(whole["result"]["run"], 0, images.size());
    const json uncut = summary(whole["result"]["run"]);
    ASSERT_EQ(uncut["images"], images.size());

    // The run cut after its first K images (a whole number of the host's batches, where a window's step ends), its
    // statistics carried over the wire (MessagePack, as the window's journal has them) into a run on a new start.
    const size_t K = size_t(batch) * std::max<size_t>(1, (images.size() / 2) / size_t(batch));
    ASSERT_LT(K, images.size());
    const json first = call(server, "set_start", { { "model", model }, { "options", analyses } });
    ASSERT_TRUE(first.contains("result")) << first.dump();
    feed(first["result"]["run"], 0, K);
    const json cut = summary(first["result"]["run"]);
    ASSERT_EQ(cut["images"], K);
    auto carried = decodeMessage(encodeMessage(request(1, "set_start", { { "model", model }, { "options", analyses },
                                                                         { "restore", { { "stats", cut["stats"] }, { "images", cut["images"] } } } })));
    ASSERT_TRUE(carried) << carried.message();
    const json resumed = call(server, "set_start", (*carried)["params"]);
    ASSERT_TRUE(resumed.contains("result")) << resumed.dump();
    EXPECT_EQ(summary(resumed["result"]["run"])["images"], K);
    feed(resumed["result"]["run"], K, images.size());
    const json goneOn = summary(resumed["result"]["run"]);
    EXPECT_EQ(goneOn["images"], images.size());
    EXPECT_EQ(goneOn["radius"], uncut["radius"]);
    // The statistics, every key's count, mean and M2, to the bit (the JSON's numbers are written round-trip exact).
    EXPECT_EQ(goneOn["stats"].dump(), uncut["stats"].dump());
    EXPECT_GT(uncut["stats"].size(), 10u); // the analyses asked for made statistics to compare
    std::filesystem::remove_all(options.filesDir);
}

// A whole number past the range the handler keeps it in is refused, not taken as another one (it once wrapped).
TEST(RemoteMethods, NumbersPastTheirRangeAreRefusedNotWrapped)
{
    ServerOptions options;
    options.filesDir = (fs::temp_directory_path() / ("attnscope-methods-wrap-" + std::to_string(::getpid()))).string();
    Server server(options);
    const json loaded = call(server, "load_model", { { "path", "builtin:fmnist-vit-d4" } });
    ASSERT_TRUE(loaded.contains("result")) << loaded.dump();
    const int64_t model = loaded["result"]["model"];
    // forward's "ablate" [layer, head] is kept in ints: 2^32 + 1 was once run as layer 1.
    expectRefused(call(server, "forward", { { "model", model }, { "image", kBoot }, { "ablate", { 4294967297ll, 0 } } }), InvalidParams, "\"ablate\"",
                  "ablate [2^32 + 1, 0]");
    // set_start's "restore": a count or an image total of 2^63 or more was once read as -1 images.
    const uint64_t huge = 18446744073709551615ull;
    expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() },
                                              { "restore", { { "stats", json::object() }, { "images", huge } } } }),
                  InvalidParams, "images", "restore images 2^64 - 1");
    expectRefused(call(server, "set_start", { { "model", model }, { "options", json::object() },
                                              { "restore", { { "stats", { { "k", { huge, 0.5, 0.0 } } } }, { "images", 1 } } } }),
                  InvalidParams, "\"k\"", "restore count 2^64 - 1");
    std::filesystem::remove_all(options.filesDir);
}
