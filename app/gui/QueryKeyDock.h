#pragma once

#include "gui/WindowState.h"

#include <view/QueryKeyMapView.h>
#include <worker/EngineWorker.h>

#include <attnscope/Model.h>
#include <attnscope/QueryKey.h>

#include <QDockWidget>

#include <functional>
#include <memory>

class QComboBox;

// The "Query-key map" dock (docs/analyses.md section 9): the selected head's queries and keys over the strip's first
// images, by PCA or t-SNE, computed on the worker while the dock shows. A controller of its own: it reads what it
// needs of the window's state through a function the window gives it, keeps its map and its job, and asks the window
// to move the query (pointPicked) rather than moving it itself.
class QueryKeyDock : public QDockWidget {
    Q_OBJECT
public:
    // What the dock reads of the window: the view selection, the model and its name, the image shown ("" none), the strip.
    struct Inputs {
        ViewSelection view;
        std::shared_ptr<const attnscope::EngineModel> model;
        QString modelName;
        QString imageShown;
        QStringList strip;
    };
    using Reader = std::function<Inputs()>;

    QueryKeyDock(attnscope::EngineWorker* worker, Reader read, QWidget* parent = nullptr);

    // Follows the window's state: the map of the selected head when it is there, asked for when it is not (while the
    // dock shows), or one line saying why there is none. Emits shown() once the dock says what it has.
    void refresh();
    void setMethod(attnscope::QueryKeyMethod method);
    attnscope::QueryKeyMapView* mapView() const { return m_view; }
    // The window is going: nothing is read from it or asked of its worker any more.
    void detach() { m_read = nullptr; }

    static constexpr int kImages = 16; // the strip's first images, as the CLI's --qk-images default

signals:
    void pointPicked(const QString& image, int token); // a point clicked: its image and token as the query
    void shown();

private:
    struct Shown;
    void start(const QString& key, const Inputs& in, int layer, int head, attnscope::QueryKeyMethod method);

    attnscope::EngineWorker* m_worker;
    Reader m_read;
    attnscope::QueryKeyMapView* m_view = nullptr;
    QComboBox* m_colouring = nullptr;
    QComboBox* m_method = nullptr;
    std::shared_ptr<Shown> m_shown, m_pending;
    quint64 m_job = 0;
};
