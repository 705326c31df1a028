// Export all's methods of the remote server (docs/remote.md, app/cli/ServeReports.h): report_*, which attnscope-cli
// adds, through the built attnscope-cli reached by the ssh stand-in: wrong params refused by name, a tiny report end to
// end, only the report's own files sent, and the models kept to the run while it goes.
#include "MethodsTestSupport.h"

using namespace methodstest;

TEST(RemoteReports, WrongParamsAreRefusedByName)
{
    const HostCache cache("reports-params");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const std::string token = "00112233445566778899aabbccddeeff";
    const json good = { { "model", model },         { "model_name", "fmnist-vit-d4" },     { "images", { kBoot } },
                        { "spec", json::object() }, { "formats", "none" },                 { "out", { { "staging", token } } } };
    // `good` with one key changed, or left out (null).
    const auto but = [&](const std::string& key, const json& value) {
        json params = good;
        if (value.is_null())
            params.erase(key);
        else
            params[key] = value;
        return params;
    };
    const std::string zeros(64, '0');
    const std::vector<std::tuple<json, int, std::string>> cases = {
        { but("model", nullptr), InvalidParams, "\"model\" is missing" },
        { but("model", 999), InvalidParams, "no model 999" },
        { but("model_name", nullptr), InvalidParams, "\"model_name\" is missing" },
        { but("model_name", 3), InvalidParams, "\"model_name\" is 3" },
        { but("compare", 999), InvalidParams, "no model 999" },
        { but("compare", model), InvalidParams, "\"compare_name\" is missing" },
        { but("images", json::array()), InvalidParams, "\"images\" is not a list of images" },
        { but("images", kBoot), InvalidParams, "\"images\" is not a list of images" },
        { but("images", { kBoot, 5 }), InvalidParams, "\"images[1]\" is 5" },
        { but("images", { { { "sha256", zeros } } }), InvalidParams, "no file with sha256 " + zeros },
        { but("images", { { { "sha256", "../../etc/passwd" } } }), InvalidParams, "not a sha256" },
        { but("names", { "a.png", "b.png" }), InvalidParams, "\"names\" is not a name for each image" },
        { but("names", { "" }), InvalidParams, "\"names\" is not a name for each image" },
        { but("names", "a.png"), InvalidParams, "\"names\" is not a name for each image" },
        // The run's options by Python's names (attnscope.analyze's keywords): an unknown one, a wrong type or value,
        // each said by that name.
        { but("spec", nullptr), InvalidParams, "\"spec\": the run's options are null, not an object" },
        { but("spec", { { "bogus", 1 } }), InvalidParams, "\"spec\": no run option \"bogus\"" },
        { but("spec", { { "grid-images", 1 } }), InvalidParams, "no run option \"grid-images\"" },
        { but("spec", { { "draws", "many" } }), InvalidParams, "the run option \"draws\" is \"many\", not an integer" },
        { but("spec", { { "seed", -1 } }), InvalidParams, "the run option \"seed\" is -1" },
        { but("spec", { { "draws", 0 } }), InvalidParams, "draws 0: expected 1 or more" },
        { but("spec", { { "grid_images", -1 } }), InvalidParams, "grid_images -1" },
        { but("spec", { { "analyses", "similarity,magic" } }), InvalidParams, "magic" },
        { but("spec", { { "qk_layer", 2 } }), InvalidParams, "qk_layer" },
        { but("spec", { { "checkpoint_seconds", -1 } }), InvalidParams, "checkpoint_seconds -1" },
        { but("formats", "gif"), InvalidParams, "unknown format \"gif\"" },
        { but("formats", 5), InvalidParams, "\"formats\" is 5" },
        // The folder: one the user named on the host, or a staging folder named by a token of 16 to 64 lowercase hex
        // digits (never a path: it is a name under the host's cache).
        { but("out", nullptr), InvalidParams, "\"out\" is null" },
        { but("out", "/tmp/x"), InvalidParams, "\"out\"" },
        { but("out", { { "folder", "" } }), InvalidParams, "\"out\"" },
        { but("out", { { "folder", 5 } }), InvalidParams, "\"out\"" },
        { but("out", { { "folder", "/tmp/x" }, { "staging", token } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789ABCDEF" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789abcde" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", std::string(65, 'a') } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "../../../../../tmp/attnscope-x" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", "0123456789abcdef/../../x" } }), InvalidParams, "\"out\"" },
        { but("out", { { "staging", 1234567890123456789 } }), InvalidParams, "\"out\"" },
        { but("out", { { "elsewhere", "/tmp/x" } }), InvalidParams, "\"out\"" },
    };
    for (const auto& [params, code, said] : cases) {
        const json reply = host.call("report_start", params);
        expectRefused(reply, code, said, "report_start " + params.dump().substr(0, 300));
        if (reply.contains("result")) // started when it should not have: ended, so that the next cases are theirs
            host.call("report_release", { { "report", reply["result"]["report"] } });
    }
    // A refused start made no folder (the staging root may be made; nothing under it).
    const fs::path root = cache.path / "attnscope" / "remote-exports";
    EXPECT_TRUE(!fs::exists(root) || fs::is_empty(root)) << root;
    EXPECT_FALSE(fs::exists("/tmp/attnscope-x"));

    // The other methods name a report by its id: one never started (or released) is said.
    const std::vector<std::tuple<std::string, json, int, std::string>> others = {
        { "report_status", json::object(), InvalidParams, "\"report\" is missing" },
        { "report_status", { { "report", "1" } }, InvalidParams, "\"report\" is \"1\", not a whole number" },
        { "report_status", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_cancel", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_cancel", { { "report", 1.5 } }, InvalidParams, "\"report\" is 1.5" },
        { "report_file", { { "report", 1 }, { "path", "stats.json" }, { "offset", 0 } }, InvalidParams, "no report 1" },
        { "report_release", { { "report", 1 } }, InvalidParams, "no report 1" },
        { "report_release", json::object(), InvalidParams, "\"report\" is missing" },
    };
    for (const auto& [method, params, code, said] : others)
        expectRefused(host.call(method, params), code, said, method + " " + params.dump());
    EXPECT_EQ(host.close(), 0);
}

