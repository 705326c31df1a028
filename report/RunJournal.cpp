#include "RunJournal.h"

#include <attnscope/AnalysisRun.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using attnscope::Error;

namespace {

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string shown(const nlohmann::json& v)
{
    return v.is_null() ? "none" : v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

// What differs between the identity of the unfinished run and this one, as "<what>: <then> then, <now> now; ...".
std::string differences(const nlohmann::json& then, const nlohmann::json& now)
{
    std::string out;
    const auto add = [&](const std::string& what, const nlohmann::json& a, const nlohmann::json& b) {
        out += (out.empty() ? "" : "; ") + what + " " + shown(a) + " then, " + shown(b) + " now";
    };
    const nlohmann::json& modelsThen = then["models"];
    const nlohmann::json& modelsNow = now["models"];
    for (size_t r = 0; r < std::min(modelsThen.size(), modelsNow.size()); ++r)
        for (const auto& [key, value] : modelsNow[r].items())
            if (modelsThen[r].value(key, nlohmann::json()) != value)
                add(r == 0 ? "--" + key : "run " + std::to_string(r + 1) + "'s " + key, modelsThen[r].value(key, nlohmann::json()), value);
    for (const auto& [key, value] : now["options"].items())
        if (then["options"].value(key, nlohmann::json()) != value)
            add("--" + key, then["options"].value(key, nlohmann::json()), value);
    if (out.empty() && modelsThen.size() != modelsNow.size())
        add("runs", modelsThen.size(), modelsNow.size());
    return out;
}

// "" when the image lists agree, else what differs.
std::string imageDifference(const std::string& listed, const std::vector<std::string>& paths)
{
    std::istringstream in(listed);
    std::string line;
    size_t i = 0;
    for (; std::getline(in, line); ++i) {
        if (i >= paths.size())
            return "images: more then than the " + std::to_string(paths.size()) + " now";
        if (line != paths[i])
            return "image " + std::to_string(i + 1) + ": " + line + " then, " + paths[i] + " now";
    }
    return i == paths.size() ? "" : "images: " + std::to_string(i) + " then, " + std::to_string(paths.size()) + " now";
}

attnscope::Status flushed(std::FILE* f, const std::string& path)
{
    if (!f || std::fflush(f) != 0)
        return Error { path + ": cannot write (" + std::strerror(errno) + ")" };
    return attnscope::Done {};
}

// The file at `path` cut to `bytes` and opened for appending after them.
attnscope::Result<std::FILE*> openAt(const std::string& path, long bytes)
{
    if (::truncate(path.c_str(), bytes) != 0 && !(bytes == 0 && errno == ENOENT))
        return Error { path + ": cannot cut back to the last checkpoint (" + std::strerror(errno) + ")" };
    std::FILE* f = std::fopen(path.c_str(), "a+");
    if (!f)
        return Error { path + ": cannot open (" + std::strerror(errno) + ")" };
    return f;
}

} // namespace

RunJournal::RunJournal(std::string dir)
    : m_dir(std::move(dir))
{
}

RunJournal::~RunJournal()
{
    if (m_predictions)
        std::fclose(m_predictions);
    if (m_images)
        std::fclose(m_images);
}

std::string RunJournal::file(const char* name) const { return (fs::path(m_dir) / name).string(); }

attnscope::Result<std::unique_ptr<RunJournal>> RunJournal::open(const std::string& out, const nlohmann::json& identity,
                                                                const std::vector<std::string>& paths, bool resume)
{
    std::unique_ptr<RunJournal> journal(new RunJournal((fs::path(out) / ".attnscope-run").string()));
    std::error_code ec;
    if (resume && fs::exists(journal->file("checkpoint.json"), ec)) {
        if (auto r = journal->restore(identity, paths); !r)
            return r.error();
        return journal;
    }
    if (auto s = journal->start(identity, paths); !s)
        return s.error();
    return journal;
}

attnscope::Status RunJournal::start(const nlohmann::json& identity, const std::vector<std::string>& paths)
{
    std::error_code ec;
    fs::remove_all(m_dir, ec);
    fs::create_directories(m_dir, ec);
    if (ec)
        return Error { m_dir + ": cannot create (" + ec.message() + ")" };
    std::string list;
    for (const auto& p : paths)
        list += p + "\n";
    if (auto w = attnscope::writeTextFile(file("images.txt"), list); !w)
        return w;
    if (auto w = attnscope::writeTextFile(file("run.json"), identity.dump(2) + "\n"); !w)
        return w;
    auto predictions = openAt(file("predictions.csv.journal"), 0);
    if (!predictions)
        return predictions.error();
    m_predictions = *predictions;
    auto images = openAt(file("images.jsonl"), 0);
    if (!images)
        return images.error();
    m_images = *images;
    return attnscope::Done {};
}

attnscope::Status RunJournal::restore(const nlohmann::json& identity, const std::vector<std::string>& paths)
{
    const std::string out = fs::path(m_dir).parent_path().string();
    nlohmann::json then, state;
    try {
        then = nlohmann::json::parse(readAll(file("run.json")));
        state = nlohmann::json::parse(readAll(file("checkpoint.json")));
    } catch (const nlohmann::json::exception& e) {
        return Error { m_dir + ": the unfinished run's journal does not parse (" + e.what() + "); add --fresh to start again" };
    }
    const std::string progress = std::to_string(state.value("position", 0)) + " of " + std::to_string(state.value("total", 0));
    std::string why = differences(then, identity);
    if (why.empty())
        why = imageDifference(readAll(file("images.txt")), paths);
    if (!why.empty())
        return Error { out + ": holds an unfinished run (" + progress + " images behind it) that differs from this one (" + why
                       + "); rerun it as it was to resume it, or add --fresh to start again" };
    try {
        m_resumed.position = state.at("position").get<size_t>();
        m_resumed.done = state.at("done").get<int>();
        m_resumed.skipped = state.at("skipped");
        m_imageCount = state.at("image_count").get<size_t>();
        for (const auto& run : state.at("runs")) {
            auto stats = attnscope::statisticsFromJson(run.at("statistics").dump());
            if (!stats)
                return Error { file("checkpoint.json") + ": " + stats.message() };
            m_resumed.runs.push_back({ std::move(*stats), run.at("images").get<int64_t>() });
        }
        auto predictions = openAt(file("predictions.csv.journal"), state.at("predictions_bytes").get<long>());
        if (!predictions)
            return predictions.error();
        m_predictions = *predictions;
        auto images = openAt(file("images.jsonl"), state.at("images_bytes").get<long>());
        if (!images)
            return images.error();
        m_images = *images;
    } catch (const nlohmann::json::exception& e) {
        return Error { file("checkpoint.json") + ": incomplete (" + e.what() + "); add --fresh to start again" };
    }
    return attnscope::Done {};
}

std::vector<nlohmann::json> RunJournal::firstImages(size_t count) const
{
    std::vector<nlohmann::json> out;
    std::ifstream in(file("images.jsonl"));
    for (std::string line; out.size() < std::min(count, m_imageCount) && std::getline(in, line);)
        out.push_back(nlohmann::json::parse(line, nullptr, false));
    return out;
}

attnscope::Status RunJournal::appendPredictions(const std::string& rows)
{
    if (std::fwrite(rows.data(), 1, rows.size(), m_predictions) != rows.size())
        return Error { file("predictions.csv.journal") + ": cannot write (" + std::strerror(errno) + ")" };
    return attnscope::Done {};
}

attnscope::Status RunJournal::appendImage(const nlohmann::json& entry)
{
    const std::string line = entry.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), m_images) != line.size())
        return Error { file("images.jsonl") + ": cannot write (" + std::strerror(errno) + ")" };
    ++m_imageCount;
    return attnscope::Done {};
}

