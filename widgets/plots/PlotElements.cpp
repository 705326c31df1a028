#include "plots/PlotElements.h"

#include <QResizeEvent>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    // Rows that hold text or legends take their minimum height; the axes get the rest.
    constexpr double fixedRowStretch = 0.001;

    QCPTextElement* addText(
        QCustomPlot* plot, QCPLayoutGrid* layout, int row, const QString& text, const QFont& font, const QColor& color)
    {
        auto* element = new QCPTextElement(plot, text, font);
        element->setTextColor(color);
        element->setMargins(QMargins(4, 2, 4, 2));
        element->setSelectable(false);
        layout->addElement(row, 0, element);
        layout->setRowStretchFactor(row, fixedRowStretch);
        return element;
    }

    // [stretch | element | stretch] (horizontal) or [element; stretch] (vertical) at (row, column) of `layout`: keeps
    // a legend at its natural size. The box joins the plot's layout before its children, so they get the plot too.
    void addBox(QCustomPlot* plot, QCPLayoutGrid* layout, int row, int column, QCPLayoutElement* element,
        Qt::Orientation orientation)
    {
        auto* box = new QCPLayoutGrid;
        layout->addElement(row, column, box);
        box->setMargins(QMargins(0, 0, 0, 0));
        box->setRowSpacing(0);
        box->setColumnSpacing(0);
        if (orientation == Qt::Horizontal) {
            box->addElement(0, 0, new QCPLayoutElement(plot));
            box->addElement(0, 1, element);
            box->addElement(0, 2, new QCPLayoutElement(plot));
        } else {
            box->addElement(0, 0, element);
            box->addElement(1, 0, new QCPLayoutElement(plot));
        }
    }

    const char* const singleColumnProperty = "attnscopeSingleColumn";
    const char* const maxColumnsProperty = "attnscopeLegendColumns"; // set by finishLegend
    const char* const legendFitterProperty = "attnscopeLegendFitter";

    // Lays `legend` out in as many columns as fit `width` (up to the ones finishLegend gave it): a row wider than the
    // figure is clipped at both ends. At its natural size, so the surrounding box centres it instead of spreading
    // its items over the full width.
    void fitLegend(QCPLegend* legend, int width)
    {
        int columns = legend->property(maxColumnsProperty).toInt();
        for (;;) {
            legend->setWrap(columns);
            legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
            if (columns <= 1 || width <= 0 || legend->minimumOuterSizeHint().width() <= width)
                break;
            --columns;
        }
        legend->setSizeConstraintRect(QCPLayoutElement::scrOuterRect);
        legend->setMaximumSize(legend->minimumOuterSizeHint());
    }

    // Fits the plot's legends again when its width changes, before the plot lays itself out at the new size.
    class LegendFitter : public QObject {
    public:
        explicit LegendFitter(QCustomPlot* plot)
            : QObject(plot)
        {
            plot->installEventFilter(this);
        }

    protected:
        bool eventFilter(QObject* watched, QEvent* event) override
        {
            if (event->type() == QEvent::Resize) {
                const auto* resize = static_cast<QResizeEvent*>(event);
                if (resize->size().width() != resize->oldSize().width())
                    for (QCPLegend* legend : watched->findChildren<QCPLegend*>())
                        if (legend->property(maxColumnsProperty).isValid())
                            fitLegend(legend, resize->size().width());
            }
            return false;
        }
    };

} // namespace

int resetPlot(QCustomPlot* plot, const QString& title, const QString& subtitle, const PlotStyle& style)
{
    plot->clearPlottables();
    plot->clearItems();
    plot->plotLayout()->clear(); // deletes axis rects and legends (QCustomPlot resets its xAxis/legend pointers)
    // Margin groups are children of the plot, not of the layout: without this a widget rebuilt for every new
    // result would collect empty ones.
    const auto groups = plot->findChildren<QCPMarginGroup*>(QString(), Qt::FindDirectChildrenOnly);
    qDeleteAll(groups);
    plot->setAutoAddPlottableToLegend(false);
    QCPLayoutGrid* layout = plot->plotLayout();
    layout->setRowSpacing(2);
    layout->setColumnSpacing(0);
    layout->setMargins(QMargins(6, 4, 10, 8));
    applyStyle(plot, style);

    int row = 0;
    addText(plot, layout, row++, title, style.font(style.titleFontPx, true), style.foreground);
    if (!subtitle.isEmpty()) {
        // Long provenance lines break at the " · " separator nearest the middle instead of running off the edge.
        QString text = subtitle;
        const QString separator = QStringLiteral(" · ");
        while (true) {
            const int lineStart = text.lastIndexOf('\n') + 1;
            if (text.size() - lineStart <= 95)
                break;
            const int middle = lineStart + (text.size() - lineStart) / 2;
            int best = -1;
            for (int i = text.indexOf(separator, lineStart); i >= 0; i = text.indexOf(separator, i + 1))
                if (best < 0 || std::abs(i - middle) < std::abs(best - middle))
                    best = i;
            if (best < 0)
                break;
            text.replace(best, separator.size(), QStringLiteral("\n"));
        }
        addText(plot, layout, row++, text, style.font(style.subtitleFontPx), style.mutedText);
    }
    return row;
}

