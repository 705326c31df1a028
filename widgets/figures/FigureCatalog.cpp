#include "figures/FigureCatalog.h"

#include "figures/AttentionGridFigure.h"
#include "figures/FigureSizes.h"
#include "figures/RelevanceFigure.h"
#include "figures/TokenNormsFigure.h"
#include "plots/AttentionDistancePlot.h"
#include "plots/AttentionSimilarityPlot.h"
#include "plots/HeadAblationPlot.h"
#include "plots/HeadCentresPlot.h"
#include "plots/HeadKernelPlot.h"
#include "plots/LogitDecompositionPlot.h"
#include "plots/PlotElements.h"
#include "plots/SnrPlot.h"
#include "plots/TokenNormsPlot.h"
#include "plots/TokenSimilarityPlot.h"

#include <qcustomplot.h>

#include <algorithm>

namespace attnscope {

namespace {

int headsOf(const AnalysisSummary& s)
{
    int heads = 0;
    for (const auto& r : s.headCentres)
        heads = std::max(heads, r.head + 1);
    return heads;
}

int layersOf(const AnalysisSummary& s)
{
    int layers = 0;
    for (const auto& r : s.headCentres)
        layers = std::max(layers, r.layer);
    return layers;
}

int ablatedSeries(const FigureData& data)
{
    return int(std::count_if(data.series.begin(), data.series.end(), [](const AnalysisSummary& s) { return !s.ablation.empty(); }));
}

QString missing(Figure figure)
{
    switch (figure) {
    case Figure::Snr:
    case Figure::SnrDiagnostics: return QObject::tr("No SNR yet: it needs a perturbation and a second forward pass.");
    case Figure::HeadCentres:
    case Figure::AttentionDistance: return QObject::tr("No head centres yet.");
    case Figure::AttentionSimilarity: return QObject::tr("No attention similarity yet.");
    case Figure::TokenNorms: return QObject::tr("No token norms yet (the \"norms\" analysis).");
    case Figure::HeadAblation: return QObject::tr("No head ablation yet (the \"ablation\" analysis).");
    case Figure::LogitDecomposition: return QObject::tr("No logit decomposition for this model and image.");
    case Figure::HeadKernels:
        return QObject::tr("No head kernels yet: they need head centres on a patch grid wider than the offset window.");
    default: return QObject::tr("No results yet.");
    }
}

} // namespace

QString figureTitle(Figure figure)
{
    switch (figure) {
    case Figure::TokenSimilarity: return QObject::tr("Token similarity");
    case Figure::Snr: return QObject::tr("SNR");
    case Figure::SnrDiagnostics: return QObject::tr("SNR diagnostics");
    case Figure::HeadCentres: return QObject::tr("Head centres");
    case Figure::AttentionDistance: return QObject::tr("Attention distance");
    case Figure::AttentionSimilarity: return QObject::tr("Attention similarity");
    case Figure::LogitDecomposition: return QObject::tr("Logit decomposition");
    case Figure::HeadKernels: return QObject::tr("Head kernels");
    case Figure::TokenNorms: return QObject::tr("High-norm tokens");
    case Figure::HeadAblation: return QObject::tr("Head ablation");
    }
    return {};
}

QSize figureSize(Figure figure, const FigureData& data)
{
    switch (figure) {
    case Figure::SnrDiagnostics: return snrDiagnosticsFigureSize();
    case Figure::TokenNorms: return tokenNormsFigureSize();
    case Figure::HeadCentres: return headCentresFigureSize(data.series.empty() ? 1 : layersOf(data.series.front()));
    case Figure::LogitDecomposition: return logitDecompositionFigureSize();
    case Figure::HeadAblation: return headAblationFigureSize(ablatedSeries(data));
    case Figure::HeadKernels:
        return data.series.empty() ? headKernelsFigureSize(1, 1)
                                   : headKernelsFigureSize(layersOf(data.series.front()), headsOf(data.series.front()));
    default: return lineFigureSize();
    }
}

void buildFigure(QCustomPlot* plot, Figure figure, const FigureData& data, const PlotStyle& style)
{
    if (!figureHasData(figure, data)) {
        resetPlot(plot, figureTitle(figure), QString(), style);
        auto* rect = addAxisRect(plot, plot->plotLayout(), 1, 0, style);
        for (QCPAxis* axis : rect->axes())
            axis->setVisible(false);
        addNote(rect, missing(figure), style);
        return;
    }
    switch (figure) {
    case Figure::TokenSimilarity: buildTokenSimilarityPlot(plot, data.series, Tap::Block, style); break;
    case Figure::Snr: buildSnrPlot(plot, data.series, style); break;
    case Figure::SnrDiagnostics: buildSnrDiagnosticsPlot(plot, data.series, style); break;
    case Figure::HeadCentres: buildHeadCentresPlot(plot, data.series.front(), style); break;
    case Figure::AttentionDistance: buildAttentionDistancePlot(plot, data.series, style); break;
    case Figure::AttentionSimilarity: buildAttentionSimilarityPlot(plot, data.series, style); break;
    case Figure::HeadKernels: buildHeadKernelPlot(plot, data.series.front(), style); break;
    case Figure::TokenNorms: buildTokenNormsPlot(plot, data.series, style); break;
    case Figure::HeadAblation: buildHeadAblationPlot(plot, data.series, style); break;
    case Figure::LogitDecomposition:
        buildLogitDecompositionFigure(plot, *data.decomposition, data.decompositionHead, data.decompositionInfo, style);
        break;
    }
}

QImage renderFigure(const AttentionGrid& grid) { return renderAttentionGrid(grid); }
QImage renderFigure(const RelevanceFigure& figure) { return renderRelevanceFigure(figure); }
QImage renderFigure(const TokenNormsFigure& figure) { return renderTokenNormsFigure(figure); }

} // namespace attnscope
