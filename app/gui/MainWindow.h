#pragma once

#include "gui/AttentionControls.h"
#include "gui/HostFileDialog.h"
#include "gui/ImageSetDock.h"
#include "gui/ModelSlot.h"
#include "gui/QueryKeyDock.h"
#include "gui/WindowState.h"

#include <figures/FigurePanel.h>
#include <io/ImageListModel.h>
#include <view/AttentionTileGrid.h>
#include <view/AttentionView.h>
#include <io/ElidedLabel.h>
#include <view/QueryKeyMapView.h>
#include <worker/EngineWorker.h>

#include <view/ViewFooter.h>

#include <QMainWindow>

#include <functional>
#include <memory>

struct RunSpec;
struct Session;
class QCheckBox;
class QDockWidget;
class QComboBox;
class QLabel;
class QListView;
class QMenu;
class QProgressBar;
class QPushButton;
class QSplitter;

// The model panel's line on what the model takes: "input 3×32×32 (RGB) · resize short side to 32 (bilinear) · mean …".
QString describeModelInput(const attnscope::ModelInfo& info);

// attnscope's window: a model (and optionally a second one to compare with), a strip of images, the attention of
// a clicked patch over the image, layer and head selectors, the layers x heads tiles, and plot docks for the
// current image and for the image set. It composes widgets; the engine runs on the EngineWorker's thread, never
// on this one.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `backend`: where the engine runs (null: in this process; a RemoteBackend: on a host, docs/remote.md).
    explicit MainWindow(QWidget* parent = nullptr, std::unique_ptr<attnscope::EngineBackend> backend = nullptr);
    ~MainWindow() override;

    // Sizes and places the window within its screen's free area, frame and title bar included (placeWithin): `wanted`
    // or the room there is. Before the window is shown the frame is estimated; called again once shown, it is measured.
    void fitToScreen(const QSize& wanted);

    // A model file, folder, description .json or builtin:NAME, with the description .json to read a checkpoint with ("":
    // none, or the one beside it). A file that lacks its other half (a checkpoint no convention names, a description
    // without "weights") asks for it (chooseFile) and loads the pair.
    void openModel(const QString& path, const QString& description = {});
    void openCompareModel(const QString& path, const QString& description = {});
    // Where the window asks for a file it needs (the other half of a model): a file dialog starting in `folder` (beside
    // the half that was opened) unless a test sets one.
    using FileChooser = std::function<QString(const QString& caption, const QString& filter, const QString& folder)>;
    void setFileChooser(FileChooser chooser);
    // Loads the model (and the compared one) again at another input size (0, 0: as trained); a size that is not a
    // multiple of the patch size is refused in the status bar.
    void setInputSize(int height, int width); // compare mode: a second model side by side
    void closeCompare();
    // Files and folders (read recursively) into the strip, each file once; the first of them is selected.
    void addImages(const QStringList& paths);
    // What is dropped on the window: models, model descriptions and images. A checkpoint and a description dropped together
    // are one model (no question asked).
    void openFiles(const QStringList& paths);
    void removeImages(QList<int> rows); // the strip's Delete and "Remove"; the current image moves to a neighbour
    void clearImages(); // "Clear all": no image, every view cleared
    void selectImage(int row);
    // The view selection (WindowState.h): each changes the one state every view reads, and renders each view once.
    void setQuery(int token);
    void setLayer(int layer);
    void setHead(HeadChoice head); // a head, or a view of no single head (mean, rollout, relevance, token norms)
    void setRollout(const attnscope::RolloutOptions& rollout);
    void setRelevanceClass(int label); // the class GAE and Grad-CAM explain; -1 the predicted one
    // The view (both views in compare mode) as .png/.svg/.pdf with caption and colour bar, or its map as .csv.
    bool exportView(const QString& path);
    // The layers x heads maps of the current query (the CLI's attention_grid figure), or their data as .csv.
    bool exportTiles(const QString& path);
    // Runs the current image (and the image set, when analysed) with these variant values as well, and overlays
    // its curves on the model's own. Values equal to the model's own remove the variant.
    void runVariant(double neutrenoLambda, double boostT);
    void setPerturbation(const attnscope::Perturbation& perturbation);
    // Token similarity, head centres and SNR over every image in the strip, on the worker; cancellable.
    void analyseImageSet();
    void cancelImageSet();
    // Writes the image set's CSVs (as the CLI names them) and every figure in PNG, SVG and PDF into `dir`.
    bool exportImageSet(const QString& dir);
    // "Export all": the CLI's output folder for what is open (every image, both models, the variant), analysed in
    // the background by the CLI's own code (Report.h); exportFinished reports the outcome. On a remote engine the
    // host's attnscope-cli writes it (docs/remote.md, "Export all") and it is copied into `dir` here, or, with
    // `hostFolder`, left in that folder of the host.
    void exportAll(const QString& dir, const QString& hostFolder = QString());
    // The window on a remote engine (docs/remote.md): File -> Open images on the host... and Open model on the host...,
    // and what their dialog lists folders with (the host's list_dir, through the worker).
    void openImagesOnHost();
    void openModelOnHost();
    HostFileDialog::Lister hostLister();
    // On a remote engine (docs/remote.md): make the link again and bring the host back to what the window shows (its
    // models loaded, the image traced again, the view as it was). Any request after a drop does as much; this asks now.
    void reconnect();
    void showSetFigure(int index); // 0 token similarity, 1 SNR, 2 SNR diagnostics, 3 head centres, 4 distance
    // Head importance (docs/analyses.md section 8): whether "Analyse image set" also ablates every head, and whether
    // the tiles show the image set's result; ablating one head on the current image shows the prediction it leaves in
    // the footer (layer 0: every head restored).
    void setSetAblation(bool on);
    void setHeadImportance(bool on);
    void ablateHead(int layer, int head);
    // The "Query-key map" dock: the selected head's queries and keys over the strip's first images (up to 16), by PCA
    // or t-SNE; clicking a point selects its image and makes its token the query.
    void setQueryKeyMethod(attnscope::QueryKeyMethod method);
    attnscope::QueryKeyMapView* queryKeyView() const { return m_queryKeyDock->mapView(); }
    // The window's state (WindowState.h): the models with their descriptions, the images, the view selection, drawing,
    // variant, noise, figures and dock layout. applyState replaces what is open with it; what it names that is not
    // there or that the model has not is said (errorShown, one line with `problems` first) and the rest applied.
    // sessionOpened once its model is loaded and the state applied.
    WindowState state() const;
    void applyState(const WindowState& state, const QString& source = {}, const QStringList& problems = {});
    const ViewSelection& viewSelection() const { return m_view; }
    // Sessions (docs/sessions.md): the state saved to a file and opened again; files that moved are left out and named.
    bool saveSession(const QString& path);
    bool openSession(const QString& path);
    static QString lastSessionPath(); // written when the window closes with a model open; File -> Reopen last session

    // For tests and the status bar.
    std::shared_ptr<const attnscope::EngineModel> model() const { return m_slots[0]->model(); }
    std::shared_ptr<const attnscope::ImageTrace> current() const { return m_slots[0]->trace(); }
    std::shared_ptr<const attnscope::ImageTrace> variant() const { return m_slots[0]->variantTrace(); }
    std::shared_ptr<const attnscope::AnalysisSummary> setSummary() const { return m_slots[0]->setSummary(); }
    ModelSlot* slot(int index) const { return m_slots[index]; }
    attnscope::AttentionView* view() const { return m_views[0]; }
    attnscope::AttentionView* compareView() const { return m_views[1]; }
    attnscope::ViewFooter* footer(int index) const { return m_footers[index]; } // under view(), compareView()
    attnscope::AttentionTileGrid* tiles() const { return m_tiles; }
    attnscope::FigurePanel* imagePanel() const { return m_imagePanel; }
    attnscope::FigurePanel* setPanel() const { return m_setDock->panel(); }
    attnscope::ImageListModel* images() const { return m_images; }
    int query() const { return m_view.query; }
    int compareQuery() const;
    int layer() const { return m_view.layer; }
    HeadChoice head() const { return m_view.head; }
    QString lastError() const { return m_lastError; }
    QString shownError() const; // the status line's error, "" once what it stopped succeeded
    // What Help shows: every shortcut of the window with its action, and the versions and where the engine runs.
    QString shortcutsText() const;
    QString aboutText() const;
    bool busy() const { return m_worker->busy(); } // engine work queued or running
    quint64 forwardSets() const { return m_worker->forwardSets(); } // engine forward sets started so far

