// MainWindow's exports: the view, the layers x heads grid, the image set's figures, and "Export all" (the CLI's
// output folder, through report/).
#include "gui/MainWindow.h"
#include "gui/RemoteBackend.h"
#include "gui/TaskFollow.h"

#include <RunSpec.h>
#include <figures/FigureCatalog.h>
#include <figures/FigureExport.h>
#include <Figures.h>
#include <Report.h>

#include <attnscope/Files.h>

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QStatusBar>

using namespace attnscope;

bool MainWindow::exportView(const QString& path)
{
    QString error;
    bool ok = false;
    if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
        std::string csv = "model,layer,head,query,row,col,attention\n";
        for (int i = 0; i < 2; ++i) {
            const auto& map = m_views[i]->map();
            const auto& t = m_slots[i]->trace();
            if (!map || !t || !m_slots[i]->model())
                continue;
            const int query = i == 0 ? m_view.query : compareQuery();
            // A head the compared model has not is shown as the mean of its heads (refreshMaps).
            const HeadChoice shown = m_view.head.isSingle() && m_view.head.head >= t->trace.numHeads ? HeadChoice() : m_view.head;
            const std::string head = headChoiceKey(shown).toStdString();
            const std::string prefix = m_slots[i]->name().toStdString() + ","
                + mapLayerName(t->trace, std::clamp(m_view.layer, 1, lastMapLayer(t->trace))) + ","
                + head + "," + std::to_string(query) + ",";
            for (int r = 0; r < t->trace.gridHeight; ++r)
                for (int c = 0; c < t->trace.gridWidth; ++c)
                    csv += prefix + std::to_string(r) + "," + std::to_string(c) + ","
                        + csvNumber(map->patches.data()[r * t->trace.gridWidth + c]) + "\n";
        }
        auto w = m_views[0]->map() ? writeTextFile(path.toStdString(), csv) : Status(Error { "nothing to export" });
        ok = bool(w);
        if (!ok)
            error = QString::fromStdString(w.message());
    } else {
        const QImage image = m_slots[1]->model() && !m_views[1]->rendered().isNull() ? composedViews() : m_views[0]->composed();
        const Status w = image.isNull() ? Status(Error {}) : exportImage(image, path);
        ok = bool(w);
        if (!ok)
            error = QString::fromStdString(w.message());
    }
    if (!ok) {
        showError(error.startsWith(path) ? error : path + ": " + (error.isEmpty() ? tr("nothing to export") : error));
        return false;
    }
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
    return true;
}

bool MainWindow::exportTiles(const QString& path)
{
    const auto& t = m_slots[0]->trace();
    if (!t) {
        showError(path + ": " + tr("nothing to export"));
        return false;
    }
    AttentionGrid grid = attentionGrid(t->trace, m_view.query, m_controls->rollout());
    grid.model = m_slots[0]->name().toStdString();
    grid.image = QFileInfo(t->path).completeBaseName().toStdString();
    grid.shown = t->shown;
    const Status w = path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive) ? writeTextFile(path.toStdString(), figureCsv(grid))
                                                                                 : exportImage(renderFigure(grid), path);
    const QString error = w ? QString() : QString::fromStdString(w.message());
    if (!w) {
        showError(error.startsWith(path) ? error : path + ": " + error);
        return false;
    }
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
    return true;
}

bool MainWindow::exportImageSet(const QString& dir)
{
    if (!m_slots[0]->setSummary()) {
        showError(tr("Analyse the image set first"));
        return false;
    }
    const AnalysisSummary own = m_slots[0]->setSeries().front();
    if (auto csvs = writeSummaryCsvs(dir.toStdString(), own); !csvs) {
        showError(QString::fromStdString(csvs.message()));
        return false;
    }
    FigurePanel panel(allFigures());
    const FigureData& data = m_setDock->panel()->data();
    panel.setData(data.series);
    for (Figure f : allFigures()) {
        if (!figureHasData(f, data))
            continue;
        panel.setFigure(f);
        const QString base = QDir(dir).filePath(QString::fromStdString(figureFileName(f)));
        for (const char* ext : { ".png", ".svg", ".pdf" })
            if (auto written = panel.exportFigure(base + ext); !written) {
                showError(QString::fromStdString(written.message()));
                return false;
            }
    }
    statusBar()->showMessage(tr("Image-set results written to %1").arg(dir), 5000);
    return true;
}

RunSpec MainWindow::shownRunSpec() const
{
    // The run the window shows, as the CLI would be asked for it (report/RunSpec.h): the same checks, the same request.
    RunSpec spec;
    const AnalysisOptions& shown = m_slots[0]->analysisOptions();
    spec.analyses = "similarity,attention,centres,snr";
    // The decomposition needs absolute position embeddings; ask for it only where this image's analysis found it.
    if (const auto& analysis = m_slots[0]->analysis(); analysis && analysis->decomposition)
        spec.analyses += ",decomposition";
    if (shown.norms)
        spec.analyses += ",norms";
    for (const auto& p : shown.perturbations)
        spec.noise.push_back(p.spec());
    spec.draws = shown.draws;
    spec.seed = shown.seed;
    spec.outlierRatio = shown.outlierRatio;
    spec.fresh = true; // the folder chosen is written anew, whatever an unfinished run left there
    if (const auto& v = m_slots[0]->variant()) {
        spec.neutreno = v->neutrenoLambda;
        spec.boost = v->boostT;
    }
    return spec;
}

