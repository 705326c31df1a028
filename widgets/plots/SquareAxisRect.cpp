#include "plots/SquareAxisRect.h"

#include <algorithm>

namespace attnscope {

SquareAxisRect::SquareAxisRect(QCustomPlot* parentPlot, bool setupDefaultAxes)
    : QCPAxisRect(parentPlot, setupDefaultAxes)
{
}

void SquareAxisRect::update(UpdatePhase phase)
{
    QCPAxisRect::update(phase);
    if (phase != upLayout)
        return;
    // The base class has placed mRect (outer rect minus the axis margins); shrink it to a centred square. The
    // margins stay reserved, so tick labels still fit outside the square.
    const int side = std::max(1, std::min(mRect.width(), mRect.height()));
    const QRect square(
        mRect.left() + (mRect.width() - side) / 2, mRect.top() + (mRect.height() - side) / 2, side, side);
    if (square != mRect) {
        mRect = square;
        mInsetLayout->setOuterRect(mRect);
        mInsetLayout->update(upLayout);
    }
    if (m_companion) {
        const QMargins m = m_companion->margins();
        const QRect outer = m_companion->outerRect();
        m_companion->setOuterRect(
            QRect(outer.left(), mRect.top() - m.top(), outer.width(), mRect.height() + m.top() + m.bottom()));
    }
}

} // namespace attnscope