QCPAxisRect* addAxisRect(QCustomPlot* plot, QCPLayoutGrid* layout, int row, int column, const PlotStyle& style)
{
    auto* rect = new QCPAxisRect(plot);
    layout->addElement(row, column, rect);
    rect->setupFullAxesBox(false);
    applyStyle(rect, style);
    return rect;
}

QCPLegend* addLegend(QCustomPlot* plot, QCPAxisRect* rect, int contentRow, const PlotStyle& style)
{
    auto* legend = new QCPLegend;
    QCPLayoutGrid* main = plot->plotLayout();
    bool inside = false;
    switch (style.legendPlacement) {
    case LegendPlacement::Below:
        main->insertRow(contentRow + 1);
        addBox(plot, main, contentRow + 1, 0, legend, Qt::Horizontal);
        main->setRowStretchFactor(contentRow + 1, fixedRowStretch);
        break;
    case LegendPlacement::Right: {
        // The title rows span one column, so the rect and its legend share a nested grid in the content row.
        QCPLayoutElement* content = main->element(contentRow, 0);
        main->take(content);
        auto* row = new QCPLayoutGrid;
        main->addElement(contentRow, 0, row);
        row->setColumnSpacing(8);
        row->addElement(0, 0, content);
        addBox(plot, row, 0, 1, legend, Qt::Vertical);
        row->setColumnStretchFactor(1, fixedRowStretch);
        break;
    }
    case LegendPlacement::InsideTopLeft:
    case LegendPlacement::InsideTopRight:
    case LegendPlacement::InsideBottomLeft:
    case LegendPlacement::InsideBottomRight: {
        inside = true;
        Qt::Alignment align;
        switch (style.legendPlacement) {
        case LegendPlacement::InsideTopLeft:
            align = Qt::AlignTop | Qt::AlignLeft;
            break;
        case LegendPlacement::InsideTopRight:
            align = Qt::AlignTop | Qt::AlignRight;
            break;
        case LegendPlacement::InsideBottomLeft:
            align = Qt::AlignBottom | Qt::AlignLeft;
            break;
        default:
            align = Qt::AlignBottom | Qt::AlignRight;
            break;
        }
        rect->insetLayout()->addElement(legend, align);
        break;
    }
    }
    legend->setLayer(QStringLiteral("legend"));
    legend->setProperty(singleColumnProperty, style.legendPlacement != LegendPlacement::Below);
    applyStyle(legend, style, inside);
    legend->setVisible(true);
    return legend;
}

QCPLegend* addLegendBelow(QCustomPlot* plot, QCPLayoutGrid* layout, int row, const PlotStyle& style)
{
    auto* legend = new QCPLegend;
    layout->insertRow(row);
    addBox(plot, layout, row, 0, legend, Qt::Horizontal);
    layout->setRowStretchFactor(row, fixedRowStretch);
    legend->setLayer(QStringLiteral("legend"));
    applyStyle(legend, style, false);
    legend->setVisible(true);
    return legend;
}

QCPLegend* addKeyLegend(QCustomPlot* plot, QCPLegend* primary, const PlotStyle& style)
{
    auto* box = qobject_cast<QCPLayoutGrid*>(primary->layout());
    auto* outer = box ? qobject_cast<QCPLayoutGrid*>(box->layout()) : nullptr;
    if (!box || !outer)
        return primary; // an inset legend: keys go in the same column
    auto* keys = new QCPLegend;
    const bool vertical = primary->property(singleColumnProperty).toBool();
    if (vertical) {
        box->insertRow(1);
        box->addElement(1, 0, keys);
    } else {
        int row = -1, column = -1;
        for (int i = 0; i < outer->elementCount(); ++i) {
            if (outer->elementAt(i) == box)
                outer->indexToRowCol(i, row, column);
        }
        outer->insertRow(row + 1);
        addBox(plot, outer, row + 1, 0, keys, Qt::Horizontal);
        outer->setRowStretchFactor(row + 1, fixedRowStretch);
    }
    keys->setLayer(QStringLiteral("legend"));
    keys->setProperty(singleColumnProperty, vertical);
    applyStyle(keys, style, false);
    keys->setVisible(true);
    return keys;
}