signals:
    void modelReady();
    void compareReady();
    void imageReady();
    void variantReady();
    void analysisReady();
    void setFinished(bool complete);
    void exportFinished(bool ok);
    void errorShown(const QString& message);
    void sessionOpened();
    void ablationShown();    // the footer's ablation line is up to date
    void queryKeyMapShown(); // the Query-key map dock shows the selected head's map (or why not)

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildActions();
    void buildDocks();
    void buildStatusBar(); // where the engine runs, and the last error
    QWidget* buildImageSetPanel(); // the Image set dock's controller, connected
    void connectSlot(int index);
    // Errors are state: the status line holds the last one, said once (errorShown) however many jobs one file stopped,
    // until what failed succeeds (clearError of its kind) or the user dismisses it; no box, since none needs an answer.
    enum class ErrorOf { Image, Model, Link, Other }; // Link: a remote engine's answer that did not come
    void showError(const QString& message, ErrorOf kind = ErrorOf::Other);
    void clearError(ErrorOf kind);
    void showInformation(const QString& title, const QString& text); // a window-modal box (none offscreen)
    void setViewSelection(const ViewSelection& view); // the state, then the views
    void showViewSelection(); // the controls and the slots' relevance jobs follow m_view
    void refreshMaps();
    void refreshImagePlots();
    void refreshModelInfo();
    void refreshPredictions(); // the footers under the views: the current image's input line and top classes
    QString chooseFile(const QString& caption, const QString& filter, const QString& folder);
    void askForOtherHalf(int index, const QString& path, const QString& description, int missing, const QString& message);
    void rememberModel(const QString& path, const QString& description);
    void applyPendingSession(); // once the state's model is loaded
    void refreshRecent();
    void applyPerturbation();
    QString currentPath() const;
    void refreshImageCount();
    void refreshPlaceholders(); // what each empty view asks for: a model, an image, or says the image is running
    void buildHeadDocks(QDockWidget* besideDock); // the Query-key map dock, tabbed with besideDock, and the connections
    void refreshImportance();
    void refreshAblation();    // the footer line and the crossed-out tile, for the image shown only
    void refreshQueryKeyMap(); // starts the map of the selected head when it is not the one shown or coming
    // "" or one line saying the strip mixes image sizes or grey and colour, for an image-set run to say before it starts.
    QString mixedImagesNote() const;
    QImage composedViews() const; // both views side by side (compare mode)

    std::unique_ptr<attnscope::EngineWorker> m_worker;
    ModelSlot* m_slots[2] = { nullptr, nullptr };
    attnscope::AttentionView* m_views[2] = { nullptr, nullptr };
    attnscope::ViewFooter* m_footers[2] = { nullptr, nullptr };
    QWidget* m_viewColumns[2] = { nullptr, nullptr }; // a view and its footer
    FileChooser m_fileChooser;
    std::shared_ptr<Session> m_pendingSession; // a state applied, waiting for its model
    QSplitter* m_centre = nullptr;
    ViewSelection m_view; // what every view shows: only the set* functions change it
    // What the tile grid was last rendered for: layer and head changes only move its selection.
    const attnscope::Trace* m_tilesTrace = nullptr;
    int m_tilesQuery = -1;
    QString m_lastError;
    ErrorOf m_errorKind = ErrorOf::Other; // of the error the status line shows
    quint64 m_exportJob = 0;
    RunSpec shownRunSpec() const;
    // Starts the export job (`start` posts it) and follows it: its progress in the status bar, then `finish` (an
    // error, or "") and exportFinished.
    void watchExport(const std::function<quint64()>& start, std::function<QString()> finish);
    void exportAllOnHost(const QString& dir, const QString& hostFolder);
    // The host's thumbnails of the strip's host images, asked a batch at a time (MainWindowHost.cpp).
    void askThumbnails(const QString& path);
    void sendThumbnailRequest(); // the rows asked so far, 64 a request
    QStringList m_thumbnailsWanted;

    attnscope::ImageListModel* m_images = nullptr;
    QListView* m_imageList = nullptr;
    QLabel* m_imageCount = nullptr; // "14 images" under the strip
    QLabel* m_modelInfo = nullptr;
    QLabel* m_deviceLabel = nullptr; // permanent in the status bar: where the forward and the analyses run
    attnscope::ElidedLabel* m_errorLabel = nullptr; // permanent in the status bar: the last error, until cleared
    QComboBox* m_builtin = nullptr;
    QComboBox* m_compareBuiltin = nullptr;
    AttentionControls* m_controls = nullptr;
    attnscope::AttentionTileGrid* m_tiles = nullptr;
    attnscope::FigurePanel* m_imagePanel = nullptr;
    QMenu* m_recent = nullptr;
    QMenu* m_viewMenu = nullptr;
    ImageSetDock* m_setDock = nullptr; // the Image set dock's content: its runs, progress and figures
    // Head importance and the query-key map (MainWindowHeads.cpp).
    struct ShownAblation;
    QCheckBox* m_importance = nullptr;
    std::shared_ptr<ShownAblation> m_ablation, m_pendingAblation;
    quint64 m_ablationJob = 0;
    QueryKeyDock* m_queryKeyDock = nullptr;
};
