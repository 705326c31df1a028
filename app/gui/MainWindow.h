#pragma once

#include <AttentionTileGrid.h>
#include <AttentionView.h>
#include <EngineWorker.h>

#include <QMainWindow>

#include <memory>

class QComboBox;
class QCustomPlot;
class QLabel;
class QListWidget;
class QSlider;
class QSpinBox;
class QCheckBox;
class QDoubleSpinBox;
class QMenu;
class QProgressBar;
class QPushButton;

// attnscope's window: a model, a strip of images, the attention of a clicked patch over the image, layer and
// head selectors, and the token-similarity curve of the current image. It composes widgets; the engine runs on
// the EngineWorker's thread, never on this one.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openModel(const QString& path);
    void addImages(const QStringList& paths);
    void selectImage(int row);
    void setQuery(int token);
    void setLayer(int layer);
    void setHead(int head); // -1: mean over heads, -2: rollout
    bool exportView(const QString& path);
    // Reruns the current image with these variant values and overlays its curve on the model's own.
    void runVariant(double neutrenoLambda, double boostT);
    // Token similarity, head centres and SNR over every image in the strip, on the worker; cancellable.
    void analyseImageSet();
    void cancelImageSet();
    // Writes the image set's CSVs (as the CLI names them) and every figure in PNG, SVG and PDF into `dir`.
    bool exportImageSet(const QString& dir);
    void showSetFigure(int index); // 0 token similarity, 1 SNR, 2 SNR diagnostics, 3 head centres, 4 distance
    std::shared_ptr<const attnscope::AnalysisSummary> setSummary() const { return m_setSummary; }
    attnscope::AttentionTileGrid* tiles() const { return m_tiles; }
    std::shared_ptr<const attnscope::ImageTrace> variant() const { return m_variant; }

    // For tests and the status bar.
    std::shared_ptr<const attnscope::Model> model() const { return m_model; }
    std::shared_ptr<const attnscope::ImageTrace> current() const { return m_current; }
    attnscope::AttentionView* view() const { return m_view; }
    int query() const { return m_query; }
    QString lastError() const { return m_lastError; }

signals:
    void modelReady();
    void imageReady();
    void variantReady();
    void setFinished(bool complete);
    void errorShown(const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildActions();
    void buildDocks();
    void showError(const QString& message);
    void refreshMap();
    void refreshPlot();
    void refreshModelInfo();
    void rememberModel(const QString& path);
    void refreshRecent();

    attnscope::EngineWorker m_worker;
    std::shared_ptr<const attnscope::Model> m_model;
    std::shared_ptr<const attnscope::ImageTrace> m_current;
    std::shared_ptr<const attnscope::ImageTrace> m_variant;
    QString m_variantLabel;
    quint64 m_modelJob = 0, m_imageJob = 0, m_variantJob = 0, m_setJob = 0;
    std::shared_ptr<const attnscope::AnalysisSummary> m_setSummary;
    int m_query = 0, m_layer = 1, m_head = -1;
    // What the tile grid was last rendered for: layer and head changes only move its selection.
    const attnscope::Trace* m_tilesTrace = nullptr;
    int m_tilesQuery = -1;
    QString m_lastError;

    attnscope::AttentionView* m_view = nullptr;
    QListWidget* m_images = nullptr;
    QLabel* m_modelInfo = nullptr;
    QComboBox* m_builtin = nullptr;
    QSpinBox* m_layerBox = nullptr;
    QComboBox* m_headBox = nullptr;
    QSlider* m_opacity = nullptr;
    QComboBox* m_colormap = nullptr;
    QCheckBox* m_grid = nullptr;
    QLabel* m_queryLabel = nullptr;
    QCustomPlot* m_plot = nullptr;
    attnscope::AttentionTileGrid* m_tiles = nullptr;
    QDoubleSpinBox* m_lambda = nullptr;
    QDoubleSpinBox* m_boost = nullptr;
    QMenu* m_recent = nullptr;
    QCustomPlot* m_setPlot = nullptr;
    QProgressBar* m_setProgress = nullptr;
    QPushButton* m_setButton = nullptr;
    QComboBox* m_setFigure = nullptr;
};