TEST(RemoteReports, ATinyReportIsWrittenFetchedInChunksAndReleased)
{
    const HostCache cache("reports-tiny");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const std::vector<std::string> all = samples();
    ASSERT_GE(all.size(), 3u);
    const std::vector<std::string> images(all.begin(), all.begin() + 3);
    // The names the folder records are the client's paths, not the host's.
    json names = json::array();
    for (const auto& image : images)
        names.push_back("/laptop/shots/" + fs::path(image).filename().string());
    const std::string token = "0123456789abcdef0123456789abcdef";
    const json started = host.ok("report_start", { { "model", model },
                                                   { "model_name", "fmnist-vit-d4" },
                                                   { "images", images },
                                                   { "names", names },
                                                   { "spec", { { "grid_images", 0 } } },
                                                   { "formats", "none" },
                                                   { "out", { { "staging", token } } } });
    ASSERT_TRUE(started.contains("report")) << started.dump();
    const json report = started["report"];
    const fs::path staging = cache.staging(token);
    EXPECT_EQ(started["out"], staging.string());
    EXPECT_EQ(started["total"], 3);

    const json ended = waitForReport(host, report);
    ASSERT_TRUE(ended.contains("result")) << ended.dump().substr(0, 400);
    const json& status = ended["result"];
    ASSERT_FALSE(status["running"].get<bool>()) << status.dump();
    EXPECT_EQ(status["done"], 3);
    EXPECT_EQ(status["outcome"]["complete"], true) << status.dump();
    EXPECT_EQ(status["outcome"]["done"], 3);
    EXPECT_EQ(status["outcome"]["total"], 3);
    EXPECT_EQ(status["outcome"]["skipped"], 0);
    EXPECT_EQ(status["outcome"]["resumed_at"], 0);
    // The folder's files, each with its size on the host; none of them the run's journal.
    std::map<std::string, uint64_t> files;
    for (const json& f : status["files"])
        files[f["path"].get<std::string>()] = f["size"].get<uint64_t>();
    for (const char* needed : { "manifest.json", "predictions.csv", "stats.json" })
        EXPECT_TRUE(files.count(needed)) << needed << " not in " << status["files"].dump();
    for (const auto& [path, size] : files) {
        EXPECT_EQ(path.find(".attnscope-run"), std::string::npos) << path;
        EXPECT_EQ(fs::file_size(staging / path), size) << path;
    }
    EXPECT_NE(readFile(staging / "predictions.csv").find("/laptop/shots/" + fs::path(images[0]).filename().string()), std::string::npos)
        << readFile(staging / "predictions.csv");

    // Every file fetched as the window copies it home, a chunk from where the last ended, equals the host's bytes; a
    // fetch from the middle is the file's tail, and one from its end is empty.
    for (const auto& [path, size] : files) {
        std::string fetched;
        for (uint64_t offset = 0; fetched.size() < size || size == 0;) {
            const json chunk = host.ok("report_file", { { "report", report }, { "path", path }, { "offset", offset } });
            ASSERT_EQ(chunk["size"], size) << path;
            auto bytes = decodeBytes(chunk["data"]);
            ASSERT_TRUE(bytes) << bytes.message();
            ASSERT_TRUE(!bytes->empty() || size == 0) << path << " at " << offset;
            fetched.append(bytes->begin(), bytes->end());
            offset += bytes->size();
            if (size == 0)
                break;
        }
        EXPECT_EQ(fetched, readFile(staging / path)) << path;
    }
    const std::string stats = readFile(staging / "stats.json");
    ASSERT_GT(stats.size(), 2u);
    const json tail = host.ok("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", stats.size() / 2 } });
    auto tailBytes = decodeBytes(tail["data"]);
    ASSERT_TRUE(tailBytes);
    EXPECT_EQ(std::string(tailBytes->begin(), tailBytes->end()), stats.substr(stats.size() / 2));
    const json end = host.ok("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", stats.size() } });
    EXPECT_TRUE(decodeBytes(end["data"]) && decodeBytes(end["data"])->empty()) << end.dump();

    // Only a file of the report's own list is sent: no path above the folder, no absolute path (even to the report's
    // own file), no other spelling of a listed one, and no file put in the folder after the list was made; so no
    // other file of the host can be read. Offsets outside the file are refused too.
    std::ofstream(staging / "later.txt") << "written after the run ended";
    std::ofstream(cache.path / "secret.txt") << "not the report's";
    const std::vector<std::tuple<json, std::string>> refused = {
        { "../x", "\"../x\" is not a file of report" },
        { "../secret.txt", "is not a file of report" },
        { "../../secret.txt", "is not a file of report" },
        { "../../../secret.txt", "is not a file of report" },
        { "../" + token + "/stats.json", "is not a file of report" },
        { (staging / "stats.json").string(), "is not a file of report" },
        { (cache.path / "secret.txt").string(), "is not a file of report" },
        { "/etc/passwd", "\"/etc/passwd\" is not a file of report" },
        { "./stats.json", "is not a file of report" },
        { "stats.json/", "is not a file of report" },
        { "later.txt", "\"later.txt\" is not a file of report" },
        { ".attnscope-run", "is not a file of report" },
        { "", "is not a file of report" },
        { 5, "\"path\" is 5, not a string" },
        { nullptr, "\"path\" is missing" },
    };
    for (const auto& [path, said] : refused) {
        json params = { { "report", report }, { "offset", 0 } };
        if (!path.is_null())
            params["path"] = path;
        const json reply = host.call("report_file", params);
        expectRefused(reply, InvalidParams, said, "report_file " + params.dump());
        EXPECT_FALSE(reply.contains("result") && reply["result"].contains("data")) << reply.dump().substr(0, 200);
    }
    for (const json& offset : { json(stats.size() + 1), json(-1), json("0"), json(1.5), json() }) {
        json params = { { "report", report }, { "path", "stats.json" } };
        if (!offset.is_null())
            params["offset"] = offset;
        expectRefused(host.call("report_file", params), InvalidParams, "\"offset\"", "report_file " + params.dump());
    }

    // Released: the staging folder is gone, and so is the report; the models are the link's again.
    EXPECT_TRUE(host.ok("report_release", { { "report", report } }).is_object());
    EXPECT_FALSE(fs::exists(staging)) << staging;
    EXPECT_TRUE(fs::exists(cache.path / "secret.txt"));
    expectRefused(host.call("report_status", { { "report", report } }), InvalidParams, "no report " + report.dump(), "a released report");
    expectRefused(host.call("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", 0 } }), InvalidParams,
                  "no report " + report.dump(), "a released report's file");
    EXPECT_TRUE(host.ok("trace", { { "model", model }, { "image", kBoot }, { "keep", false } }).is_object());
    EXPECT_EQ(host.close(), 0);
}

