#pragma once

#include "gui/ModelSlot.h"
#include "gui/WindowState.h"

#include <plots/Colormap.h>
#include <attnscope/Perturbation.h>

#include <QJsonObject>
#include <QLineEdit>
#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QSpinBox;
class QTimer;

// The right-hand dock: which attention is shown (layer, head, mean or rollout), how (opacity, colour map, patch
// grid), the query, and the variant to run beside the model (NeuTRENO λ, Boost t) with the perturbation of the SNR.
// Variant and perturbation edits are reported after a short pause, so that spinning a value reruns once. It shows
// the window's state and reports the user's edits; the window, not this dock, holds the state (WindowState.h).
class AttentionControls : public QWidget {
    Q_OBJECT
public:
    explicit AttentionControls(QWidget* parent = nullptr);

    // A new model: its depth and heads, and its own variant values (what "no variant" means).
    // `pool`: the model has an attention-pool head, whose map is the layer after the last, shown as "pool". Without
    // `variants` (a Swin), NeuTRENO and Boost are disabled, saying why.
    void setModel(int depth, int heads, double trainedLambda, double trainedBoost, bool pool = false, bool variants = true);
    void setLayer(int layer);
    void setHead(HeadChoice head);
    void setClasses(const QStringList& labels); // the model's class names, for the relevance's class picker
    // The size the model runs at and the one it was trained for: the Input size field shows the former unless they agree.
    void setInputSize(int height, int width, int trainedHeight, int trainedWidth);
    void setQueryText(const QString& text);
    QString queryText() const; // the Query line as shown
    void setVariantValues(double lambda, double boost); // moves the spin boxes (reported like a user's edit)
    void setPerturbation(const attnscope::Perturbation& perturbation);
    void setRollout(const attnscope::RolloutOptions& rollout);
    void setRelevanceClass(int label); // -1: the predicted class; a class the model has not: the predicted one

    void announce(); // emits the drawing settings (restored from the last session) for the views to follow
    // How maps are drawn, for a session file: {"opacity": 0..1, "colormap": name, "grid": bool}; setDrawing applies the
    // keys it finds, as a user's edits.
    QJsonObject drawing() const;
    void setDrawing(const QJsonObject& drawing);

    int layer() const;
    HeadChoice head() const;
    std::optional<ModelSlot::Variant> variant() const; // unset when both equal the model's own
    attnscope::Perturbation perturbation() const;
    attnscope::RolloutOptions rollout() const; // head fusion and discard share of the rollout view
    int relevanceClass() const; // the class the relevance views explain; -1 the predicted one

signals:
    void layerChanged(int layer);
    void headChanged(HeadChoice head);
    void opacityChanged(double opacity);
    void colormapChanged(attnscope::Colormap colormap);
    void gridToggled(bool on);
    void variantChanged();
    void perturbationChanged();
    void rolloutChanged();
    void relevanceChanged();
    // The Input size field was edited: run the model at height x width (0, 0: as trained). Not checked against the
    // patch size here; the window does that.
    void inputSizeChanged(int height, int width);

private:
    QSpinBox* m_layer = nullptr;
    QComboBox* m_head = nullptr;
    QSlider* m_opacity = nullptr;
    QComboBox* m_colormap = nullptr;
    QCheckBox* m_grid = nullptr;
    QLabel* m_query = nullptr;
    QComboBox* m_fusion = nullptr;
    QDoubleSpinBox* m_discard = nullptr;
    QComboBox* m_class = nullptr;
    QLineEdit* m_inputSize = nullptr;
    QDoubleSpinBox* m_lambda = nullptr;
    QDoubleSpinBox* m_boost = nullptr;
    QComboBox* m_noiseKind = nullptr;
    QDoubleSpinBox* m_noiseStrength = nullptr;
    QTimer* m_variantPause = nullptr;
    QTimer* m_noisePause = nullptr;
    double m_trainedLambda = 0, m_trainedBoost = 0;
};
