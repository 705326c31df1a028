#pragma once

// What a dataset run has done so far, kept in <out>/.attnscope-run/ so that the same command, rerun into the same
// folder after a kill or Ctrl-C, continues where it stopped (docs/reliability.md, Resume):
//   run.json         what the run is: its models, options and number of images (written once, atomically);
//   images.txt       the image list, one path a line (written once, atomically);
//   predictions.csv.journal, images.jsonl
//                    the rows of predictions.csv and the manifest's image entries, appended as the images go;
//   checkpoint.json  written atomically every few seconds after a whole batch: how many of the images are behind,
//                    every run's statistics (exact: 17 significant digits), the skipped files, and how many bytes of
//                    the two appended files they account for (a kill may leave more, which a resume cuts off).
// The statistics restored and the remaining batches formed as before, a resumed run's outputs equal an
// uninterrupted run's byte for byte. The folder goes once the manifest of a complete run is written.

#include <attnscope/Files.h>
#include <attnscope/Result.h>
#include <attnscope/Statistics.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

struct RunCheckpoint {
    size_t position = 0; // of the run's images (its shard), how many are behind it: analysed or skipped
    size_t total = 0;    // of the run's images
    int done = 0;        // of them analysed
    nlohmann::json skipped = nlohmann::json::array(); // the manifest's entries of those skipped
    struct Run {
        attnscope::StatsTable stats;
        int64_t images = 0;
    };
    std::vector<Run> runs; // in the report's order
};

class RunJournal {
public:
    // Opens the journal of `out`. `identity` (JSON object of "models", "options") says what the run is, `paths` its
    // images. With `resume`, an unfinished run of the same identity and images is picked up (checkpoint()); one of
    // another identity or other images is an Error saying what differs. Without `resume`, or when there is no
    // unfinished run, the journal starts empty.
    static attnscope::Result<std::unique_ptr<RunJournal>> open(const std::string& out, const nlohmann::json& identity,
                                                               const std::vector<std::string>& paths, bool resume);
    ~RunJournal();
    RunJournal(const RunJournal&) = delete;
    RunJournal& operator=(const RunJournal&) = delete;

    // The resumed run's state; position 0 and no runs for a fresh one.
    const RunCheckpoint& resumed() const { return m_resumed; }
    // The manifest entries of the images analysed before the resume, first `count` of them (to redraw their figures).
    std::vector<nlohmann::json> firstImages(size_t count) const;

    attnscope::Status appendPredictions(const std::string& rows);
    attnscope::Status appendImage(const nlohmann::json& entry);
    size_t imageCount() const { return m_imageCount; }
    // Makes everything appended so far part of the state a resume starts from.
    attnscope::Status checkpoint(const RunCheckpoint& state);

    // predictions.csv of the images so far (header and rows), written atomically to `path`.
    attnscope::Status writePredictions(const std::string& path, const std::string& header);
    // The image entries, as the lines of a JSON array indented by `indent`, into `writer`.
    attnscope::Status copyImagesInto(attnscope::TextFileWriter& writer, const std::string& indent);
    // The run is complete and its outputs written: the journal goes.
    void remove();

private:
    RunJournal(std::string dir);
    attnscope::Status start(const nlohmann::json& identity, const std::vector<std::string>& paths);
    attnscope::Status restore(const nlohmann::json& identity, const std::vector<std::string>& paths);
    std::string file(const char* name) const;

    std::string m_dir;
    std::FILE* m_predictions = nullptr;
    std::FILE* m_images = nullptr;
    size_t m_imageCount = 0;
    RunCheckpoint m_resumed;
};
