#pragma once

// The window's state, one value: what is open (models, images), what the views show (query, layer, a head or a named
// view, the rollout's and the relevance's options), the variant, the noise, how maps are drawn and which figures the
// docks show. MainWindow keeps the view selection as one ViewSelection that every view reads, composes the rest from
// those who own it (the model slots, the image strip, the docks) in MainWindow::state(), and restores all of it with
// MainWindow::applyState; a session file (Session.h, docs/sessions.md) is this value written out.

#include <attnscope/Analyses.h>

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

// What the Head selector shows: one head's attention, or a view that is no single head.
enum class HeadView {
    Head,       // one head's attention (HeadChoice::head)
    Mean,       // the mean over the heads of the layer
    Rollout,    // the attention rollout up to the last layer (docs/analyses.md section 4)
    Gae,        // the class relevance of Chefer et al. (generic attention explainability)
    GradCam,    // Grad-CAM on a layer's tokens
    TokenNorms, // the norms of the layer's patch tokens, high-norm outliers outlined
};

struct HeadChoice {
    HeadView view = HeadView::Mean;
    int head = 0; // the head, for HeadView::Head only

    HeadChoice() = default;
    HeadChoice(HeadView v) : view(v) {} // NOLINT: setHead(HeadView::Rollout) reads as it says
    static HeadChoice single(int head)
    {
        HeadChoice c(HeadView::Head);
        c.head = head;
        return c;
    }
    bool isSingle() const { return view == HeadView::Head; }
    bool isRelevance() const { return view == HeadView::Gae || view == HeadView::GradCam; }
    bool operator==(const HeadChoice& o) const { return view == o.view && (view != HeadView::Head || head == o.head); }
    bool operator!=(const HeadChoice& o) const { return !(*this == o); }
};

// A session file and --head write a choice as one number (docs/sessions.md): a head 0, 1, ...; -1 the mean of heads,
// -2 rollout, -3 relevance (GAE), -4 Grad-CAM, -5 token norms. nullopt for a number below -5.
int headNumber(HeadChoice choice);
std::optional<HeadChoice> headFromNumber(int number);
// --head's spelling: a number as above, or mean, rollout, gae, gradcam, norms. nullopt for anything else.
std::optional<HeadChoice> parseHeadChoice(const QString& text);
// As --head and the exported view's CSV spell it: mean, rollout, gae, gradcam, norms, or the head's number.
QString headChoiceKey(HeadChoice choice);
// As the Head selector says it: "mean of heads", "rollout", "relevance (GAE)", "Grad-CAM", "token norms", "head 3".
QString headChoiceText(HeadChoice choice);
// The choices that are no single head, in the selector's order.
inline constexpr HeadView kNamedHeadViews[] = { HeadView::Mean, HeadView::Rollout, HeadView::Gae, HeadView::GradCam, HeadView::TokenNorms };

// What the attention views, the tiles, the Query line and the query-key map show: the window's view selection.
struct ViewSelection {
    int query = 0; // token (0 = CLS where there is one)
    int layer = 1; // 1-based; depth + 1: an attention-pool head's map
    HeadChoice head;
    attnscope::RolloutOptions rollout; // while head is Rollout
    int relevanceClass = -1;           // the class GAE and Grad-CAM explain; -1 the predicted one
};

struct ModelState {
    QString path;        // a file, folder or builtin:NAME
    QString description; // the description .json paired with it ("" for none)
    int inputHeight = 0, inputWidth = 0; // 0, 0: the size it was trained for
};

struct WindowState {
    // Where the engine ran: "" in the window's process, else the --remote endpoint ("me@gpu-07:/opt/attnscope-cli",
    // docs/remote.md); a remote session's models that are not this machine's files are the host's paths.
    QString remote;
    std::optional<ModelState> model, compare;
    QStringList images; // the strip, in order
    int selected = -1;  // row of images; -1 none
    ViewSelection view;
    std::optional<double> neutrenoLambda, boostT; // the variant; unset: none
    QString perturbation;                          // Perturbation::spec()
    QJsonObject drawing;                           // AttentionControls::drawing(): opacity, colour map, patch grid
    QString imageFigure, setFigure;                // figureFileName() of each dock's figure
    QByteArray dockLayout;                         // QMainWindow::saveState()
};
