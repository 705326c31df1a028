#pragma once

#include "gui/ModelSlot.h"

#include <figures/FigurePanel.h>

#include <QWidget>

#include <functional>

class QCheckBox;
class QProgressBar;
class QPushButton;

// The "Image set" dock's content: the run button (Cancel while it runs), whether to ablate every head too, the
// progress with the images skipped, and the figures over the image set of both models (and the variant). A controller
// of its own: it drives the model slots' image-set runs and follows their signals; what it reads of the window (the
// strip's images and, before a run, one line on their mix) comes through a function the window gives it.
class ImageSetDock : public QWidget {
    Q_OBJECT
public:
    struct Inputs {
        QStringList strip;
        QString mixedNote; // "" or one line saying the strip mixes sizes or grey and colour (said before a run)
    };
    using Reader = std::function<Inputs()>;

    ImageSetDock(ModelSlot* primary, ModelSlot* compared, Reader read, QWidget* parent = nullptr);

    void analyse(); // every image of the strip, by both models when two are open; cancellable
    void cancel();
    bool running() const;
    void setAblation(bool on); // whether a run also ablates every head (the Head ablation figure, head importance)
    void refreshPlots();       // the figures follow the slots' image-set summaries
    void showFigure(int index); // of the panel's figures, clamped
    attnscope::FigurePanel* panel() const { return m_panel; }

signals:
    void started();
    void finished(bool complete); // every run done (true) or cancelled (false)
    void message(const QString& text, int milliseconds); // for the status line

private:
    void follow(ModelSlot* slot, bool primary);

    ModelSlot* m_slots[2];
    Reader m_read;
    QPushButton* m_button = nullptr;
    QCheckBox* m_ablation = nullptr;
    QProgressBar* m_progress = nullptr;
    QStringList m_skipped; // the files that could not be read, with why
    attnscope::FigurePanel* m_panel = nullptr;
};