TEST(RemoteReports, WhileOneRunsTheModelsAreItsAloneAndTheLinkStillAnswers)
{
    const HostCache cache("reports-gate");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    // A run long enough to be going through the checks below (it is cancelled after them): many images, each with
    // every head ablated and many draws of noise.
    json images = json::array();
    const std::vector<std::string> all = samples();
    for (int i = 0; i < 100; ++i)
        for (const auto& image : all)
            images.push_back(image);
    const fs::path folder = cache.path / "host-folder";
    const json params = { { "model", model },
                          { "model_name", "fmnist-vit-d4" },
                          { "images", images },
                          { "spec", { { "analyses", "similarity,attention,centres,snr,ablation" }, { "draws", 16 }, { "grid_images", 0 } } },
                          { "formats", "none" },
                          { "out", { { "folder", folder.string() } } } };
    const json started = host.ok("report_start", params);
    ASSERT_TRUE(started.contains("report")) << started.dump();
    const json report = started["report"];

    // The run's models are in use on its thread: every other method that uses a model is refused, saying why.
    for (const auto& [method, p] : std::vector<std::pair<std::string, json>> {
             { "trace", { { "model", model }, { "image", kBoot } } },
             { "forward", { { "model", model }, { "image", kBoot } } },
             { "load_model", { { "path", "builtin:fmnist-vit-d4" } } },
             { "set_start", { { "model", model }, { "options", json::object() } } },
             { "release_model", { { "model", model } } } })
        expectRefused(host.call(method, p), Failed, "the host is running Export all", method);
    // A second Export all is refused while the first goes, naming it.
    expectRefused(host.call("report_start", params), Failed, "an Export all is running already (report " + report.dump() + ")", "a second report_start");
    // Its files are not listed until it has ended.
    expectRefused(host.call("report_file", { { "report", report }, { "path", "stats.json" }, { "offset", 0 } }), Failed, "has not ended",
                  "report_file while running");
    // The link still answers what uses no model: hello, has_file, and the report's own status.
    const json hello = host.ok("hello", { { "protocol", kProtocolVersion }, { "client", "test" } });
    EXPECT_EQ(hello["protocol"], kProtocolVersion);
    const json has = host.ok("has_file", { { "sha256", std::string(64, '0') } });
    EXPECT_EQ(has["present"], false);
    const json going = host.ok("report_status", { { "report", report } });
    EXPECT_EQ(going["running"], true) << going.dump();
    EXPECT_EQ(going["total"], images.size());

    // Cancelled, it ends as a partial result; then the models are the link's again, and the folder the user named
    // stays after the release.
    EXPECT_TRUE(host.ok("report_cancel", { { "report", report } }).is_object());
    const json ended = waitForReport(host, report);
    ASSERT_TRUE(ended.contains("result")) << ended.dump().substr(0, 400);
    EXPECT_EQ(ended["result"]["running"], false);
    EXPECT_EQ(ended["result"]["outcome"]["complete"], false) << ended.dump().substr(0, 400);
    EXPECT_LT(ended["result"]["outcome"]["done"].get<int>(), int(images.size()));
    EXPECT_TRUE(host.ok("trace", { { "model", model }, { "image", kBoot }, { "keep", false } }).is_object());
    EXPECT_TRUE(host.ok("report_release", { { "report", report } }).is_object());
    EXPECT_TRUE(fs::exists(folder / "manifest.json")) << folder;
    EXPECT_EQ(host.close(), 0);
}

