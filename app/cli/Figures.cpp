#include "Figures.h"

#include <attnscope/Files.h>

#include <AttentionDistancePlot.h>
#include <AttentionGridFigure.h>
#include <FigureExport.h>
#include <FigureSizes.h>
#include <HeadCentresPlot.h>
#include <LogitDecompositionPlot.h>
#include <PlotStyle.h>
#include <SnrPlot.h>
#include <TokenSimilarityPlot.h>

#include <QApplication>
#include <qcustomplot.h>

#include <cmath>
#include <filesystem>
#include <memory>

namespace fs = std::filesystem;
using namespace attnscope;

namespace {

// QCustomPlot needs a QApplication; the CLI draws offscreen whatever the environment says.
void ensureApplication()
{
    if (QCoreApplication::instance())
        return;
    qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char name[] = "attnscope-cli";
    static char* argv[] = { name, nullptr };
    static QApplication app(argc, argv);
}

std::string quoted(const std::string& s)
{
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

} // namespace

Result<std::vector<std::string>> parseFigureFormats(const std::string& list)
{
    std::vector<std::string> out;
    std::string item;
    for (size_t i = 0; i <= list.size(); ++i) {
        if (i == list.size() || list[i] == ',') {
            if (item != "png" && item != "svg" && item != "pdf" && !item.empty())
                return Error { "--formats: unknown format \"" + item + "\" (png, svg, pdf)" };
            if (!item.empty())
                out.push_back(item);
            item.clear();
        } else {
            item += list[i];
        }
    }
    return out;
}

AttentionGrid attentionGridOf(const Trace& trace, const Image& shown, const std::string& model, const std::string& image)
{
    AttentionGrid g;
    g.model = model;
    g.image = image;
    g.shown = shown;
    g.gridHeight = trace.gridHeight;
    g.gridWidth = trace.gridWidth;
    g.numPrefixTokens = trace.numPrefixTokens;
    g.query = trace.numPrefixTokens > 0 ? 0 : (trace.gridHeight / 2) * trace.gridWidth + trace.gridWidth / 2;
    for (int l = 1; l <= trace.depth; ++l) {
        std::vector<AttentionMap> row;
        for (int h = 0; h < trace.numHeads; ++h)
            row.push_back(attentionMap(trace, l, h, g.query));
        row.push_back(attentionMap(trace, l, -1, g.query));
        g.maps.push_back(std::move(row));
    }
    g.rollout = rolloutMap(trace, attentionRollout(trace), g.query);
    return g;
}

std::string writeFigures(const std::string& outDir, const std::vector<RunOutput>& runs, const AttentionGrid* grid,
                         const LogitDecomposition* decomposition, const std::vector<std::string>& formats)
{
    if (formats.empty() || runs.empty())
        return {};
    ensureApplication();
    const fs::path dir = fs::path(outDir) / "figures";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return dir.string() + ": cannot create (" + ec.message() + ")";
    std::vector<AnalysisSummary> summaries;
    for (const auto& r : runs)
        summaries.push_back(summaryOf(r));
    const AnalysisSummary& first = summaries.front();
    const PlotStyle style;
    std::string error;
    const auto plotFigure = [&](const std::string& name, QSize size, const std::function<void(QCustomPlot*)>& build,
                                const std::string& csv) {
        if (!error.empty())
            return;
        auto plot = std::make_unique<QCustomPlot>();
        plot->resize(size);
        build(plot.get());
        for (const auto& f : formats) {
            QString message;
            const QString path = QString::fromStdString((dir / (name + "." + f)).string());
            if (!exportPlot(plot.get(), path, size.width(), size.height(), &message)) {
                error = path.toStdString() + ": " + message.toStdString();
                return;
            }
        }
        if (auto w = writeTextFile((dir / (name + ".csv")).string(), csv); !w)
            error = w.message();
    };

    if (!first.tokenSimilarity.empty()) {
        std::string csv = "label,layer,tap,tokens,mean,sd,ci95,n\n";
        for (const auto& s : summaries)
            for (const auto& r : s.tokenSimilarity)
                if (r.tap == Tap::Block)
                    csv += quoted(s.label) + "," + std::to_string(r.layer) + "," + toString(r.tap) + "," + toString(r.tokens) + ","
                        + csvNumber(r.value.mean) + "," + csvNumber(r.value.sd) + "," + csvNumber(r.value.ci95) + "," + std::to_string(r.value.n) + "\n";
        plotFigure("token_similarity", lineFigureSize(), [&](QCustomPlot* p) { buildTokenSimilarityPlot(p, summaries, Tap::Block, style); }, csv);
    }
    if (!first.snr.empty()) {
        std::string csv = "label,perturbation,layer,tap,snr_db_mean,snr_db_sd,ci95,n\n";
        std::string diag = "label,perturbation,layer,alpha,beta,gamma,gain,bound,condition_share,sensitivity\n";
        for (const auto& s : summaries) {
            for (const auto& r : s.snr)
                csv += quoted(s.label) + "," + quoted(r.perturbation) + "," + std::to_string(r.layer) + "," + toString(r.tap) + ","
                    + csvNumber(r.snrDb.mean) + "," + csvNumber(r.snrDb.sd) + "," + csvNumber(r.snrDb.ci95) + "," + std::to_string(r.snrDb.n) + "\n";
            for (const auto& r : s.snrDiagnostics)
                diag += quoted(s.label) + "," + quoted(r.perturbation) + "," + std::to_string(r.layer) + "," + csvNumber(r.alpha.mean) + ","
                    + csvNumber(r.beta.mean) + "," + csvNumber(r.gamma.mean) + "," + csvNumber(r.gain.mean) + "," + csvNumber(r.bound.mean) + ","
                    + csvNumber(r.conditionShare) + "," + csvNumber(r.sensitivity.mean) + "\n";
        }
        plotFigure("snr", lineFigureSize(), [&](QCustomPlot* p) { buildSnrPlot(p, summaries, style); }, csv);
        plotFigure("snr_diagnostics", snrDiagnosticsFigureSize(), [&](QCustomPlot* p) { buildSnrDiagnosticsPlot(p, summaries, style); }, diag);
    }
    if (!first.headCentres.empty()) {
        std::string csv = "label,layer,head,centre_dy,centre_dx,mean_distance_px,contour50,offset_map\n";
        std::string dist = "label,layer,head,mean_distance_px,n\n";
        int layers = 0;
        for (const auto& r : first.headCentres) {
            layers = std::max(layers, r.layer);
            std::string map;
            for (double v : r.offsetMap)
                map += (map.empty() ? "" : " ") + csvNumber(v);
            csv += quoted(first.label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + "," + csvNumber(r.centreDy.mean) + ","
                + csvNumber(r.centreDx.mean) + "," + csvNumber(r.meanDistancePx.mean) + "," + csvNumber(r.contour50) + "," + map + "\n";
        }
        for (const auto& s : summaries)
            for (const auto& r : s.headCentres)
                dist += quoted(s.label) + "," + std::to_string(r.layer) + "," + std::to_string(r.head) + "," + csvNumber(r.meanDistancePx.mean)
                    + "," + std::to_string(r.meanDistancePx.n) + "\n";
        plotFigure("head_centres", headCentresFigureSize(layers), [&](QCustomPlot* p) { buildHeadCentresPlot(p, first, style); }, csv);
        plotFigure("attention_distance", lineFigureSize(), [&](QCustomPlot* p) { buildAttentionDistancePlot(p, summaries, style); }, dist);
    }
    if (decomposition && error.empty()) {
        LogitDecompositionInfo info;
        info.model = QString::fromStdString(first.model);
        info.image = grid ? QString::fromStdString(grid->image) : QString();
        info.numPrefixTokens = grid ? grid->numPrefixTokens : 1;
        std::string csv = "term,query,key,value\n";
        const int64_t n = decomposition->tt.size(1);
        for (auto [t, name] : { std::pair<const Tensor*, const char*> { &decomposition->tt, "TT" }, { &decomposition->tp, "TP" },
                                { &decomposition->pt, "PT" }, { &decomposition->pp, "PP" } })
            for (int64_t q = 0; q < n; ++q)
                for (int64_t k = 0; k < n; ++k)
                    csv += std::string(name) + "," + std::to_string(q) + "," + std::to_string(k) + "," + csvNumber(t->data()[q * n + k]) + "\n";
        plotFigure("logit_decomposition", logitDecompositionFigureSize(),
                   [&](QCustomPlot* p) { buildLogitDecompositionFigure(p, *decomposition, 0, info, style); }, csv);
    }
    if (grid && error.empty()) {
        const QImage image = renderAttentionGrid(*grid);
        for (const auto& f : formats) {
            QString message;
            const QString path = QString::fromStdString((dir / ("attention_grid." + f)).string());
            if (!exportImage(image, path, &message))
                return path.toStdString() + ": " + message.toStdString();
        }
        std::string csv = "layer,head,row,col,attention\n";
        for (size_t l = 0; l < grid->maps.size(); ++l)
            for (size_t h = 0; h < grid->maps[l].size(); ++h) {
                const Tensor& m = grid->maps[l][h].patches;
                const std::string head = h + 1 == grid->maps[l].size() ? "mean" : std::to_string(h);
                for (int r = 0; r < grid->gridHeight; ++r)
                    for (int c = 0; c < grid->gridWidth; ++c)
                        csv += std::to_string(l + 1) + "," + head + "," + std::to_string(r) + "," + std::to_string(c) + ","
                            + csvNumber(m.data()[r * grid->gridWidth + c]) + "\n";
            }
        for (int r = 0; r < grid->gridHeight; ++r)
            for (int c = 0; c < grid->gridWidth; ++c)
                csv += "rollout,mean," + std::to_string(r) + "," + std::to_string(c) + "," + csvNumber(grid->rollout.patches.data()[r * grid->gridWidth + c]) + "\n";
        if (auto w = writeTextFile((dir / "attention_grid.csv").string(), csv); !w)
            return w.message();
    }
    return error;
}