void finishLegend(QCPLegend* legend, int maxColumns)
{
    const int count = legend->itemCount();
    // An item is clipped to its own box, one line of text high: room below it for what a glyph draws under the
    // descent (the underscore of "best_vit", which was cut off and read "best vit").
    const QFontMetrics metrics(legend->font());
    const int below = std::max(2, metrics.underlinePos() + metrics.lineWidth());
    for (int i = 0; i < count; ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            item->setMargins(QMargins(0, 0, 0, below));
    const bool column = legend->property(singleColumnProperty).toBool();
    legend->setProperty(maxColumnsProperty, column ? 1 : std::clamp(maxColumns, 1, std::max(1, count)));
    QCustomPlot* plot = legend->parentPlot();
    fitLegend(legend, plot ? plot->width() : 0);
    // The width at build time is the export's, or for a plot in the window a guess: the window lays it out after,
    // and the user resizes it. The plot fits its legends again whenever its width changes.
    if (plot && !plot->property(legendFitterProperty).toBool()) {
        plot->setProperty(legendFitterProperty, true);
        new LegendFitter(plot);
    }
}

QCPGraph* addLine(QCPAxisRect* rect, const QVector<double>& x, const QVector<double>& y, const QColor& color,
    Qt::PenStyle penStyle, const QString& name, const PlotStyle& style)
{
    QCPGraph* graph = rect->parentPlot()->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    graph->setData(x, y, true);
    QPen pen(color, style.lineWidth, penStyle);
    pen.setCapStyle(Qt::FlatCap);
    pen.setJoinStyle(Qt::RoundJoin);
    graph->setPen(pen);
    graph->setName(name);
    graph->setSelectable(QCP::stNone);
    return graph;
}

QCPGraph* addBand(QCPAxisRect* rect, const QVector<double>& x, const QVector<double>& low, const QVector<double>& high,
    const QColor& color, const PlotStyle& style)
{
    QCustomPlot* plot = rect->parentPlot();
    QCPGraph* lower = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    lower->setData(x, low, true);
    lower->setPen(Qt::NoPen);
    lower->setSelectable(QCP::stNone);
    QCPGraph* upper = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    upper->setData(x, high, true);
    upper->setPen(Qt::NoPen);
    QColor fill = color;
    fill.setAlphaF(float(style.bandAlpha));
    upper->setBrush(fill);
    upper->setChannelFillGraph(lower);
    upper->setSelectable(QCP::stNone);
    return upper;
}

QCPLayoutGrid* addPanelRow(QCustomPlot* plot, int row)
{
    auto* panels = new QCPLayoutGrid;
    plot->plotLayout()->addElement(row, 0, panels);
    panels->setColumnSpacing(18);
    panels->setRowSpacing(2);
    return panels;
}

void finishPanelRow(QCPLayoutGrid* panels)
{
    panels->setRowStretchFactor(0, 0.001);
    panels->setRowStretchFactor(2, 0.001);
}

QCPAxisRect* addLayerPanel(QCustomPlot* plot, QCPLayoutGrid* panels, int column, const QString& title, QCPMarginGroup* group,
    const QString& xLabel, const QString& yLabel, int firstLayer, int lastLayer, const PlotStyle& style)
{
    auto* text = new QCPTextElement(plot, title, style.font(style.labelFontPx, true));
    text->setTextColor(style.foreground);
    panels->addElement(0, column, text);
    QCPAxisRect* rect = addAxisRect(plot, panels, 1, column, style);
    rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    rect->axis(QCPAxis::atBottom)->setLabel(xLabel);
    rect->axis(QCPAxis::atLeft)->setLabel(yLabel);
    setLayerAxis(rect->axis(QCPAxis::atBottom), firstLayer, lastLayer, 7);
    return rect;
}

void addPanelStyleKey(QCustomPlot* plot, QCPLayoutGrid* panels, int row, int column, QCPAxisRect* rect, const QStringList& names,
    const PlotStyle& style)
{
    auto* key = new QCPLegend;
    auto* keyBox = new QCPLayoutGrid;
    panels->addElement(row, column, keyBox);
    keyBox->addElement(0, 0, new QCPLayoutElement(plot));
    keyBox->addElement(0, 1, key);
    keyBox->addElement(0, 2, new QCPLayoutElement(plot));
    key->setLayer(QStringLiteral("legend"));
    applyStyle(key, style, false);
    key->setFont(style.font(style.legendFontPx - 1));
    for (int q = 0; q < names.size(); ++q)
        addStyleKey(rect, key, names[q], penStyleFor(q), style);
    finishLegend(key, 1);
}

QCPGraph* addStyleKey(
    QCPAxisRect* rect, QCPLegend* legend, const QString& name, Qt::PenStyle penStyle, const PlotStyle& style)
{
    QCPGraph* key = addLine(rect, {}, {}, style.neutral, penStyle, name, style);
    key->addToLegend(legend);
    return key;
}

void setLayerAxis(QCPAxis* axis, int firstLayer, int lastLayer, int maxTicks)
{
    const int span = std::max(1, lastLayer - firstLayer);
    int step = 1;
    for (int candidate : { 1, 2, 3, 4, 5, 10, 20, 25, 50, 100 }) {
        step = candidate;
        if (span / candidate + 1 <= std::max(2, maxTicks))
            break;
    }
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(step);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    axis->setTicker(ticker);
    axis->setSubTicks(false);
    axis->setNumberFormat(QStringLiteral("f"));
    axis->setNumberPrecision(0);
    axis->setRange(firstLayer - 0.4, lastLayer + 0.4);
}

void addNote(QCPAxisRect* rect, const QString& text, const PlotStyle& style)
{
    auto* item = new QCPItemText(rect->parentPlot());
    item->setClipAxisRect(rect);
    item->position->setType(QCPItemPosition::ptAxisRectRatio);
    item->position->setAxisRect(rect);
    item->position->setCoords(0.5, 0.5);
    item->setPositionAlignment(Qt::AlignCenter);
    item->setText(text);
    item->setFont(style.font(style.labelFontPx));
    item->setColor(style.mutedText);
    item->setSelectable(false);
}

void addStageBoundaries(QCPAxisRect* rect, const std::vector<AnalysisSummary>& series, const PlotStyle& style)
{
    const auto staged = std::find_if(series.begin(), series.end(), [](const AnalysisSummary& s) { return !s.blockStages.empty(); });
    if (staged == series.end())
        return;
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    for (int l = 1; l <= int(staged->blockStages.size()); ++l) {
        if (l > 1 && staged->stageOf(l) == staged->stageOf(l - 1))
            continue;
        if (l > 1) { // the merge before this stage
            auto* line = new QCPItemStraightLine(rect->parentPlot());
            line->setClipAxisRect(rect);
            line->setSelectable(false);
            line->setPen(QPen(style.mutedText, 1.0, Qt::DashLine));
            for (auto* p : { line->point1, line->point2 })
                p->setAxes(x, y);
            line->point1->setCoords(l - 0.5, 0);
            line->point2->setCoords(l - 0.5, 1);
        }
        auto* label = new QCPItemText(rect->parentPlot());
        label->setClipAxisRect(rect);
        label->setSelectable(false);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setAxes(x, y);
        label->position->setAxisRect(rect);
        label->position->setCoords(l - 0.4, 0.97); // along the bottom, where similarity curves seldom are
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        label->setText(QStringLiteral("stage %1").arg(staged->stageOf(l)));
        label->setFont(style.font(style.tickFontPx - 1));
        label->setColor(style.mutedText);
    }
}

Qt::PenStyle penStyleFor(int index)
{
    static const Qt::PenStyle styles[] = { Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine };
    return styles[size_t(index) % 4];
}

QString tapDescription(Tap tap)
{
    switch (tap) {
    case Tap::Block:
        return QStringLiteral("block outputs X\u2097");
    case Tap::Attn:
        return QStringLiteral("attention branches U\u2097");
    case Tap::Residual:
        return QStringLiteral("residual sums R\u2097");
    }
    return {};
}

QString tapSymbol(Tap tap)
{
    switch (tap) {
    case Tap::Block:
        return QStringLiteral("X\u2097");
    case Tap::Attn:
        return QStringLiteral("U\u2097");
    case Tap::Residual:
        return QStringLiteral("R\u2097");
    }
    return {};
}

QString tapName(Tap tap) { return QString::fromLatin1(toString(tap)); }

QString tokenSetName(TokenSet set)
{
    return set == TokenSet::All ? QStringLiteral("all tokens") : QStringLiteral("patch tokens");
}

QString fromStd(const std::string& s) { return QString::fromStdString(s); }

QString describeModels(const std::vector<AnalysisSummary>& series)
{
    QStringList models;
    for (const auto& s : series) {
        const QString m = fromStd(s.model.empty() ? s.label : s.model);
        if (!m.isEmpty() && !models.contains(m))
            models << m;
    }
    return models.join(QStringLiteral(" vs "));
}

QString describeImages(const std::vector<AnalysisSummary>& series)
{
    QStringList counts;
    for (const auto& s : series) {
        const QString c = QLocale::c().toString(qlonglong(s.images)).replace(QLatin1Char(','), QChar(0x2009));
        if (!counts.contains(c))
            counts << c;
    }
    if (counts.isEmpty())
        return {};
    const bool one = counts.size() == 1 && counts.front() == QLatin1String("1");
    return counts.join(QStringLiteral(" / ")) + (one ? QStringLiteral(" image") : QStringLiteral(" images"));
}

QString describeOptions(const std::vector<AnalysisSummary>& series)
{
    QStringList options;
    for (const auto& s : series) {
        const QString o = fromStd(s.options);
        if (!o.isEmpty() && !options.contains(o))
            options << o;
    }
    return options.join(QStringLiteral("; "));
}

QString perturbationsNotIn(const QStringList& perturbations, const QString& options)
{
    QStringList missing;
    for (const QString& p : perturbations) {
        if (!options.contains(p))
            missing << p;
    }
    return missing.join(QStringLiteral(", "));
}

QString joinProvenance(const QStringList& parts)
{
    QStringList kept;
    for (const QString& p : parts) {
        if (!p.isEmpty())
            kept << p;
    }
    return kept.join(QStringLiteral("  \u00b7  "));
}

std::vector<int> seriesColours(const std::vector<AnalysisSummary>& series)
{
    std::vector<int> colours(series.size(), -1);
    std::vector<std::string> models;
    const auto own = [](const AnalysisSummary& s) { return s.label.empty() || s.label == s.model; };
    for (size_t i = 0; i < series.size(); ++i) {
        if (!own(series[i]))
            continue;
        auto it = std::find(models.begin(), models.end(), series[i].model);
        colours[i] = int(it - models.begin());
        if (it == models.end())
            models.push_back(series[i].model);
    }
    int next = int(models.size());
    for (size_t i = 0; i < series.size(); ++i)
        if (colours[i] < 0)
            colours[i] = next++;
    return colours;
}

void addModelsAndTwoKindsLegend(QCustomPlot* plot, QCPAxisRect* rect, int row, const std::vector<AnalysisSummary>& series,
    const std::vector<int>& plotted, const QString& first, const QString& second, const PlotStyle& style)
{
    QCPLegend* legend = addLegend(plot, rect, row, style);
    const std::vector<int> colours = seriesColours(series);
    for (int i : plotted) {
        // Colour = model in the legend; the two neutral keys after them explain the line styles.
        const QColor color = style.color(colours[size_t(i)]);
        QCPGraph* key = addLine(rect, {}, {}, color, Qt::SolidLine, fromStd(series[size_t(i)].label), style);
        key->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, style.markerSize - 1));
        key->addToLegend(legend);
    }
    QCPLegend* keys = addKeyLegend(plot, legend, style);
    addStyleKey(rect, keys, first, penStyleFor(0), style)
        ->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, style.neutral, style.neutral, style.markerSize - 1));
    addStyleKey(rect, keys, second, penStyleFor(1), style)
        ->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCircle, style.neutral, style.background, style.markerSize - 1));
    finishLegend(legend, 4);
    if (keys != legend)
        finishLegend(keys, 4);
}

void setLogColourScale(QCPColorScale* scale, const QCPColorGradient& gradient, double low, double high, const QString& label,
                       const PlotStyle& style)
{
    scale->setType(QCPAxis::atRight);
    scale->setGradient(gradient);
    scale->setDataScaleType(QCPAxis::stLogarithmic);
    scale->setDataRange(QCPRange(low, high));
    scale->setBarWidth(12);
    scale->setRangeDrag(false);
    scale->setRangeZoom(false);
    scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    scale->axis()->setNumberFormat(QStringLiteral("g"));
    scale->axis()->setLabel(label);
    applyStyle(scale->axis(), style);
    scale->axis()->grid()->setVisible(false);
}

void setLogColours(QCPColorMap* map, QCPColorScale* scale, const QCPColorGradient& gradient, double low, double high)
{
    map->setInterpolate(false);
    map->setTightBoundary(false);
    map->setGradient(gradient);
    map->setDataScaleType(QCPAxis::stLogarithmic);
    map->setDataRange(QCPRange(low, high));
    map->setColorScale(scale);
}

} // namespace attnscope