void MainWindow::watchExport(const std::function<quint64()>& start, std::function<QString()> finish)
{
    followTask(
        m_worker.get(), this, [&] { return m_exportJob = start(); },
        [this, finish] {
            const QString error = finish();
            if (!error.isEmpty())
                showError(error);
            emit exportFinished(error.isEmpty());
        },
        [this](const QString& message) {
            showError(message);
            emit exportFinished(false);
        },
        [this](int done, int total) { statusBar()->showMessage(tr("Export all: %1/%2 images").arg(done).arg(total)); });
}

void MainWindow::exportAll(const QString& dir, const QString& hostFolder)
{
    if (!m_slots[0]->model() || m_images->rowCount() == 0) {
        showError(tr("Export all: open a model and images first"));
        emit exportFinished(false);
        return;
    }
    if (!m_slots[0]->model()->local || !hostFolder.isEmpty()) {
        exportAllOnHost(dir, hostFolder);
        return;
    }
    auto request = std::make_shared<ReportRequest>();
    request->model = m_slots[0]->model()->local;
    request->modelName = m_slots[0]->name().toStdString();
    if (m_slots[1]->model()) {
        request->compare = m_slots[1]->model()->local;
        request->compareName = m_slots[1]->name().toStdString();
        request->compareSpec = m_slots[1]->model()->info().path;
    }
    for (const QString& p : m_images->paths())
        request->images.push_back(p.toStdString());
    request->out = dir.toStdString();
    if (auto checked = applyRunSpec(shownRunSpec(), [](const std::string& name) { return name; }, *request); !checked) {
        showError(tr("Export all: %1").arg(QString::fromStdString(checked.message())));
        emit exportFinished(false);
        return;
    }
    request->formats = { "png", "svg", "pdf" };
    request->formatsText = "png,svg,pdf";
    auto results = std::make_shared<std::shared_ptr<ReportResults>>();
    statusBar()->showMessage(tr("Export all: analysing %n image(s)…", nullptr, int(request->images.size())));
    const auto start = [&] {
        return m_worker->runTask([request, results](EngineBackend&, const std::function<bool()>& cancelled, const EngineWorker::Progress& progress) {
            auto r = analyseReport(*request, cancelled, progress);
            if (!r)
                return QString::fromStdString(r.message());
            *results = *r;
            return QString();
        });
    };
    watchExport(start, [=] {
        // Figures are drawn here, on the GUI thread (QCustomPlot is a widget); then the manifest, last.
        QApplication::setOverrideCursor(Qt::BusyCursor);
        auto outcome = finishReport(*request, **results);
        QApplication::restoreOverrideCursor();
        if (!outcome)
            return QString::fromStdString(outcome.message());
        statusBar()->showMessage(tr("Export all: %1 images written to %2").arg(outcome->done).arg(dir), 10000);
        return QString();
    });
}

void MainWindow::exportAllOnHost(const QString& dir, const QString& hostFolder)
{
    RemoteBackend::HostExport request;
    request.model = m_slots[0]->model();
    request.modelName = m_slots[0]->name().toStdString();
    if (m_slots[1]->model()) {
        request.compare = m_slots[1]->model();
        request.compareName = m_slots[1]->name().toStdString();
        request.compareSpec = m_slots[1]->model()->info().path;
    }
    request.images = m_images->paths();
    request.spec = shownRunSpec();
    request.spec.checkpointSeconds = 1.0; // a link that drops costs the host's run at most a second of its work
    request.formats = "png,svg,pdf";
    request.localFolder = dir;
    request.hostFolder = hostFolder;
    auto outcome = std::make_shared<RemoteBackend::HostExportOutcome>();
    statusBar()->showMessage(tr("Export all on %1: analysing %n image(s)…", nullptr, int(request.images.size())).arg(m_worker->endpoint()));
    const auto start = [&] {
        return m_worker->runTask([request, outcome](EngineBackend& engine, const std::function<bool()>& cancelled,
                                                    const EngineWorker::Progress& progress) {
            auto* host = dynamic_cast<RemoteBackend*>(&engine); // the one backend that has a host to write on
            if (!host)
                return tr("Export all on a host needs the window on a remote engine (attnscope --remote HOST)");
            auto r = host->exportAll(request, cancelled, progress);
            if (!r)
                return QString::fromStdString(r.message());
            *outcome = *r;
            return QString();
        });
    };
    watchExport(start, [=] {
        const QString where = hostFolder.isEmpty() ? dir : m_worker->endpoint().section(':', 0, 0) + ":" + hostFolder; // host:folder, as scp writes it
        QString message = tr("Export all: %1 images written to %2").arg(outcome->outcome.done).arg(where);
        if (!outcome->figuresNote.empty())
            message += tr(" (no figures: the host's %1)").arg(QString::fromStdString(outcome->figuresNote));
        if (!outcome->skipped.empty())
            message += tr("; %n image(s) could not be read, the first: %1", nullptr, int(outcome->skipped.size()))
                           .arg(QString::fromStdString(outcome->skipped.front()));
        statusBar()->showMessage(message, 10000);
        return QString();
    });
}

QImage MainWindow::composedViews() const
{
    const QImage a = m_views[0]->composed(), b = m_views[1]->composed();
    const qreal ratio = a.devicePixelRatio();
    QImage out(a.width() + b.width(), std::max(a.height(), b.height()), QImage::Format_ARGB32);
    out.fill(Qt::white);
    QPainter p(&out);
    p.drawImage(0, 0, a);
    p.drawImage(a.width(), 0, b);
    p.end();
    out.setDevicePixelRatio(ratio);
    return out;
}
