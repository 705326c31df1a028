#pragma once

#include <QLabel>

namespace attnscope {

// A one-line label that never widens what holds it: a text longer than the room it is given is cut with "…" at
// the end, and the whole of it is the tooltip. A long path or error in a dock's header or the status bar must
// not push the docks or the window wider than the screen.
class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);

    void setFullText(const QString& text); // what is shown, elided to the label's width; also the tooltip
    QString fullText() const { return m_full; }
    bool isElided() const { return text() != m_full; }

    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

signals:
    void clicked();

protected:
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void elide();

    QString m_full;
};

} // namespace attnscope
