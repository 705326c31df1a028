#pragma once

#include <QPointer>
#include <qcustomplot.h>

namespace attnscope {

// An axis rect whose inner rect is the largest square that fits its cell, centred, so that one unit on x and on
// y have the same length on paper whatever size the figure is exported at (offset planes, N x N heatmaps).
// QCPAxis::setScaleRatio would instead change the ranges, which must stay as the builder set them.
class SquareAxisRect : public QCPAxisRect {
public:
    explicit SquareAxisRect(QCustomPlot* parentPlot, bool setupDefaultAxes = true);

    // An element laid out after this one in the same grid row (a QCPColorScale) whose inner rect gets the square's
    // top and height, so a colour bar is exactly as tall as the heatmap beside it.
    void setVerticalCompanion(QCPLayoutElement* element) { m_companion = element; }

    void update(UpdatePhase phase) override;

private:
    QPointer<QCPLayoutElement> m_companion;
};

} // namespace attnscope
