#pragma once

#include "RunSpec.h"

#include <attnscope/Analyses.h>

#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

namespace CLI {
class App;
}
namespace attnscope {
class Model;
}

// Each command registers its options on the parser and runs when chosen. run() returns the exit status:
// 0 success, 1 failure (after printing one line that says why), 130 interrupted.
struct InfoCommand {
    std::string model;
    std::string description;
    std::string inputSize; // --input-size H,W or N
    std::string device = "cpu";
    bool json = false;
    bool list = false;
    bool listFamilies = false;

    void addTo(CLI::App& app);
    int run() const;
};

struct AnalyzeCommand {
    std::string model;
    std::string description;
    std::string inputSize; // --input-size H,W or N
    std::string compare;
    std::vector<std::string> images;
    std::string out = "attnscope-out";
    std::string device = "auto";
    RunSpec spec; // the run's options (report/RunSpec.h), checked where Python's attnscope.analyze checks them
    std::string formats; // --formats; by default defaultFigureFormats(): "png", or "" in the headless build
    std::string shard;
    int threads = 0;

    void addTo(CLI::App& app);
    int run() const;
};

struct MergeCommand {
    std::vector<std::string> dirs;
    std::string out;
    std::string formats; // as AnalyzeCommand's

    void addTo(CLI::App& app);
    int run() const;
};

// The remote engine's server (docs/remote.md): JSON-RPC frames on stdin and stdout, for a window that reached this
// host through ssh. Nothing else is written to stdout while it serves; no socket is opened.
struct ServeCommand {
    bool stdio = false;
    std::string device = "auto";
    int maxTraces = 8;

    void addTo(CLI::App& app);
    int run() const;
};

// "attnscope-cli: <message>" on stderr; returns 1 (a failure).
int fail(const std::string& message);
// The same for an option the command line got wrong; returns 2 (bad usage, as a parse error).
int usage(const std::string& message);

// Exit statuses: 0 done, 1 failed, 2 bad usage, 3 done with some images skipped (unreadable: listed in the manifest),
// 130 interrupted (the results so far are written).
constexpr int kExitSkipped = 3;

// --input-size: "H,W" or "N" (N,N), pixel counts from 1 to 16384, as {height, width}; or the usage error to print.
attnscope::Result<std::pair<int, int>> parseInputSize(const std::string& text);
// The model `loaded` (as MODEL, for the message) at the --input-size `text` (already parsed to height x width): itself
// when `text` is empty. Returns 0 with `model` set, or the exit status after printing why: 2 (bad usage) for a size
// that is no multiple of the model's patch size, 1 when the engine refuses it otherwise.
int atInputSize(std::shared_ptr<const attnscope::Model>& model, const std::string& name, const std::string& text,
                int height, int width);

// Done when `device` is one --device takes (auto, cpu, cuda, cuda:<i>), otherwise the usage error to print.
attnscope::Status checkDeviceUsage(const std::string& device);

// The figure formats to draw of those --formats asked for: all of them, or none in a build that cannot draw
// figures (ATTNSCOPE_GUI=OFF); the run goes on with the data.
std::vector<std::string> formatsToDraw(const std::vector<std::string>& asked);
// After a run that succeeded without drawing the figures asked for: one line on stderr saying why (nothing when
// every format asked for was drawn).
void noteUndrawnFigures(const std::vector<std::string>& asked);
