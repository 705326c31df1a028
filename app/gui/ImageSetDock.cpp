#include "gui/ImageSetDock.h"

#include <attnscope/FigureData.h>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

using namespace attnscope;

ImageSetDock::ImageSetDock(ModelSlot* primary, ModelSlot* compared, Reader read, QWidget* parent)
    : QWidget(parent)
    , m_slots { primary, compared }
    , m_read(std::move(read))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->setContentsMargins(4, 4, 4, 0);
    m_button = new QPushButton(tr("Analyse image set"), this);
    connect(m_button, &QPushButton::clicked, this, [this] { running() ? cancel() : analyse(); });
    m_progress = new QProgressBar(this);
    m_progress->setTextVisible(true);
    m_progress->setFormat(tr("every image in the strip")); // short: the bar's text does not wrap
    m_progress->setToolTip(tr("Analyses every image in the strip, with the SNR noise chosen under Variant and noise"));
    m_progress->setValue(0);
    m_ablation = new QCheckBox(tr("Head ablation"), this);
    m_ablation->setToolTip(tr("Also ablate every head of every layer on each image (layers × heads forwards per image): "
                              "the Head ablation figure and the tiles' head importance"));
    row->addWidget(m_button);
    row->addWidget(m_ablation);
    row->addWidget(m_progress, 1);
    m_panel = new FigurePanel({ Figure::TokenSimilarity, Figure::Snr, Figure::SnrDiagnostics, Figure::HeadCentres, Figure::AttentionDistance,
                                Figure::AttentionSimilarity, Figure::HeadKernels, Figure::TokenNorms, Figure::HeadAblation },
                              this);
    layout->addLayout(row);
    layout->addWidget(m_panel, 1);
    follow(primary, true);
    follow(compared, false);
}

void ImageSetDock::follow(ModelSlot* slot, bool primary)
{
    if (primary) {
        connect(slot, &ModelSlot::setProgress, this, [this](int done, int total, double rate) {
            m_progress->setRange(0, total);
            m_progress->setValue(done);
            const double left = rate > 0 ? (total - done) / rate : 0;
            const QString skipped = m_skipped.isEmpty() ? QString() : tr(" · %1 skipped").arg(m_skipped.size());
            m_progress->setFormat(tr("%v/%m images%3 · %1 img/s · %2 s left").arg(rate, 0, 'f', 1).arg(left, 0, 'f', 0).arg(skipped));
        });
        connect(slot, &ModelSlot::setSkipped, this, [this](const QString& text) {
            // Listed, not a dialog per file: the bar says how many, its tooltip which and why.
            m_skipped << text;
            m_progress->setToolTip(tr("Skipped (could not be read):\n%1").arg(m_skipped.join(QLatin1Char('\n'))));
            emit message(tr("Skipped %1").arg(text), 5000);
        });
    }
    connect(slot, &ModelSlot::setUpdated, this, [this](bool) {
        refreshPlots();
        if (!running() && m_button->text() == tr("Cancel")) {
            m_button->setText(tr("Analyse image set"));
            emit finished(true);
        }
    });
    // Ended before its last image (cancelled, or an error the window's error line says): said once, whichever of the
    // two runs (the model's and its variant's) ends last.
    const auto stopped = [this](const QString& format) {
        if (running() || m_button->text() != tr("Cancel"))
            return;
        m_button->setText(tr("Analyse image set"));
        m_progress->setFormat(format);
        emit finished(false);
    };
    connect(slot, &ModelSlot::setCancelled, this, [stopped, this] { stopped(tr("cancelled at %v/%m")); });
    connect(slot, &ModelSlot::setFailed, this, [stopped, this](const QString& message) {
        m_progress->setToolTip(message);
        stopped(tr("stopped at %v/%m: see the error"));
    });
}

bool ImageSetDock::running() const { return m_slots[0]->setRunning() || m_slots[1]->setRunning(); }

void ImageSetDock::analyse()
{
    const Inputs in = m_read();
    if (!m_slots[0]->model() || in.strip.isEmpty())
        return;
    if (!in.mixedNote.isEmpty())
        emit message(in.mixedNote, 15000); // said once, before the run
    for (ModelSlot* slot : m_slots)
        slot->analyseSet(in.strip, m_ablation->isChecked());
    m_button->setText(tr("Cancel"));
    m_progress->setRange(0, int(in.strip.size()));
    m_progress->setValue(0);
    m_skipped.clear();
    m_progress->setToolTip(tr("Analyses every image in the strip, with the SNR noise chosen under Variant and noise")
                           + (in.mixedNote.isEmpty() ? QString() : QStringLiteral("\n") + in.mixedNote));
    refreshPlots();
    emit started();
}

void ImageSetDock::cancel()
{
    for (ModelSlot* slot : m_slots)
        slot->cancelSet();
}

void ImageSetDock::setAblation(bool on) { m_ablation->setChecked(on); }

void ImageSetDock::refreshPlots()
{
    std::vector<AnalysisSummary> series = m_slots[0]->setSeries();
    if (m_slots[1]->model())
        for (auto& s : m_slots[1]->setSeries())
            series.push_back(std::move(s));
    const int64_t images = series.empty() ? 0 : series.front().images;
    m_panel->setData(std::move(series));
    m_panel->setStatus(images > 0 ? tr("%n image(s)", nullptr, int(images)) : QString());
}

void ImageSetDock::showFigure(int index)
{
    const auto& figures = m_panel->figures();
    m_panel->setFigure(figures.at(size_t(std::clamp(index, 0, int(figures.size()) - 1))));
}