// A wrong "compare" is said by its own name (Server::model once named every model param "model").
TEST(RemoteReports, AWrongCompareIsSaidByItsName)
{
    const HostCache cache("reports-compare");
    Host host(cache.path);
    ASSERT_TRUE(host.started());
    const json model = host.ok("load_model", { { "path", "builtin:fmnist-vit-d4" } })["model"];
    ASSERT_TRUE(model.is_number_integer());
    const json reply = host.call("report_start", { { "model", model },
                                                   { "compare", "two" },
                                                   { "compare_name", "b" },
                                                   { "model_name", "a" },
                                                   { "images", { kBoot } },
                                                   { "spec", json::object() },
                                                   { "formats", "none" },
                                                   { "out", { { "staging", "00112233445566778899aabbccddeeff" } } } });
    expectRefused(reply, InvalidParams, "\"compare\" is \"two\"", "compare \"two\"");
    // "resume" other than true or false is refused: taken as false it would discard the folder's journal.
    expectRefused(host.call("report_start", { { "model", model }, { "model_name", "a" }, { "images", { kBoot } }, { "spec", json::object() },
                                              { "formats", "none" }, { "resume", "yes" },
                                              { "out", { { "staging", "00112233445566778899aabbccddeeff" } } } }),
                  InvalidParams, "\"resume\"", "resume \"yes\"");
    EXPECT_EQ(host.close(), 0);
}