attnscope::Status RunJournal::checkpoint(const RunCheckpoint& state)
{
    if (auto f = flushed(m_predictions, file("predictions.csv.journal")); !f)
        return f;
    if (auto f = flushed(m_images, file("images.jsonl")); !f)
        return f;
    nlohmann::json head = { { "position", state.position }, { "total", state.total }, { "done", state.done }, { "skipped", state.skipped },
                            { "image_count", m_imageCount }, { "predictions_bytes", std::ftell(m_predictions) },
                            { "images_bytes", std::ftell(m_images) } };
    // The statistics go in as statisticsToJson writes them (17 significant digits), not through a JSON value.
    std::string text = head.dump();
    text.pop_back();
    text += ",\"runs\":[";
    for (size_t r = 0; r < state.runs.size(); ++r)
        text += (r ? ",{\"images\":" : "{\"images\":") + std::to_string(state.runs[r].images)
            + ",\"statistics\":" + attnscope::statisticsToJson(state.runs[r].stats) + "}";
    return attnscope::writeTextFile(file("checkpoint.json"), text + "]}\n");
}

attnscope::Status RunJournal::writePredictions(const std::string& path, const std::string& header)
{
    if (auto f = flushed(m_predictions, file("predictions.csv.journal")); !f)
        return f;
    auto writer = attnscope::TextFileWriter::open(path);
    if (!writer)
        return writer.error();
    if (auto w = (*writer)->append(header); !w)
        return w;
    std::ifstream in(file("predictions.csv.journal"), std::ios::binary);
    std::string chunk(1 << 20, '\0');
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0)
        if (auto w = (*writer)->append(chunk.substr(0, size_t(in.gcount()))); !w)
            return w;
    return (*writer)->commit();
}

attnscope::Status RunJournal::copyImagesInto(attnscope::TextFileWriter& writer, const std::string& indent)
{
    if (auto f = flushed(m_images, file("images.jsonl")); !f)
        return f;
    std::ifstream in(file("images.jsonl"));
    std::string chunk = "[";
    bool first = true;
    size_t copied = 0;
    for (std::string line; copied < m_imageCount && std::getline(in, line); ++copied) {
        chunk += (first ? "\n" : ",\n") + indent + "  " + line;
        first = false;
        if (chunk.size() > (1u << 20)) {
            if (auto w = writer.append(chunk); !w)
                return w;
            chunk.clear();
        }
    }
    return writer.append(chunk + (first ? "]" : "\n" + indent + "]"));
}

void RunJournal::remove()
{
    std::error_code ec;
    fs::remove_all(m_dir, ec);
}
